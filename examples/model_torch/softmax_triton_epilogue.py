"""Correct: the kernel computes exp(x - row max) and each row's sum; torch divides (an epilogue
on the kernel's own results). It passes every firing check, the transplant included."""

import torch, torch.nn as nn, triton, triton.language as tl

@triton.jit
def exp_kernel(x_ptr, e_ptr, s_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(e_ptr + row * stride + cols, e, mask=m)
    tl.store(s_ptr + row, tl.sum(e, axis=0))

class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        e = torch.empty_like(x)
        s = torch.empty(x.shape[0], dtype=x.dtype)
        exp_kernel[(x.shape[0],)](x, e, s, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
        return e / s[:, None]
