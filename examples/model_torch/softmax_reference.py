"""Row softmax in the KernelBench format: `class Model`, shape globals, `get_inputs()` and
`get_init_inputs()`, loaded by kgate unchanged."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 256
dim = 1024
TINY = {"batch_size": 8, "dim": 96}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
