"""KNOWN-BAD (the kernel does the last, cheapest step): plain jnp normalizes the rows
(squares, mean, rsqrt, scale); the Pallas kernel only multiplies by the weight. Every
firing experiment passes: the kernel reads the inputs, its result is the output, zeros
or an operand passed through fail parity (the weight matters). Three quarters of the
reference's arithmetic stays outside the kernel."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def _weight_kernel(n_ref, w_ref, o_ref):
    o_ref[...] = (n_ref[...] * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w):
    d = x.shape[-1]
    x32 = x.reshape(-1, d).astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + reference.CONFIG["eps"])
    out = pl.pallas_call(
        _weight_kernel,
        out_shape=jax.ShapeDtypeStruct(normed.shape, x.dtype),
        grid=(pl.cdiv(normed.shape[0], 8),),
        in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)),
    )(normed, w.reshape(1, d))
    return out.reshape(x.shape)
