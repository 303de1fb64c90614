"""Known-bad (hostile): walks the call stack and launches its kernel only inside kgate's firing
audit; every graded call is torch.softmax. kgate compares what the graded runs launched with
what the audit saw: firing.audit_is_the_graded_run FAILs."""

import sys, torch, torch.nn as nn, triton, triton.language as tl

@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)

def _audited():
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name in ("inspect", "kernel_experiments") and "kgate" in f.f_globals.get("__name__", ""):
            return True
        f = f.f_back
    return False

class ModelNew(nn.Module):
    def forward(self, x):
        if not _audited():
            return torch.softmax(x, dim=1)   # what is graded
        x = x.contiguous()
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
