"""Known-bad: torch computes the softmax into the output buffer; the kernel then rewrites row 0
only. kgate tracks the elements each launch wrote, not whole buffers: the kernel owns 1/8 of
the output, and firing.kernel_result_matters FAILs (with kernel_carries_the_answer)."""

import torch, torch.nn as nn, triton, triton.language as tl

@triton.jit
def row_kernel(x_ptr, o_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + cols, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(o_ptr + cols, e / tl.sum(e, axis=0), mask=m)

class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.softmax(x, dim=1)
        out[0].zero_()
        row_kernel[(1,)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
