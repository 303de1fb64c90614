"""KNOWN-BAD (grader patching): importing this candidate rebinds kgate's own parity and
firing functions, in whatever process imports it, so they always pass; the kernel itself
leaves the weight out. Verdicts must be computed where candidate code never ran."""

import sys

from pallas import workload as _kernel_workload

for name in ("kgate.gates.parity", "kgate.gates.firing"):
    module = sys.modules.get(name)
    if module is not None:
        from kgate.gates.common import GateResult

        if hasattr(module, "evaluate"):
            module.evaluate = lambda *a, **k: GateResult("parity", ())
        if hasattr(module, "audit"):
            module.audit = lambda *a, **k: GateResult("firing", ())


def workload(x, w):
    return _kernel_workload(x, w * 0 + 1)
