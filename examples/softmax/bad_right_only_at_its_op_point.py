"""KNOWN-BAD (right only at the op-point it is checked at): it notes the shape of the op-point
in force when it is imported (CONFIG with any `--set`) and computes the row softmax there (the
row sums as a matrix-vector product, as `xla_rewrite.py` does); at any other shape it normalises
each row by the sum over its first 128 columns only, a shortcut that is wrong wherever a row is
longer. `kgate parity` and `verify` check the op-point's shape, so every seed and edge probe
there passes; the probes at shapes moved from TINY (the odd shape and the two drawn for the
run) FAIL it."""

import jax
import jax.numpy as jnp

import reference

SEEN = (reference.CONFIG["rows"], reference.CONFIG["cols"])  # the op-point at import


def workload(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    if x.shape == SEEN:
        ones = jnp.ones((x.shape[-1], 1), dtype=x.dtype)
        return e / jnp.dot(e, ones, precision=jax.lax.Precision.HIGHEST)
    return e / jnp.sum(e[:, :128], axis=-1, keepdims=True)
