"""Correct: a row softmax in Triton that keeps a per-row statistics workspace (max, sum) it
allocates on its first call and grows for a larger batch, as kernels with scratch buffers do. Its
first call in a process runs one torch call more than the others: kgate digests a candidate's
program after a first call, in the checks and in the timing process alike, so this is one program
(measure.program_as_checked and candidate_program_unchanged PASS)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, ws_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    s = tl.sum(e, axis=0)
    tl.store(ws_ptr + 2 * row, m)
    tl.store(ws_ptr + 2 * row + 1, s)
    tl.store(out_ptr + row * stride + cols, e / s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ws = None

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        if self._ws is None or self._ws.numel() < 2 * rows:
            self._ws = torch.empty(2 * rows, dtype=torch.float32, device=x.device)
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, self._ws, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
