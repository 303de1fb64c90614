"""KNOWN-BAD (precision downgrade): the kernel accumulates the row's sum of squares in
bfloat16 instead of float32 (the reference's precision). On short rows the error hides
under a loose tolerance; across a 1024-wide row it is a few times the reference's own
error, which is what the floor's multiplier must separate."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def _kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...]
    sq = (x * x).astype(jnp.bfloat16)
    ms = jnp.mean(sq, axis=-1, keepdims=True, dtype=jnp.bfloat16).astype(jnp.float32)
    y = x.astype(jnp.float32) * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)
    o_ref[...] = y.astype(o_ref.dtype)


def workload(x, w):
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    out = pl.pallas_call(
        functools.partial(_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(pl.cdiv(flat.shape[0], 8),),
        in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)),
    )(flat, w.reshape(1, d))
    return out.reshape(x.shape)
