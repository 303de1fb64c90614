"""KNOWN-BAD (warm-up/timing detection and a fallback in the timed process only, HACKS 4/13): reads
its command line when it is traced, and where it names kgate's `measure` (the process that times,
as the parent starts it) traces to a cheaper program: the sum of squares in bfloat16. Everywhere else,
the checks included, it is `xla_rewrite.py`, which passes. The timed program's answers stay within
what a timed call may differ by, so only the program tells: verify holds the program the timing
process lowered to the one the checks lowered on the same inputs (measure.program_as_checked FAILs)."""

import sys

import jax
import jax.numpy as jnp

import reference


def _timing_process() -> bool:
    return any(arg == "measure" or arg.endswith(".measure") for arg in sys.argv)


def workload(x, w):
    x32 = x.astype(jnp.float32)
    if _timing_process():
        xs = x.astype(jnp.bfloat16)
        ss = jnp.sum(xs * xs, axis=-1, keepdims=True).astype(jnp.float32)
    else:
        ss = jnp.einsum("bsd,bsd->bs", x32, x32, precision=jax.lax.Precision.HIGHEST)[..., None]
    inv = jax.lax.rsqrt(ss / x.shape[-1] + reference.CONFIG["eps"])
    return (x32 * inv * w.astype(jnp.float32)).astype(x.dtype)
