"""KNOWN-BAD (edge values): the kernel rescales each row by its range before exponentiating,
`exp((x - max) / (max - min) * (max - min))`, a "stabilization" that is the identity on random
rows; on a constant row it is 0/0 = NaN."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    hi, lo = jnp.max(x, axis=-1, keepdims=True), jnp.min(x, axis=-1, keepdims=True)
    z = (x - hi) / (hi - lo) * (hi - lo)
    e = jnp.exp(z)
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
