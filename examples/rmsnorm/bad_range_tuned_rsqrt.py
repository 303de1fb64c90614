"""KNOWN-BAD (an approximation tuned to the range the probes' values have): the kernel's rsqrt is
a fourth-order Taylor polynomial around a mean square of 1 (no transcendental), used whenever the
row's mean square lies in (0.25, 4), and the exact rsqrt outside that band, so all-zero rows and
huge rows come out right. Random-normal rows have a mean square of 1 +- 0.1, where the polynomial
is good to a few parts in ten thousand; for rows of rms 1.5 to 2 it is off by 10% to 3x. The
scales edge (every row times its own power of two, drawn for the run) has such rows: it FAILs."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def _cheap_rsqrt(m):
    t = m - 1.0
    poly = 1.0 + t * (-0.5 + t * (0.375 + t * (-0.3125 + t * 0.2734375)))
    return jnp.where((m > 0.25) & (m < 4.0), poly, jax.lax.rsqrt(m))


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = (x * _cheap_rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


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
    return rmsnorm(x, w, block_rows=block_rows, eps=reference.CONFIG["eps"])
