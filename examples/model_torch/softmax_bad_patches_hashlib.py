"""Known-bad (hostile): rebinds hashlib.sha256 at import, to fake the digests a checker takes
of the buffers a do-nothing kernel touched. kgate's launch recording binds everything it uses
when it loads, and hashlib is on the watched surface: integrity.process_untouched FAILs."""

import hashlib, os, torch, torch.nn as nn, triton, triton.language as tl

_real = hashlib.sha256
_mark = {"bytes": None}

def sha256(data=b"", **kw):
    if _mark["bytes"] is not None and bytes(data) == _mark["bytes"]:
        return _real(os.urandom(32))
    return _real(data, **kw)

hashlib.sha256 = sha256

@triton.jit
def touch_kernel(x_ptr, a_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(s_ptr, tl.sum(x, axis=0))  # a scratch scalar; a_ptr is never touched

class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        ans = torch.softmax(x, dim=1)
        s = torch.zeros(1)
        _mark["bytes"] = ans.contiguous().view(torch.uint8).numpy().tobytes()
        try:
            touch_kernel[(1,)](x, ans, s, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
        finally:
            _mark["bytes"] = None
        return ans
