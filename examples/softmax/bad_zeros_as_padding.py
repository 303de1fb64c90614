"""KNOWN-BAD (overfit to rows a random draw makes): where a quarter to nine tenths of a row's logits
are exactly zero, the kernel takes them for padding and leaves them out (probability 0, the rest
renormalized). Random heavy-tailed logits are never zero, and the slices edge zeroes one column and
one whole row; the rows edge zeroes a drawn share of some rows: it FAILs there."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    share = jnp.mean((x == 0.0).astype(jnp.float32), axis=-1, keepdims=True)
    padded = (share > 0.25) & (share < 0.9)
    x = jnp.where(padded & (x == 0.0), -jnp.inf, x)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def softmax(x, *, block_rows=8):
    rows, cols = x.shape
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
    )(x)


def workload(x, *, block_rows=8):
    return softmax(x, block_rows=block_rows)
