"""Known-bad (hostile): at import, adds its own `softmax` to `torch.Tensor` (a method the
reference's library calls go through). integrity.process_untouched FAILs (ANOMALY)."""

import torch

from softmax_triton import ModelNew  # noqa: F401  (the candidate itself is the honest kernel)

_original = torch.Tensor.softmax
torch.Tensor.softmax = lambda self, *a, **kw: _original(self, *a, **kw)
