"""A vacuous problem that is never constant: a projection, centred and scaled per row (a
LayerNorm without its affine), then summed over the features. A centred row sums to zero, so
the answer is exactly zero for every input; in float32 the output is the reference's rounding
noise around zero, different for every seed."""

import jax
import jax.numpy as jnp

CONFIG = {"rows": 256, "d_in": 128, "features": 512}
TINY = {"rows": 16, "d_in": 32, "features": 128}


def create_inputs(seed=0, dtype=jnp.float32):
    kx, kw = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(kx, (CONFIG["rows"], CONFIG["d_in"]), dtype=dtype)
    w = jax.random.normal(kw, (CONFIG["d_in"], CONFIG["features"]), dtype=dtype) / CONFIG["d_in"] ** 0.5
    return x, w


def workload(x, w):
    h = x @ w
    centred = h - jnp.mean(h, axis=-1, keepdims=True)
    scaled = centred * jax.lax.rsqrt(jnp.mean(centred * centred, axis=-1, keepdims=True) + 1e-5)
    return jnp.sum(scaled, axis=-1)
