"""KNOWN-BAD (an output range assumed): the kernel saturates its output at +-1024, "a normalized
activation never gets there". A normalized row is at most the square root of its length times the
weight, so with weights near 1 no probe a draw makes comes near it; a model whose weights are
large (a learned gain of thousands) gets a clipped answer. The large edge scales the weights too
(each floating input in turn): it FAILs there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    y = x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)
    o_ref[...] = jnp.clip(y, -1024.0, 1024.0).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
