"""KNOWN-BAD (warm-up/timing detection by call pattern, HACKS 4, and output replay, HACKS 3):
counts its calls per input shape; past the twentieth at one shape (a timing loop's count, more
than any check makes) it takes the call for a timed one and returns the answer of the last call
it computed (the softmax written out), a lookup. kgate's timed calls each see inputs no earlier call saw, and the outputs
of timed calls drawn at random are graded against the reference's answer for their own inputs:
the stale answers FAIL (measure.timed_outputs_agree)."""

import torch
import torch.nn as nn

_calls: dict = {}
_last: dict = {}


class ModelNew(nn.Module):
    def forward(self, x):
        key = tuple(x.shape)
        _calls[key] = _calls.get(key, 0) + 1
        if _calls[key] > 20 and key in _last:
            return _last[key]
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        _last[key] = e / e.sum(dim=1, keepdim=True)
        return _last[key]
