"""A suite-style baseline whose create_inputs hard-codes its shapes instead of reading CONFIG."""

import jax
import jax.numpy as jnp

CONFIG = {"name": "rmsnorm_hardcoded", "batch": 16, "hidden": 256, "eps": 1e-6}


def create_inputs(dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(0), (16, 256), dtype),)


def workload(x):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + CONFIG["eps"])
