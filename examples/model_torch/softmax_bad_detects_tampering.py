"""Known-bad (hostile): the kernel computes 2x; while its buffer holds exactly that, torch's
softmax is returned, and once anything changed the buffer (a perturbation, a stand-in), the
buffer itself. Writes taken from another probe's run are genuine kernel output, so the
detection sees nothing and the answer stays torch's: firing.kernel_carries_the_answer FAILs."""

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
        if torch.equal(k, 2.0 * x):
            return torch.softmax(x, dim=1)
        return k
