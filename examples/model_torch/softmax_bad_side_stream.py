"""KNOWN-BAD on a GPU (work escapes the timed window): the correct Triton softmax, launched on a
side stream the call never waits for. CUDA events on the current stream then time only the launch,
and the device does the work after the events' window closed; its answer is right once the device
is synchronized. `kgate measure` on a GPU: ANOMALY, `integrity.stream_quiet` (the device stays busy
after the timed stream finished). Without a GPU there are no streams: it is the plain kernel."""

import torch
import torch.nn as nn
import triton

from softmax_triton import softmax_kernel

_SIDE = torch.cuda.Stream() if torch.cuda.is_available() else None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        if _SIDE is None:
            softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
            return out
        _SIDE.wait_stream(torch.cuda.current_stream())  # the inputs are ready; the caller never waits back
        with torch.cuda.stream(_SIDE):
            softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
