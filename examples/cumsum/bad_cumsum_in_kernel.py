"""KNOWN-BAD (dies on the device): the prefix sum computed inside the kernel with
`jnp.cumsum`. The TPU interpreter runs it and parity passes on a CPU, but Mosaic has no
lowering for cumsum inside a kernel: a TPU host refuses to compile it. The lowering gate
FAILs it on any machine, naming the primitive and the fix."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference  # noqa: F401


def cumsum_kernel(x_ref, o_ref):
    o_ref[...] = jnp.cumsum(x_ref[...].astype(jnp.float32), axis=-1).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def cumsum(x, *, block_rows=8):
    rows, n = x.shape
    return pl.pallas_call(
        cumsum_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, n), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, n), lambda i: (i, 0)),
    )(x)


def workload(x):
    return cumsum(x)
