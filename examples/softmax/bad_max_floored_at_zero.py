"""Known-bad (seed or value overfitting, class 11): the Pallas softmax with its row maximum
floored at zero (a running maximum started at 0, not at the row's first value). Right wherever a
row has a positive value, as every random draw does; on rows whose values are all far below zero
exp(x - 0) underflows to 0/0. kgate's `edge-negative` probe shifts every value below zero:
`parity.edge-negative-in0` FAILs."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    e = jnp.exp(x - jnp.maximum(jnp.max(x, axis=-1, keepdims=True), 0.0))
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
