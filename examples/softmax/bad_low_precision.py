"""KNOWN-BAD (precision downgrade): the kernel exponentiates and accumulates in bfloat16,
which a loose fixed tolerance would let through."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.bfloat16)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


def workload(x, *, block_rows=8):
    rows, cols = x.shape
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
    )(x)
