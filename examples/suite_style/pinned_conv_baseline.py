"""A baseline that pins float32 before a convolution: with float64 weights the dtypes clash."""

import jax
import jax.numpy as jnp

CONFIG = {"n": 64, "k": 5}
TINY = {"n": 32}


def create_inputs(seed=0, dtype=jnp.float32):
    k1, k2 = jax.random.split(jax.random.key(seed))
    return (jax.random.normal(k1, (1, 1, CONFIG["n"]), dtype), jax.random.normal(k2, (1, 1, CONFIG["k"]), dtype))


def workload(x, w):
    x = x.astype(jnp.float32)
    return jax.lax.conv_general_dilated(x, w, (1,), "SAME")
