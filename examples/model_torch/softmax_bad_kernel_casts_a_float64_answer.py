"""KNOWN-BAD (a fallback with a kernel in front, HACKS 13): torch computes the softmax in float64;
the Triton kernel only rounds it to the output's dtype. The kernel writes every element and a
stand-in that passes its float64 operand through has the wrong dtype, but the answer was computed
around it: the torch code outside the kernel does as many operations as the whole reference
(firing.kernel_does_the_arithmetic FAILs)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def round_down(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    value = tl.load(src_ptr + offsets, mask=inside)
    tl.store(dst_ptr + offsets, value.to(dst_ptr.dtype.element_ty), mask=inside)


class ModelNew(nn.Module):
    def forward(self, x):
        wide = torch.softmax(x.to(torch.float64), dim=1)
        out = torch.empty_like(x)
        n = wide.numel()
        round_down[(triton.cdiv(n, 256),)](wide, out, n, BLOCK=256)
        return out
