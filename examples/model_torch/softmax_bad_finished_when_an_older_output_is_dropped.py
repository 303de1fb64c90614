"""KNOWN-BAD (work outside the timed window, HACKS 5/6): every output it returns carries a weakref
callback. Called where kgate's timing loop will let go of an older output of its own once the call
returns, it only allocates the output and leaves the softmax pending; the callback then runs the
pending softmax into that output when the older one is dropped: after the clock stopped, before
anything read the answer. No thread, signal or binding is involved: kgate's own bookkeeping runs the
work. kgate reads a sampled timed call's output the moment its window closes, before it lets go of
anything (`timed_take`), and finds it unwritten (measure.timed_outputs_agree FAILs)."""

import sys
import weakref

import torch
import torch.nn as nn

_pending: list = []
_hooks: set = set()


def _finish(ref) -> None:
    _hooks.discard(ref)
    while _pending:
        x, out = _pending.pop()
        with torch.inference_mode():  # the output was made in kgate's inference mode
            torch.sub(x, x.amax(dim=1, keepdim=True), out=out)
            out.exp_()
            out.div_(out.sum(dim=1, keepdim=True))


def _an_output_will_be_dropped() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "__call__" and len(getattr(owner, "_alive", ())) >= 2:
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def forward(self, x):
        if _an_output_will_be_dropped():
            out = torch.empty_like(x)
            _pending.append((x, out))
        else:
            e = torch.exp(x - x.amax(dim=1, keepdim=True))
            out = e / e.sum(dim=1, keepdim=True)
        _hooks.add(weakref.ref(out, _finish))
        return out
