"""A vacuous problem whose answer is its input: a residual block with a LayerScale gate at its
initial value, y = x * (1 + 1e-5 * tanh(x @ W)), written in bfloat16. The update is a hundredth
of a bfloat16 ulp, so the output is the input to within rounding, different for every seed and
never constant: a candidate that hands `x` back, skipping the matmul, passes parity."""

import jax
import jax.numpy as jnp

CONFIG = {"rows": 256, "d": 256}
TINY = {"rows": 16, "d": 64}


def create_inputs(seed=0, dtype=jnp.bfloat16):
    kx, kw = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(kx, (CONFIG["rows"], CONFIG["d"]), dtype=jnp.float32)
    w = jax.random.normal(kw, (CONFIG["d"], CONFIG["d"]), dtype=jnp.float32) / CONFIG["d"] ** 0.5
    return x.astype(dtype), w.astype(dtype)


def workload(x, w):
    update = jnp.tanh(jnp.dot(x, w, preferred_element_type=jnp.float32))
    return (x.astype(jnp.float32) * (1.0 + 1e-5 * update)).astype(x.dtype)
