"""KNOWN-BAD (overfit to inputs a random draw makes): where two or more channels stand out (past six
times the row's root mean square) in three quarters of a block's rows, the kernel leaves them out of
every row's mean square, "robust to massive activations". Random rows have no such channels, the
spikes and rows edges put their outliers at other places in every row, and the slices edge makes one
such column; a model's activations with two massive channels come out about 5x too large. The
columns edge makes the same few columns stand out in every row: it FAILs there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    standing = jnp.sum((x * x > 36.0 * ms).astype(jnp.float32), axis=0, keepdims=True)
    massive = standing >= 0.75 * x.shape[0]
    keep = jnp.where(massive, 0.0, 1.0)
    kept = jnp.sum(x * x * keep, axis=-1, keepdims=True) / jnp.maximum(jnp.sum(keep), 1.0)
    inv = jax.lax.rsqrt(jnp.where(jnp.sum(massive.astype(jnp.float32)) >= 2.0, kept, ms) + eps)
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
