"""KNOWN-BAD (mechanism-absent no-op, HACKS 15): writes the softmax out in full (a row max, an exp,
a sum, a division), then returns `torch.softmax` of the input, as the reference does; the
written-out answer is kept in a module global and never returned. Every operator of a real rewrite
runs, so the calls recorded differ from the reference's; followed back from the output, only the
reference's operator reaches it (firing.program_differs FAILs)."""

import torch
import torch.nn as nn

_shown: list = []


class ModelNew(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        _shown[:] = [e / e.sum(dim=1, keepdim=True)]
        return torch.softmax(x, dim=1)
