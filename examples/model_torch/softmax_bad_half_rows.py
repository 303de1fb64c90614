"""Known-bad: the kernel computes the first half of the rows; torch's own softmax computes the
rest. The kernel's result reaches the output, but only for half of it: firing FAILs
kernel_result_matters (its share is graded, 100% unless declared with --kernel-share)."""

import torch
import torch.nn as nn
import triton

from softmax_triton import softmax_kernel


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        half = rows // 2
        out = torch.empty_like(x)
        softmax_kernel[(half,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        out[half:] = torch.softmax(x[half:], dim=1)
        return out
