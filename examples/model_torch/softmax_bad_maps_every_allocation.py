"""KNOWN-BAD (process state changed below Python, HACKS 7): at import it tells glibc's malloc,
through ctypes, to serve every allocation by a fresh mmap and to hand memory back to the OS on
every free. Its own calls allocate nothing the size of a row block: the softmax is written into
output buffers it keeps and reuses once the caller dropped them. The reference's calls allocate
their output, and every one of them now pays page faults on freshly mapped memory. No Python
binding, thread, signal or torch setting changes; the reference's calls in the rounds take a page
fault per page of their output, where they took none before the candidate's import
(measure.reference_undisturbed FAILs)."""

import ctypes
import weakref

import torch
import torch.nn as nn

_libc = ctypes.CDLL("libc.so.6")
_libc.mallopt(-3, 0)  # M_MMAP_THRESHOLD: every allocation by mmap
_libc.mallopt(-1, 0)  # M_TRIM_THRESHOLD: every free trims the heap

_kept: list = []  # [storage, weak reference to the tensor last handed out over it]


def _buffer(like: torch.Tensor) -> torch.Tensor:
    """A tensor over a storage of this module's (made outside torch's functions, so each call goes
    through the same ones): one the caller dropped, else a new one."""
    nbytes = like.numel() * like.element_size()
    for slot in _kept:
        if slot[0].nbytes() == nbytes and slot[1]() is None:
            break
    else:
        slot = [torch.UntypedStorage(nbytes), None]
        _kept.append(slot)
    out = torch.empty(0, dtype=like.dtype).set_(slot[0], 0, like.shape)
    slot[1] = weakref.ref(out)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        out = _buffer(x)
        torch.sub(x, x.amax(dim=1, keepdim=True), out=out)
        out.exp_()
        return out.div_(out.sum(dim=1, keepdim=True))
