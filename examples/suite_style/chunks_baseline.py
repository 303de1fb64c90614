"""A baseline taking a Python int its own harness marks static: a number of chunks."""

import jax
import jax.numpy as jnp

CONFIG = {"rows": 16, "cols": 256, "chunks": 4}
TINY = {"rows": 8, "cols": 128, "chunks": 2}


def create_inputs(seed=0, dtype=jnp.float32):
    x = jax.random.normal(jax.random.key(seed), (CONFIG["rows"], CONFIG["cols"]), dtype)
    return x, CONFIG["chunks"]


def workload(x, chunks):
    parts = jnp.split(x, chunks, axis=-1)  # needs a concrete Python int
    return jnp.concatenate([jnp.cumsum(p, axis=-1) for p in parts], axis=-1)
