"""KNOWN-BAD (shape overfitting, at the op-point's scale): the kernel sums each row in tiles of
512 columns, and where a row spans several tiles it leaves the partial last tile out of the
denominator. A row of one tile (TINY's 256 columns, the odd shape's 383, every shape drawn near
TINY) and a row of whole tiles (the op-point's 2048) are right. Under `parity` and `verify` the
drawn shapes reach the op-point's scale (a width between 1024 and 2048 columns, drawn per run):
one there with a partial tile FAILs it."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TILE = 512


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    cols = x.shape[-1]
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    # the bug: with several tiles, only the whole ones are summed
    summed = cols if cols <= TILE else cols // TILE * TILE
    lane = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)
    total = jnp.sum(jnp.where(lane < summed, e, 0.0), axis=-1, keepdims=True)
    o_ref[...] = (e / total).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def workload(x, *, block_rows=8):
    rows, cols = x.shape
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
    )(x)
