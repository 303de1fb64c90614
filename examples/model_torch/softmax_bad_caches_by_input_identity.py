"""Known-bad (output replay or caching, class 3, on an eager backend): a correct softmax that
keeps its last answer and returns it again when called with the same input tensor, unchanged
since (its identity and version counter), or the same buffer at the same version. Timed calls
reuse the inputs of their session, so every call after the first would return at once: it read
5.6x faster than torch's own softmax. kgate hands each timed call new values in new memory (and
any input it cannot scale a new tensor object, its version counter moved on): the cache never
hits, and the candidate times as what it computes."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._last = None

    def forward(self, x):
        last = self._last
        if last is not None and last[1] == x._version and (last[0] is x or last[2] == x.data_ptr()):
            return last[3]
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        out = e / e.sum(dim=1, keepdim=True)
        self._last = (x, x._version, x.data_ptr(), out)
        return out
