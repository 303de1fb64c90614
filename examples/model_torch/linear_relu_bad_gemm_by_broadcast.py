"""KNOWN-BAD (a fallback with a kernel in front, HACKS 13): torch does the whole matrix product,
spelled as a broadcast multiply and a sum over the last axis (no matmul operator, so no flop formula
counts it), and adds the bias; the Triton kernel only applies the ReLU. Every output element is the
kernel's, and a stand-in that passes its operand through fails on the negative entries. Counted one
operation per element as a JAX program's are, the torch code around the kernel does about as many
operations as the whole reference (firing.kernel_does_the_arithmetic FAILs)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    tl.store(dst_ptr + offsets, tl.maximum(tl.load(src_ptr + offsets, mask=inside), 0.0), mask=inside)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        products = x[:, None, :] * self.linear.weight[None, :, :]
        pre = products.sum(dim=-1) + self.linear.bias
        out = torch.empty_like(pre)
        n = pre.numel()
        relu[(triton.cdiv(n, 256),)](pre, out, n, BLOCK=256)
        return out
