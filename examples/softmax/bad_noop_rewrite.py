"""KNOWN-BAD (mechanism-absent no-op): "replace the per-element division with a reciprocal
multiply" -- but XLA already does exactly that to the reference, so the compiled program
is identical and nothing was changed."""

import jax.numpy as jnp


def workload(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e * (1.0 / jnp.sum(e, axis=-1, keepdims=True))
