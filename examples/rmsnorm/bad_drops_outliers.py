"""KNOWN-BAD (overfit to rows a random draw makes): where a row has two or more values above six
times its root mean square, the kernel leaves them out of the mean square, "robust to outlier
channels". Random rows never have two such values, and the spikes edge puts one in a row; real
activations with a few outlier channels come out several times too large. The rows edge gives
rows two to a quarter of their elements as outliers: it FAILs there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    out = x * x > 36.0 * ms
    kept = jnp.sum(jnp.where(out, 0.0, x * x), axis=-1, keepdims=True) / jnp.maximum(
        jnp.sum((~out).astype(jnp.float32), axis=-1, keepdims=True), 1.0)
    robust = jnp.sum(out.astype(jnp.float32), axis=-1, keepdims=True) >= 2.0
    inv = jax.lax.rsqrt(jnp.where(robust, kept, ms) + eps)
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
