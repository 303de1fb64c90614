"""KNOWN-BAD (edge values): the kernel exponentiates the logits directly, without subtracting
the row's max. Random logits rarely pass 88 (where float32's exp overflows); a row with a
large common offset comes out as inf/inf = NaN."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, o_ref):
    e = jnp.exp(x_ref[...].astype(jnp.float32))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def workload(x, *, block_rows=8):
    rows, cols = x.shape
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
    )(x)
