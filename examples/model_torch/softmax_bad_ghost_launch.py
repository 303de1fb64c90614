"""Known-bad: launches its Triton kernel, then returns torch's own softmax. The kernel's
result is dropped (a ghost launch): kgate's firing audit FAILs kernel_reaches_output."""

import torch
import torch.nn as nn
import triton

from softmax_triton import softmax_kernel


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        scratch = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, scratch, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return torch.softmax(x, dim=1)
