"""KNOWN-BAD (shape overfitting, at the op-point's scale): a Triton softmax that walks each row in
blocks of 256 columns and, where a row spans several blocks, stops its sums at the last whole
block: the partial block's columns are written, but left out of the row's max and sum. A row of
one block (TINY's 96 columns, the odd shape's 191, every shape drawn near TINY) and a row of whole
blocks (the op-point's 1024) are right. Under `parity` and `verify` the drawn shapes reach the
op-point's scale (a width between 512 and 1024, drawn per run): one with a partial block FAILs it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, n_summed, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    top = tl.full((BLOCK,), -float("inf"), tl.float32)
    for start in range(0, n_summed, BLOCK):
        x = tl.load(x_ptr + row * stride + start + cols, mask=start + cols < n_summed, other=-float("inf"))
        top = tl.maximum(top, x.to(tl.float32))
    m = tl.max(top, axis=0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_summed, BLOCK):
        x = tl.load(x_ptr + row * stride + start + cols, mask=start + cols < n_summed, other=-float("inf"))
        acc += tl.exp(x.to(tl.float32) - m)
    total = tl.sum(acc, axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride + start + cols, mask=mask, other=-float("inf"))
        tl.store(out_ptr + row * stride + start + cols, tl.exp(x.to(tl.float32) - m) / total, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        summed = cols if cols <= BLOCK else cols // BLOCK * BLOCK  # the bug: several blocks, whole ones only
        softmax_kernel[(rows,)](x, out, cols, summed, x.stride(0), BLOCK=BLOCK)
        return out
