"""KNOWN-BAD (a cheap reversible step in the kernel, the work around it): the Pallas kernel
only negates its input; plain jnp around it computes the RMSNorm of the negated values
and negates back. The kernel is in the program, reads the inputs, reaches and moves every
output element, and neither stand-in (zeros, the input passed through) passes parity, so
the bypass says the kernel does the work. The arithmetic left outside the kernel (all of
the reference's) says it does not."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def _negate_kernel(x_ref, o_ref):
    o_ref[...] = -x_ref[...]


def workload(x, w):
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    neg = pl.pallas_call(
        _negate_kernel,
        out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(pl.cdiv(flat.shape[0], 8),),
        in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)),
    )(flat)
    x32 = -neg.astype(jnp.float32)
    ms = jnp.mean(x32 * x32, axis=-1, keepdims=True)
    y = x32 * jax.lax.rsqrt(ms + reference.CONFIG["eps"]) * w.astype(jnp.float32)
    return y.reshape(x.shape).astype(x.dtype)
