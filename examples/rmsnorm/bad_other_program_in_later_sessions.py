"""KNOWN-BAD (warm-up/timing detection at trace time, HACKS 4): the RMSNorm rewrite, until it
has been traced three times at one shape (a timing process compiles the candidate afresh for
every session; the checks trace a shape once or twice); from then on it traces to another
program, its squares summed in bfloat16 (cheaper, and wrong by more than parity allows). Only
timed sessions run that program. Every session's program is held to the first's: FAIL
(measure.candidate_program_unchanged)."""

import jax
import jax.numpy as jnp

import reference

_traces: dict = {}


def workload(x, w):
    _traces[x.shape] = _traces.get(x.shape, 0) + 1  # runs at trace time only
    if _traces[x.shape] > 3:
        xb = x.astype(jnp.bfloat16)
        ss = jnp.sum(xb * xb, axis=-1, keepdims=True).astype(jnp.float32)
    else:
        x32 = x.astype(jnp.float32)
        ss = jnp.einsum("bsd,bsd->bs", x32, x32, precision=jax.lax.Precision.HIGHEST)[..., None]
    inv = jax.lax.rsqrt(ss / x.shape[-1] + reference.CONFIG["eps"])
    return (x.astype(jnp.float32) * inv * w.astype(jnp.float32)).astype(x.dtype)
