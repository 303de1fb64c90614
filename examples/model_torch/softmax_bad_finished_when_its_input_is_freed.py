"""KNOWN-BAD (work outside the timed window, HACKS 5/6): where a frame of kgate's timing loop calls
it, it hands back an output it has not written and hangs the softmax on its input's release
(`weakref.finalize`): kgate makes each timed call's inputs afresh and lets go of them when the call
returns, after the clock stopped, and the finalizer then writes the answer in place. Called anywhere
else it computes the softmax at once. kgate reads a sampled timed call's output the moment its
window closes, while it still holds the inputs (`timed_take`), and finds it unwritten
(measure.timed_outputs_agree FAILs)."""

import sys
import weakref

import torch
import torch.nn as nn


def _timed() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "__call__" and hasattr(frame.f_locals.get("self"), "last_draw"):
            return True
        frame = frame.f_back
    return False


def _softmax_into(x, out) -> None:
    with torch.inference_mode():  # run from a finalizer, outside the caller's inference mode
        torch.sub(x, x.amax(dim=1, keepdim=True), out=out)
        out.exp_()
        out.div_(out.sum(dim=1, keepdim=True))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        if _timed():
            kept = x.detach().clone()  # the values, for the finalizer (which may not hold x itself)
            weakref.finalize(x, _softmax_into, kept, out)
        else:
            _softmax_into(x, out)
        return out
