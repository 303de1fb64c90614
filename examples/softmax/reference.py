"""Row softmax reference, float32 (KernelBench-style problem module with a `seed` parameter)."""

import jax
import jax.numpy as jnp

CONFIG = {"rows": 4096, "cols": 2048}
TINY = {"rows": 16, "cols": 256}


def create_inputs(seed=0, dtype=jnp.float32):
    k1, k2 = jax.random.split(jax.random.key(seed))
    # Heavy-tailed logits: a few large values make the max-subtraction matter.
    x = jax.random.t(k1, 3.0, (CONFIG["rows"], CONFIG["cols"])) * 2.0
    return (x.astype(dtype),)


def workload(x):
    z = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(z)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def get_flops():
    return 4 * CONFIG["rows"] * CONFIG["cols"]


def get_bytes():
    return 2 * 4 * CONFIG["rows"] * CONFIG["cols"]
