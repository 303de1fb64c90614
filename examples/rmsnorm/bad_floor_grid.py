"""KNOWN-BAD (partial work at shapes that are not tile multiples): the grid is
rows // block_rows, not its ceiling. At TINY (16 rows, blocks of 8) every row is computed
and the gate's seeds all pass; at the gate's odd shape (2 x 23 = 46 rows) the last 6 rows are
never written. Only a probe at an odd shape sees it: the gate's odd-shape probe FAILs it."""

import functools

import jax
from jax.experimental import pallas as pl

import reference
from pallas import rmsnorm_kernel  # the correct kernel: only the grid below is wrong


@functools.partial(jax.jit, static_argnames=("block_rows", "eps"))
def rmsnorm(x, w, *, block_rows=8, eps=1e-6):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    rows = x2.shape[0]
    out = pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=eps),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(rows // block_rows,),  # the bug: a partial last block is dropped
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)


def workload(x, w):
    return rmsnorm(x, w, eps=reference.CONFIG["eps"])
