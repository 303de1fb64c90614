"""KNOWN-BAD (partial work via stale scratch): the last grid step stages its rows through
scratch memory but never writes the final row of it, so the last output row is whatever
the scratch held before (another block's row, or uninitialized memory)."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

import reference


def kernel(x_ref, w_ref, o_ref, s_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    y = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w_ref[...].astype(jnp.float32)
    last = pl.program_id(0) == pl.num_programs(0) - 1

    @pl.when(last)
    def _():
        s_ref[:-1, :] = y[:-1, :]  # bug: the boundary row is skipped

    @pl.when(jnp.logical_not(last))
    def _():
        s_ref[...] = y

    o_ref[...] = s_ref[...].astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    out = pl.pallas_call(
        functools.partial(kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(x2.shape[0] // block_rows,),
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((block_rows, d), jnp.float32)],
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)
