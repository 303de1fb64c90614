"""KNOWN-BAD (timer patching through kgate's own helper): importing this candidate wraps
kgate's timed-call helper so that every reference call reports 20 ms more than it took.
The clocks are untouched; the helper is not. The process watch sees the rebinding, and
under verify the parent's own clock sees rounds that report more time than passed."""

import sys

from pallas import workload as _kernel_workload

_backend = sys.modules.get("kgate.backends.jax_backend")
if _backend is not None:
    _real_call = _backend.TimedCall.__call__

    def _inflated(self, *args):
        elapsed = _real_call(self, *args)
        return elapsed + (20_000_000 if not getattr(self, "_keep", True) else 0)

    _backend.TimedCall.__call__ = _inflated


def workload(x, w):
    return _kernel_workload(x, w)
