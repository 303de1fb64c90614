"""Known-bad: the kernel only copies the input; torch computes the softmax from the copy. The
output changes when the copy is perturbed, so the kernel "matters", but with the kernel
replaced by a stand-in that passes its operand through, parity still passes: decoration,
and firing FAILs kernel_does_the_work."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        copied = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 256),)](x, copied, x.numel(), BLOCK=256)
        return torch.softmax(copied, dim=1)
