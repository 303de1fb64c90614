"""KNOWN-BAD (a guard against overflow set too low): the softmax written out in torch ops, its
logits clamped to +-2**20 first, "so that exp never sees an infinity". No random row, nor the
offset and scales edges', comes near it; a row of logits past 2**20 (float32 holds them with
2**100 to spare, and the reference's softmax is exact there) comes out flattened, every logit past
the clamp tied. The large edge has such rows: it FAILs there."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.clamp(-(2.0**20), 2.0**20)
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
