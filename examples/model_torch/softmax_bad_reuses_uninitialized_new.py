"""Known-bad (allocator result reuse, another way to get memory): after its first few calls the
candidate returns `x.new(shape)`, a legacy constructor that hands out memory as the allocator
left it, never written. The gate FAILs on the edge probes and `uninitialized_memory`; in
`measure` the outputs of the timed calls disagree with the reference (`timed_outputs_agree`)
and with the candidate's first output (`outputs_stable`): an ANOMALY."""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls <= 3:
            e = (x - x.amax(dim=1, keepdim=True)).exp()
            return e / e.sum(dim=1, keepdim=True)
        return x.new(x.shape)
