"""Known-bad (hostile): the kernel computes 2x; torch computes the softmax and adds (k - 2x),
exactly zero. Perturbing the kernel's result moves the output and its stand-ins break parity,
so those checks pass. kgate also runs it with every launch's writes taken from the run on
another probe: the output stays this probe's answer, not that one's, so the answer is not the
kernel's. firing.kernel_carries_the_answer FAILs."""

import torch, torch.nn as nn, triton, triton.language as tl

@triton.jit
def double_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)

class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        k = torch.empty_like(x)
        double_kernel[(triton.cdiv(x.numel(), 256),)](x, k, x.numel(), BLOCK=256)
        return torch.softmax(x, dim=1) + (k - 2.0 * x)
