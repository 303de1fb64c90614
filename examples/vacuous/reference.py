"""A vacuous problem: the shipped inputs gate every value through an all-zero mask, so the
output is identically zero and `return zeros` matches it exactly."""

import jax
import jax.numpy as jnp

CONFIG = {"rows": 64, "cols": 256}
TINY = {"rows": 8, "cols": 128}


def create_inputs(dtype=jnp.float32):
    x = jax.random.normal(jax.random.key(42), (CONFIG["rows"], CONFIG["cols"]), dtype=dtype)
    mask = jnp.zeros((CONFIG["rows"], CONFIG["cols"]), dtype=dtype)
    return x, mask


def workload(x, mask):
    return jax.nn.relu(x) * mask
