"""KNOWN-BAD (the kernel only moves data, the dot runs outside it): a Pallas kernel writes
the transpose of `y`, tile by tile, and plain jnp multiplies by the transpose of that.
The kernel reads the inputs and every output depends on it; zeros, or `y` passed through
(the same shape at a square op-point), fail parity. All of the reference's multiply-adds
stay outside the kernel."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _transpose_kernel(y_ref, o_ref):
    o_ref[...] = y_ref[...].T


def workload(x, y):
    k, n = y.shape
    t = 128
    yt = pl.pallas_call(
        _transpose_kernel,
        out_shape=jax.ShapeDtypeStruct((n, k), y.dtype),
        grid=(pl.cdiv(n, t), pl.cdiv(k, t)),
        in_specs=[pl.BlockSpec((t, t), lambda i, j: (j, i))],
        out_specs=pl.BlockSpec((t, t), lambda i, j: (i, j)),
    )(y)
    return jnp.dot(x, yt.T, precision=jax.lax.Precision.HIGHEST, preferred_element_type=jnp.float32).astype(x.dtype)
