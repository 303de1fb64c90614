"""Known-bad (hostile): launches its kernel only inside kgate's firing audit (every graded call
is torch.softmax) and, there, rewrites the record kgate keeps in this process of what the graded
runs launched and returned (found through the garbage collector), so the audit's in-process
comparison sees nothing amiss. kgate holds the audit to the record each graded run sealed as it
ended, on a channel the parent reads: firing.audit_is_the_graded_run FAILs."""

import gc
import sys

import torch

from softmax_triton import ModelNew as Honest


def audited():
    """kgate's firing audit (or one of its experiments) is on the call stack."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name in ("inspect", "kernel_experiments", "transplant") and "kgate" in f.f_globals.get("__name__", ""):
            return True
        f = f.f_back
    return False


def forge_graded_record():
    """Every graded run kgate recorded in this process now names the kernel; no output is kept."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "TorchBackend" and isinstance(getattr(obj, "_graded", None), dict):
            for runs in obj._graded.values():
                runs[:] = [frozenset(run | {"softmax_kernel"}) for run in runs]
            obj._graded_outputs.clear()


class ModelNew(Honest):
    def forward(self, x):
        if not audited():
            return torch.softmax(x, dim=1)  # what is graded
        forge_graded_record()
        return super().forward(x)
