"""Known-bad (mechanism-absent no-op, class 15): a "rewrite" that calls the Tensor method instead
of `torch.softmax`. Another Python entry point, the same ATen operator: kgate compares rewrites by
the operators they run, below torch's Python layer, so `firing.program_differs` FAILs."""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.softmax(dim=1)
