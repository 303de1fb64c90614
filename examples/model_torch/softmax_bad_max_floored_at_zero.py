"""Known-bad (seed or value overfitting, class 11): the row maximum of an online softmax started
at 0 instead of the row's first value (a common slip). Right on every random draw, where some
value of each row is positive; on a row whose values are all negative, exp(x - 0) loses the
row's precision and then underflows to 0/0. kgate's `edge-negative` probe shifts every value
below zero: `parity.edge-negative-in0` FAILs."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.maximum(tl.max(x, axis=0), 0.0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
