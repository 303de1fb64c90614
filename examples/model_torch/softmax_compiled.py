"""Row softmax written out and compiled with `torch.compile` (a `rewrite`: torch's compiler makes
its code). The compiler patches torch itself on its first compiled call (it wraps `torch.jit.trace`
and `nn.Module.__init__`, registers safe globals): kgate makes those patches before the candidate
is imported, where its source names the compiler, so they are not read as the candidate's."""

import torch
import torch.nn as nn


def _softmax(x):
    e = torch.exp(x - x.amax(dim=1, keepdim=True))
    return e / e.sum(dim=1, keepdim=True)


_compiled = torch.compile(_softmax, dynamic=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return _compiled(x)
