"""Known-bad (class rewrite): the reference's own call with `+ 0.0` added, so the list of torch
calls differs in text. kgate leaves out of the comparison every call that hands back one of its
inputs unchanged: the programs are the same, and firing.program_differs FAILs."""

import torch, torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x + 0.0, dim=1)
