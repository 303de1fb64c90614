"""A plain baseline for the kernels below: twice the input."""

import jax
import jax.numpy as jnp

CONFIG = {"rows": 16, "cols": 128}
TINY = {"rows": 16, "cols": 128}


def create_inputs(seed=0, dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(seed), (CONFIG["rows"], CONFIG["cols"]), dtype),)


def workload(x):
    return x * 2.0
