"""Known-bad (values random probes never hit, class 11): a Triton softmax whose row maximum is
floored at -1e9, a finite sentinel that keeps a row of -inf from making exp(-inf - -inf) a NaN.
Right on every random draw and on every -inf mask; a row a model masked whole with
a finite value below it (`torch.finfo(torch.float32).min`, or kgate's -5.2e33) has the
reference's answer 1/n everywhere, and here every exp(x + 1e9) underflows to 0: 0/0. kgate's
`edge-lowest` probe fills a quarter of the rows whole with such a value: `parity.edge-lowest-in0`
FAILs."""

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
    x = x - tl.maximum(tl.max(x, axis=0), -1e9)
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
