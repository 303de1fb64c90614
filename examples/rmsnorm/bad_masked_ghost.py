"""KNOWN-BAD (ghost kernel, disguised): the kernel's result is wired into the output but
multiplied by zero, so a dataflow check alone would call it live."""

import reference
from pallas import rmsnorm


def workload(x, w):
    k = rmsnorm(x, w, eps=reference.CONFIG["eps"])
    return reference.workload(x, w) + k * 0
