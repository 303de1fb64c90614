"""Plain matmul reference for the Pallas TPU matmul that ships inside jax."""

import jax
import jax.numpy as jnp

CONFIG = {"m": 1024, "k": 1024, "n": 1024}
TINY = {"m": 256, "k": 256, "n": 256}


def create_inputs(seed=0, dtype=jnp.float32):
    kx, ky = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(kx, (CONFIG["m"], CONFIG["k"]), dtype=dtype)
    y = jax.random.normal(ky, (CONFIG["k"], CONFIG["n"]), dtype=dtype)
    return x, y


def workload(x, y):
    return jnp.dot(x, y, precision=jax.lax.Precision.HIGHEST, preferred_element_type=jnp.float32).astype(x.dtype)


def get_flops():
    return 2 * CONFIG["m"] * CONFIG["k"] * CONFIG["n"]
