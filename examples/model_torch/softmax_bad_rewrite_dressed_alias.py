"""Known-bad (mechanism-absent no-op, class 15): the reference's softmax under another name
(`torch.special.softmax`, a composite of the same operator), dressed with calls that compute
nothing from the input: a buffer allocated and never used, a contiguous copy, a clone of the
answer. kgate records a composite operator as the operators it runs and leaves out views,
copies and allocations: `firing.program_differs` FAILs."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scratch = torch.empty_like(x)
        out = torch.special.softmax(x.contiguous(), 1).clone()
        del scratch
        return out
