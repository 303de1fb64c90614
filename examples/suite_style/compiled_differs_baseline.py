"""Stands in for a compiler fault under the reference: only its compiled program is wrong.

(On jaxlib 0.10.2 an XLA:CPU fusion sometimes returns NaN for a softmax of a matmul against
all-zero weights; that fault is not deterministic, so this file makes the compiled program
wrong on purpose: under jit the inputs are tracers. The float64 oracle's program is right, and
so is the op-by-op run: kgate refuses only when the oracle sides with the op-by-op run.)"""

import jax
import jax.numpy as jnp

CONFIG = {"rows": 8, "cols": 128}
TINY = {"rows": 8, "cols": 128}


def create_inputs(seed=0, dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(seed), (CONFIG["rows"], CONFIG["cols"]), dtype),)


def workload(x):
    y = jax.nn.softmax(x, axis=-1)
    if isinstance(x, jax.core.Tracer) and x.dtype == jnp.float32:  # the float32 program only, as that fusion
        y = y * jnp.nan
    return y
