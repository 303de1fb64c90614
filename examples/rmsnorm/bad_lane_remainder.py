"""KNOWN-BAD (partial work past the last whole tile): the sum of squares runs over whole 128-lane
tiles only; the columns past the last one are normalized but never counted in the mean square.
At TINY (256 columns) and at the op-point (1024) there are no such columns. At 257 columns the
one left out moves the output by about 0.2% of itself, under one bfloat16 rounding, so a probe at
size plus one passes it; the gate's odd shape has 383 columns (2 x 128 + 127): it FAILs there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks

LANES = 128


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    d = x.shape[-1]
    whole = x[:, : (d // LANES) * LANES]
    ms = jnp.sum(whole * whole, axis=-1, keepdims=True) / d
    o_ref[...] = (x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
