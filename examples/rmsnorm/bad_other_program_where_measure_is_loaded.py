"""KNOWN-BAD (warm-up/timing detection and a fallback in the timed process only, HACKS 4/13): looks,
when it is traced, for kgate's timing module among the loaded ones (a process that will time it has
imported it; a checking one has not) and there traces the reference itself, so both legs time the
same work while the rewrite's claim is recorded. Everywhere else it is `xla_rewrite.py`, which passes.
The answers agree everywhere; verify holds the program the timing process lowered to the one the
checks lowered on the same inputs (measure.program_as_checked FAILs), whatever told the processes
apart."""

import sys

import jax
import jax.numpy as jnp

import reference


def workload(x, w):
    if "kgate.verify.measure" in sys.modules:
        return reference.workload(x, w)
    x32 = x.astype(jnp.float32)
    ss = jnp.einsum("bsd,bsd->bs", x32, x32, precision=jax.lax.Precision.HIGHEST)[..., None]
    inv = jax.lax.rsqrt(ss / x.shape[-1] + reference.CONFIG["eps"])
    return (x32 * inv * w.astype(jnp.float32)).astype(x.dtype)
