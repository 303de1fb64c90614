"""Row softmax in plain torch ops, from a module that imports `torch._dynamo` (as libraries built
on torch's compiler do). That import rebinds parts of torch (`torch.manual_seed`, the safe globals
of `torch.load`); kgate imports the framework modules a candidate names before its snapshot, so
that is torch's doing, not the candidate's."""

import torch
import torch._dynamo  # noqa: F401
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
