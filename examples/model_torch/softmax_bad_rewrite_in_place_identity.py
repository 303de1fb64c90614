"""KNOWN-BAD (mechanism-absent no-op, HACKS 15): `torch.softmax`, as the reference calls it, then an
in-place clamp at zero, which changes nothing on a softmax's values. An in-place call hands back the
tensor it was given, so compared with that tensor after the call it looks like work; kgate compares
it with a copy taken before the call: it handed back what it was given, and computes nothing
(firing.program_differs FAILs)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1).clamp_(min=0.0)
