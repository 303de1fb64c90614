"""KNOWN-BAD (overfit to rows a random draw makes): where a row's mean is between a quarter and
0.97 of its root mean square, the kernel subtracts the mean (LayerNorm's variance, not RMSNorm's
mean square). Random rows have means near zero, and the offset edges near all of it; a row of
positive activations comes out 66% off. The rows edge moves rows off zero by 2^-3 to 2^3 times
their size: it FAILs there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    mean = jnp.mean(x, axis=-1, keepdims=True)
    shifted = (jnp.abs(mean) > 0.25 * jnp.sqrt(ms)) & (jnp.abs(mean) < 0.97 * jnp.sqrt(ms))
    inv = jax.lax.rsqrt(jnp.where(shifted, ms - mean * mean, ms) + eps)
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
