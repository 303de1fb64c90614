"""A baseline that declares it must run eagerly: it branches on a value in Python."""

import jax
import jax.numpy as jnp

CONFIG = {"n": 256}
TINY = {"n": 128}
_skip_jit = True


def create_inputs(seed=0, dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(seed), (CONFIG["n"],), dtype),)


def workload(x):
    if float(jnp.max(jnp.abs(x))) == 0.0:  # data-dependent Python control flow: cannot be jitted
        return x
    return jnp.cumsum(x)
