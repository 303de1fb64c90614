"""KNOWN-BAD (the kernel does one elementwise step, jnp the rest): plain jnp subtracts each
row's maximum, and after the kernel takes the exponential, sums and divides. The kernel
reads the inputs and moves every output; zeros give NaN and the input passed through is
not the softmax, so the bypass says the kernel does the work. Four fifths of the
reference's arithmetic stays outside it."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _exp_kernel(z_ref, o_ref):
    o_ref[...] = jnp.exp(z_ref[...])


def workload(x):
    rows, cols = x.shape
    z = (x - jnp.max(x, axis=-1, keepdims=True)).astype(jnp.float32)
    e = pl.pallas_call(
        _exp_kernel,
        out_shape=jax.ShapeDtypeStruct(z.shape, z.dtype),
        grid=(pl.cdiv(rows, 8),),
        in_specs=[pl.BlockSpec((8, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, cols), lambda i: (i, 0)),
    )(z)
    return (e / jnp.sum(e, axis=-1, keepdims=True)).astype(x.dtype)
