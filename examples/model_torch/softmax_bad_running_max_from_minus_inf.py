"""KNOWN-BAD (values random probes never hit, HACKS 11): the row softmax in blocks of 64
columns, a running maximum and sum carried from block to block, started at -inf with no guard.
A row whose leading block is all -inf (as a mask leaves it) rescales by exp(-inf - -inf), a NaN,
where torch's softmax is finite. kgate's `edge-masked` probe masks leading spans of every
power-of-two size (64 among them): FAIL there alone."""

import torch
import torch.nn as nn

BLOCK = 64


class ModelNew(nn.Module):
    def forward(self, x):
        rows = x.shape[0]
        m = torch.full((rows, 1), -float("inf"), dtype=x.dtype)
        total = torch.zeros((rows, 1), dtype=x.dtype)
        for start in range(0, x.shape[1], BLOCK):
            block = x[:, start:start + BLOCK]
            new_m = torch.maximum(m, block.amax(dim=1, keepdim=True))
            total = total * torch.exp(m - new_m) + torch.exp(block - new_m).sum(dim=1, keepdim=True)
            m = new_m
        return torch.exp(x - m) / total
