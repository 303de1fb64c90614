"""KNOWN-BAD (reference sabotage): importing this candidate wraps the reference's workload
in extra work, so a harness that looked the reference up after the import would time a
slower reference and report an inflated speedup."""

import jax
import jax.numpy as jnp

import reference
from aa_copy import workload  # noqa: F401

_original = reference.workload


def _slowed(x, w):
    out = _original(x, w)
    junk = jax.lax.fori_loop(0, 16, lambda i, acc: jnp.tanh(acc * 1.0001 + 0.5), x.astype(jnp.float32))
    return (out.astype(jnp.float32) + jnp.minimum(jnp.abs(junk), 0.0)).astype(out.dtype)


reference.workload = _slowed
