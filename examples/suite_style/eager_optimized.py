"""The same sum, jitted (the branch is not needed: the cumsum of zeros is zeros)."""

import jax.numpy as jnp


def workload(x):
    return jnp.cumsum(x)
