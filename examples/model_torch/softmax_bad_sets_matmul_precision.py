"""Known-bad (hostile): lowers torch's float32 matmul precision and turns on determinism for
the whole process at import, a setting every later call would run under. kgate compares
torch's process-wide settings after every candidate call: integrity.process_untouched FAILs."""

import torch

from softmax_triton import ModelNew  # noqa: F401

torch.set_float32_matmul_precision("medium")
