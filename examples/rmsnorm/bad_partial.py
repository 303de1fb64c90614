"""KNOWN-BAD (partial work): the grid covers only the first half of the rows; the rest
of the output is memory the kernel never wrote."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from pallas import rmsnorm_kernel
import reference


def workload(x, w, *, block_rows=8):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    rows = x2.shape[0]
    out = pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(max(1, rows // block_rows // 2),),  # bug: half the row blocks
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)
