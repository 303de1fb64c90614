"""KNOWN-BAD (warm-up/timing detection, HACKS 4): looks up its own call stack, and where a frame
of kgate's timing loop calls it (a timed call), returns a buffer it never wrote; called anywhere
else (the checks, kgate's untimed calls beside the timed ones) it computes the softmax
(written out). Its
timed calls look fast and grade right where only an untimed call is graded: kgate grades the
outputs of timed calls drawn at random, and FAILs them (measure.timed_outputs_agree,
verify's same_answer_as_checked)."""

import sys

import torch
import torch.nn as nn


def _timed() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "__call__" and type(frame.f_locals.get("self")).__name__ == "TorchTimedCall":
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def forward(self, x):
        if _timed():
            return torch.empty_like(x)
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
