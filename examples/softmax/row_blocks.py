"""Helper of the known-bad candidates that differ from pallas.py only inside the kernel (not a
candidate): pallas.py's launch, one block of whole rows per grid step, around any row kernel."""

import functools

import jax
from jax.experimental import pallas as pl


@functools.partial(jax.jit, static_argnames=("kernel", "block_rows"))
def row_blocks(kernel, x, *, block_rows=8):
    rows, cols = x.shape
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
    )(x)
