"""Known-bad (allocator result reuse): the answer is computed on the first call with each input
buffer; after that, the output is a buffer from `torch.empty_like` (bound at import, before any
kgate code could replace it) that is never written. The allocator tends to hand back the block
the last answer was freed from, which still holds a right answer for the same input. The gate
FAILs `uninitialized_memory` (the output differs between NaN-filled and zero-filled buffers),
and in `measure` the timed calls' outputs differ from the first (`outputs_stable`): an ANOMALY."""

import torch
import torch.nn as nn

_empty_like = torch.empty_like


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = set()

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key not in self.seen:
            self.seen.add(key)
            e = torch.exp(x - x.amax(dim=1, keepdim=True))
            return e / e.sum(dim=1, keepdim=True)
        return _empty_like(x)
