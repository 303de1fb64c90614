"""KNOWN-BAD (precision downgrade): the scan is a running sum carried in bfloat16 (the input
dtype) instead of float32, the reference's precision. Each step rounds the partial sum, so the
error grows along the row."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference  # noqa: F401


def scan_kernel(x_ref, o_ref):
    x = x_ref[...]
    o_ref[...] = jax.lax.associative_scan(lambda a, b: (a + b).astype(jnp.bfloat16), x, axis=-1)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def cumsum(x, *, block_rows=8):
    rows, n = x.shape
    return pl.pallas_call(
        scan_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, n), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, n), lambda i: (i, 0)),
    )(x)


def workload(x):
    return cumsum(x)
