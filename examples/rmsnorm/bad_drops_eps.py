"""KNOWN-BAD (edge values): the kernel leaves out the epsilon, `x * rsqrt(mean(x^2))`. Random
rows are never all zero, so every random probe passes; an all-zero row gives 0 * inf = NaN."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, w_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = (x * jax.lax.rsqrt(ms) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def workload(x, w, *, block_rows=8):
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    out = pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(pl.cdiv(flat.shape[0], block_rows),),
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(flat, w.reshape(1, d))
    return out.reshape(x.shape)
