"""KNOWN-BAD (harness patching after the import): on its first call this candidate replaces
`jax.lax.rsqrt` with a version 5% too large and computes with it. A grader that traced the
reference in the same process after the candidate ran would see the same wrong numbers on
both sides. The reference must come from a process that never ran candidate code."""

import jax

from pallas import workload as _kernel_workload

_real_rsqrt = jax.lax.rsqrt


def workload(x, w):
    if jax.lax.rsqrt is _real_rsqrt:
        jax.lax.rsqrt = lambda v: _real_rsqrt(v) * 1.05
    return _kernel_workload(x, w)
