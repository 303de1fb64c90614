"""KNOWN-BAD (edge values, narrow accumulator): the kernel squares and sums in float16. Random
normal rows stay far below float16's largest value (65504); a row with values past 256
overflows its squares to inf, and the row comes out as zeros or NaN."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def _kernel(x_ref, w_ref, o_ref, *, eps):
    x16 = x_ref[...].astype(jnp.float16)
    ms = jnp.mean(x16 * x16, axis=-1, keepdims=True, dtype=jnp.float16).astype(jnp.float32)
    y = x_ref[...].astype(jnp.float32) * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)
    o_ref[...] = y.astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    out = pl.pallas_call(
        functools.partial(_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(pl.cdiv(flat.shape[0], block_rows),),
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(flat, w.reshape(1, d))
    return out.reshape(x.shape)
