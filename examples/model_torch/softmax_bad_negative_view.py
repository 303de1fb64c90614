"""KNOWN-BAD (lazy outputs, HACKS 6): returns the softmax as a view with torch's negative bit
set over its negation, so the last step runs only when the values are read, in the checker.
kgate grades only plain, materialized tensors: every probe FAILs (parity.candidate_ran)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.neg(torch.softmax(x, dim=1))._neg_view()
