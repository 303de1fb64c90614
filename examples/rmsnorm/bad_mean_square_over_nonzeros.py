"""KNOWN-BAD (overfit to rows a random draw makes): where more than 5% of a row is exactly zero,
the kernel takes the mean square over the nonzero elements only, as if the zeros were padding.
Random rows hold no zeros, and the slices edge zeroes a whole slice; a row after a ReLU (half of
it zero) comes out 41% too large. The rows edge zeroes a drawn share of some rows: it FAILs there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    zero = jnp.mean((x == 0.0).astype(jnp.float32), axis=-1, keepdims=True)
    nonzero = jnp.sum(x * x, axis=-1, keepdims=True) / jnp.maximum(
        jnp.sum((x != 0.0).astype(jnp.float32), axis=-1, keepdims=True), 1.0)
    inv = jax.lax.rsqrt(jnp.where((zero > 0.05) & (zero < 1.0), nonzero, ms) + eps)
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
