"""KNOWN-BAD (output left unwritten at the real shape): blocks of 24 rows, or the whole
array when it has fewer, and a grid of rows // block. At TINY (16 rows) one block is the
whole array and every seed passes; at the op-point (2048 rows) 85 blocks cover 2040 rows and
the last 8 are never written: on a device they hold whatever the memory held. Static coverage
at the op-point FAILs it without running the kernel there (the gate's odd shape, 34 rows,
happens to leave rows unwritten too)."""

import functools

import jax
from jax.experimental import pallas as pl

import reference
from pallas import rmsnorm_kernel  # the correct kernel: only the grid below is wrong


def workload(x, w):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    rows = x2.shape[0]
    block = min(rows, 24)
    out = pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(rows // block,),  # the bug: a partial last block is dropped
        in_specs=[pl.BlockSpec((block, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block, d), lambda i: (i, 0)),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)
