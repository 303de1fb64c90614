"""KNOWN-BAD (NaN on a boundary row): an off-by-one padding mask treats the last real row
as padding and gives it 0/0, so exactly one boundary row of the output is NaN."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def kernel(x_ref, w_ref, o_ref, *, eps, rows, block_rows):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    row = pl.program_id(0) * block_rows + jax.lax.broadcasted_iota(jnp.int32, ms.shape, 0)
    valid = row < rows - 1  # bug: should be `row < rows`
    inv = jnp.where(valid, jax.lax.rsqrt(ms + eps), jnp.zeros_like(ms) / jnp.zeros_like(ms))
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    rows = x2.shape[0]
    out = pl.pallas_call(
        functools.partial(kernel, eps=reference.CONFIG["eps"], rows=rows, block_rows=block_rows),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)
