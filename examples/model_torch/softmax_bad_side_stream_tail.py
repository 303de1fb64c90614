"""KNOWN-BAD on a GPU (work escapes the timed window): the row maxima are found on the current
stream, and the rest of the softmax (exponentials, sums, the division: most of the work) is queued
on a side stream the call never waits for. Its events time the cheap part only. `kgate measure` on
a GPU: ANOMALY, `integrity.stream_quiet`. Without a GPU it computes the same thing on one stream."""

import torch
import torch.nn as nn

_SIDE = torch.cuda.Stream() if torch.cuda.is_available() else None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        top = x.amax(dim=1, keepdim=True)
        if _SIDE is None:
            e = torch.exp(x - top)
            return e / e.sum(dim=1, keepdim=True)
        _SIDE.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(_SIDE):
            e = torch.exp(x - top)
            out = e / e.sum(dim=1, keepdim=True)
        return out
