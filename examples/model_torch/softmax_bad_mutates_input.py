"""Known-bad: writes its result into its input (in place) and returns it: the caller's
tensor is destroyed. kgate hashes the inputs before and after every call:
integrity.inputs_unchanged FAILs."""

import torch.nn as nn
import triton

from softmax_triton import softmax_kernel


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, x, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return x
