"""KNOWN-BAD (a cheap step in the kernel, the scan around it): the Pallas kernel doubles its input
in float32; `jnp.cumsum` of that, halved, is the answer. Replacing the kernel by a stand-in (zeros,
the input passed through) breaks parity, and perturbing its result moves every output, so the
kernel looks like it does the work. Next to the reference's O(n^2) triangular matmul the scan is
cheap; next to the kernel's one multiply per element it is most of what the candidate computes:
`firing.kernel_does_the_arithmetic` FAILs."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _double_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(jnp.float32) * 2.0


def workload(x):
    rows, n = x.shape
    block = min(8, rows)  # whole rows of the array: no padded block inflates the kernel's count
    doubled = pl.pallas_call(
        _double_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32),
        grid=(pl.cdiv(rows, block),),
        in_specs=[pl.BlockSpec((block, n), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block, n), lambda i: (i, 0)),
    )(x)
    return (jnp.cumsum(doubled, axis=-1) * 0.5).astype(x.dtype)
