"""KNOWN-BAD (a constant that only matters outside the probes' range): the kernel adds an epsilon of
1e-3 to the mean square, not the reference's 1e-6. On random-normal rows (mean square about 1)
that moves the output by 5e-4 of itself, under one bfloat16 rounding; an all-zero row is zero
either way, and large rows do not feel it. On a row sixteen times smaller (mean square 1/256) the
output is 12% short. The scales edge has such rows: it FAILs."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

EPS = 1e-3


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = (x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows", "eps"))
def rmsnorm(x, w, *, block_rows=8, eps=1e-6):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    rows = x2.shape[0]
    out = pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=eps),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[
            pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
            pl.BlockSpec((1, d), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)


def workload(x, w, *, block_rows=8):
    return rmsnorm(x, w, block_rows=block_rows, eps=EPS)
