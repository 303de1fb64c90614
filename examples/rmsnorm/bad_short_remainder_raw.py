"""KNOWN-BAD (shape overfitting, by the size of the remainder): when the columns past the last
whole 128-lane tile are fewer than half a tile, they are written back unnormalized (the input
copied); with half a tile or more, the kernel is correct. TINY and the op-point have no
remainder; the gate's odd shape has 383 columns, the largest remainder there is (127), where
this kernel is right. Only a shape with a short remainder sees it: the gate's drawn shape, when
it moves the columns by a few elements (its sizes grow by amounts drawn on a log scale)."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks

LANES = 128


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    d = x.shape[-1]
    y = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w_ref[...].astype(jnp.float32)
    whole = d // LANES * LANES
    if 0 < d - whole < LANES // 2:
        y = jnp.concatenate([y[:, :whole], x[:, whole:]], axis=-1)
    o_ref[...] = y.astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
