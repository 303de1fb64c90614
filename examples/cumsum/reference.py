"""Prefix sum along the last axis, written the way a first draft often is: as a matmul with
an upper-triangular matrix of ones (O(n^2) work for an O(n) scan), float32 inside, bf16 out."""

import jax
import jax.numpy as jnp

CONFIG = {"batch": 64, "n": 1024}
TINY = {"batch": 4, "n": 256}


def create_inputs(dtype=jnp.bfloat16):
    key = jax.random.key(42)
    return (jax.random.normal(key, (CONFIG["batch"], CONFIG["n"]), dtype=dtype),)


def workload(x):
    n = x.shape[-1]
    upper = jnp.triu(jnp.ones((n, n), jnp.float32))
    return (x.astype(jnp.float32) @ upper).astype(x.dtype)


def get_flops():
    return 2 * CONFIG["batch"] * CONFIG["n"] * CONFIG["n"]
