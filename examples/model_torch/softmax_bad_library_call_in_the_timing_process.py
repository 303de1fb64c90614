"""KNOWN-BAD (warm-up/timing detection and a fallback in the timed process only, HACKS 4/13): the
written-out softmax of `softmax_rewrite.py` wherever it is checked; where its process's command line
names kgate's `measure` (read once, at import) it calls the reference's own `torch.softmax`, so the
two legs time one and the same library call while the rewrite's claim is recorded. Its answers agree
everywhere; verify holds the torch functions the timing process's call went through to those the
checks recorded on the same inputs (measure.program_as_checked FAILs)."""

import sys

import torch
import torch.nn as nn

_TIMED_HERE = "measure" in sys.argv


class ModelNew(nn.Module):
    def forward(self, x):
        if _TIMED_HERE:
            return torch.softmax(x, dim=1)
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
