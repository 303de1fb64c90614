"""Correct: the Triton row softmax of `softmax_triton.py` registered as a torch custom operator
(`torch.library.custom_op`), as serving stacks wrap their kernels. Registering it loads
`torch._dynamo`, which wraps `torch.manual_seed` in torch's own `_disable_dynamo`: kgate accepts that
wrapper, checked at every look (its code is the one torch makes, its `fn` cell the original), and
counts no torch work for the custom operator its kernel launched in."""

import torch
import torch.nn as nn
import triton

from softmax_triton import softmax_kernel


@torch.library.custom_op("kgate_example::triton_softmax", mutates_args=())
def triton_softmax(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    rows, cols = x.shape
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out


@triton_softmax.register_fake
def _(x):
    return torch.empty_like(x)


class ModelNew(nn.Module):
    def forward(self, x):
        return triton_softmax(x)
