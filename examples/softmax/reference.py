"""Row softmax reference, float32 (KernelBench-style problem module with a `seed` parameter)."""

from functools import partial

import jax
import jax.numpy as jnp

CONFIG = {"rows": 4096, "cols": 2048}
TINY = {"rows": 16, "cols": 256}


@partial(jax.jit, static_argnames="shape")
def student_t3(key, shape):
    """Student-t samples with 3 degrees of freedom, z / sqrt(chi2 / 3), the chi-squared the sum
    of three squared normals: one program per shape (`jax.random.t` samples a gamma in a loop,
    which takes seconds to compile at each new shape on a CPU)."""
    z = jax.random.normal(key, (4, *shape))
    return z[0] * jax.lax.rsqrt(jnp.mean(z[1:] * z[1:], axis=0))


def create_inputs(seed=0, dtype=jnp.float32):
    # Heavy-tailed logits: a few large values make the max-subtraction matter.
    x = student_t3(jax.random.key(seed), (CONFIG["rows"], CONFIG["cols"])) * 2.0
    return (x.astype(dtype),)


def workload(x):
    z = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(z)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def get_flops():
    return 4 * CONFIG["rows"] * CONFIG["cols"]


def get_bytes():
    return 2 * 4 * CONFIG["rows"] * CONFIG["cols"]
