"""Correct: the Triton row softmax registered as a torch custom operator (`torch.library.custom_op`),
as serving stacks wrap their kernels. Registering it loads `torch._dynamo`, which wraps
`torch.manual_seed` in torch's own `_disable_dynamo`: kgate accepts that wrapper, checked at every
look (its code is the one torch makes, its `fn` cell the original), and counts no torch work for
the custom operator its kernel launched in."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@torch.library.custom_op("kgate_example::triton_softmax", mutates_args=())
def triton_softmax(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    rows, cols = x.shape
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out


@triton_softmax.register_fake
def _(x):
    return torch.empty_like(x)


class ModelNew(nn.Module):
    def forward(self, x):
        return triton_softmax(x)
