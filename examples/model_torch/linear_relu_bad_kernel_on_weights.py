"""Known-bad: the Triton kernel only re-lays the weights (a transpose, computed from the
parameters alone); torch does the matmul on the inputs. The kernel's result matters, but it
never reads the inputs: firing FAILs kernel_reads_inputs."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(w_ptr, out_ptr, N, K, BLOCK: tl.constexpr):
    n = tl.program_id(0)
    ks = tl.arange(0, BLOCK)
    mask = ks < K
    tl.store(out_ptr + ks * N + n, tl.load(w_ptr + n * K + ks, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        N, K = self.linear.weight.shape
        wt = torch.empty((K, N), dtype=x.dtype)
        transpose_kernel[(N,)](self.linear.weight, wt, N, K, BLOCK=triton.next_power_of_2(K))
        return torch.relu(x @ wt + self.linear.bias)
