"""A plain reference: two matmuls and a tanh (for the hostile candidate below)."""

import jax
import jax.numpy as jnp

CONFIG = {"n": 256}
TINY = {"n": 128}


def create_inputs(seed=0, dtype=jnp.float32):
    k1, k2 = jax.random.split(jax.random.key(seed))
    return (jax.random.normal(k1, (CONFIG["n"], CONFIG["n"]), dtype),
            jax.random.normal(k2, (CONFIG["n"], CONFIG["n"]), dtype))


def workload(a, b):
    return jnp.tanh(a @ b) @ b
