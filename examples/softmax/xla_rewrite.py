"""Row softmax rewritten for XLA: the row sums as a matrix-vector product (a dot that
XLA can hand to its GEMM path) instead of a reduce."""

import jax
import jax.numpy as jnp


def workload(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    ones = jnp.ones((x.shape[-1], 1), dtype=x.dtype)
    s = jnp.dot(e, ones, precision=jax.lax.Precision.HIGHEST)
    return e / s
