"""KNOWN-BAD (a threshold the reference does not have): the kernel writes zeros for a row whose
mean square is below 1e-8, "to avoid dividing by nothing", where the reference writes
x / sqrt(mean square + 1e-6), about a thousand times x. An all-zero row is zero either way, and no
random row nor any row of the scales edge comes near 1e-8 (their mean squares stay above 1/256):
the gate passed it before the small edge, whose rows reach mean squares of 2**-48. It FAILs."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    inv = jnp.where(ms < 1e-8, 0.0, jax.lax.rsqrt(ms + eps))
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def workload(x, w, *, block_rows=8):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    out = pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(pl.cdiv(x2.shape[0], block_rows),),
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)
