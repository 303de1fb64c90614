"""Known-bad: a "kernel" that silently falls back to the reference's own op whenever the row
is not a power of two, which every probe here is not. No authored launch runs: firing FAILs
kernel_present."""

import torch
import torch.nn as nn

from softmax_triton import softmax_kernel


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        if cols & (cols - 1):
            return torch.softmax(x, dim=1)
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=cols)
        return out
