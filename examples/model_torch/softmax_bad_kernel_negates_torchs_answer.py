"""KNOWN-BAD (a fallback with a kernel in front, HACKS 13): torch computes the softmax and flips its
sign; the Triton kernel's whole job is to flip it back into the output. Every output element is
written by the kernel and moves when its result is perturbed, and a stand-in that passes its operand
through gives the negated answer, so the launches alone look like work. Counted, the torch code
around the kernel does more operations than the whole reference
(firing.kernel_does_the_arithmetic FAILs)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def flip_sign(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    tl.store(dst_ptr + offsets, 0.0 - tl.load(src_ptr + offsets, mask=inside), mask=inside)


class ModelNew(nn.Module):
    def forward(self, x):
        flipped = -torch.softmax(x, dim=1)
        out = torch.empty_like(flipped)
        n = flipped.numel()
        flip_sign[(triton.cdiv(n, 256),)](flipped, out, n, BLOCK=256)
        return out
