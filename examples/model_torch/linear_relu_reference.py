"""A linear layer with bias and ReLU in the KernelBench format: the weights live in an
`nn.Linear`, built from `get_init_inputs()`; the candidate is given them by name."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 128
in_features = 256
out_features = 256
TINY = {"batch_size": 16, "in_features": 32, "out_features": 48}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
