"""Known-bad (hostile): rebinds kgate's own host copy of the outputs, so what kgate reports
would be the reference's answer (torch.softmax), not the kernel's. kgate's modules are
watched after every candidate call: integrity.process_untouched FAILs (ANOMALY)."""

import sys

import torch

from softmax_triton import ModelNew as Honest


class ModelNew(Honest):
    def forward(self, x):
        backend = sys.modules.get("kgate.backends.torch_backend")
        if backend is not None:
            original = backend.host_array
            backend.host_array = lambda t: original(torch.softmax(t, dim=-1) if t.dim() == 2 else t)
        return super().forward(x)
