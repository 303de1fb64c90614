"""Helper of the known-bad candidates that differ from pallas.py only inside the kernel (not a
candidate): pallas.py's launch, one block of whole rows per grid step, around any row kernel."""

import functools

import jax
from jax.experimental import pallas as pl


@functools.partial(jax.jit, static_argnames=("kernel", "block_rows"))
def row_blocks(kernel, x, w, *, block_rows=8):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(pl.cdiv(x2.shape[0], block_rows),),
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)
