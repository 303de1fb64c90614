"""Known-bad: torch computes the softmax; the kernel, handed the input and torch's answer,
copies the answer into the output. Passing through the first operand of the output's size
(the input) breaks parity, but kgate tries each such operand in turn, and with the answer
passed through parity still holds: decoration, and firing FAILs kernel_does_the_work."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_second_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(y_ptr + offs, mask=mask) + 0.0 * tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        answer = torch.softmax(x, dim=1)
        out = torch.empty_like(x)
        copy_second_kernel[(triton.cdiv(x.numel(), 256),)](x, answer, out, x.numel(), BLOCK=256)
        return out
