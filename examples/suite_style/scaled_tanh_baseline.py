"""A suite-style baseline: descriptive labels in CONFIG and a Python scalar among the inputs."""

import jax
import jax.numpy as jnp

CONFIG = {"name": "scaled_tanh_baseline", "model": "toy-mlp", "operator": "tanh", "batch": 16, "hidden": 256}
TINY = {"batch": 8, "hidden": 128}


def create_inputs(dtype=jnp.float32):
    x = jax.random.normal(jax.random.key(0), (CONFIG["batch"], CONFIG["hidden"]), dtype)
    return x, 0.5  # a scale factor, as a plain Python float


def workload(x, scale):
    return jnp.tanh(x) * scale
