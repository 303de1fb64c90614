"""Known-bad (fallback to the reference, class 13): torch's matmul does all of the GEMM's work;
the Triton kernel only adds the bias and applies the ReLU. The kernel's result is the output,
every perturbation of it shows, and a stand-in for it fails parity: every launch-based check
passes. kgate counts the heavy operators torch runs outside the kernels (matmuls, convolutions,
attention): here the reference's whole multiply-add count, so
`firing.kernel_does_the_arithmetic` FAILs (declare `--kernel-share` for an epilogue-only kernel
on purpose)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * n_cols + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(y + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = (x @ self.linear.weight.t()).contiguous()
        out = torch.empty_like(y)
        rows, cols = y.shape
        bias_relu_kernel[(rows,)](y, self.linear.bias, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out
