"""Known-bad: subtracts the maximum of the first 32 columns and the last one, not of the row.
The fixed edge probes put their extremes at the first, last and middle places, which this
reads; the spikes probe puts one extreme per row at a place drawn for the run: parity FAILs on
edge-spikes (non-finite)."""

import torch, torch.nn as nn, triton, triton.language as tl

@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    m = tl.max(tl.where((cols < 32) | (cols == n_cols - 1), x, -float("inf")), axis=0)
    e = tl.exp(x - m)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)

class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
