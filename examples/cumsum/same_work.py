"""The same O(n^2) matmul written with a transposed lower-triangular matrix: correct, and no
faster than the reference (what a rewrite that changes nothing measures like)."""

import jax.numpy as jnp

import reference  # noqa: F401


def workload(x):
    n = x.shape[-1]
    lower = jnp.tril(jnp.ones((n, n), jnp.float32))
    return (x.astype(jnp.float32) @ lower.T).astype(x.dtype)
