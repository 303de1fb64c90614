"""KNOWN-BAD (mechanism-absent no-op, HACKS 15): the reference's own ATen softmax, called through its
`out=` overload into a buffer it allocates, beside a multiply on the input's first row whose result
is thrown away. The out= call returns the tensor it was handed, which an identity test would take
for a copy, and the multiply makes the recorded calls differ. kgate records each call by the
tensors it reads, not one it only writes, and follows the output back through the storages each
call reads and writes: what reaches the output is the reference's one operator
(firing.program_differs FAILs)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        torch._softmax(x, 1, False, out=out)
        _ = x[:1] * 2.0  # "the rewrite": nothing of it reaches the output
        return out
