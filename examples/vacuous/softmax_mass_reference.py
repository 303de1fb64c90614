"""A vacuous problem whose answer is one value: the total mass of each row's softmax. Every row
sums to one, so the output is 1.0 to within the reference's rounding, whatever the inputs."""

import jax
import jax.numpy as jnp

CONFIG = {"rows": 256, "cols": 1024}
TINY = {"rows": 16, "cols": 128}


def create_inputs(seed=0, dtype=jnp.float32):
    return (3.0 * jax.random.normal(jax.random.key(seed), (CONFIG["rows"], CONFIG["cols"]), dtype=dtype),)


def workload(x):
    return jnp.sum(jax.nn.softmax(x, axis=-1), axis=-1)
