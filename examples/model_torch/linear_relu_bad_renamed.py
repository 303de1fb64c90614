"""Known-bad: the same kernel, its parameters under names of its own (`w`, `b`). kgate cannot
give it the reference's weights, and refuses, naming both sides."""

import torch
import torch.nn as nn
import triton

from linear_relu_triton import linear_relu_kernel


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.w = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.b = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        M, K = x.shape
        N = self.w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype)
        linear_relu_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](x.contiguous(), self.w, self.b, out, M, N, K,
                                                                      BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
        return out
