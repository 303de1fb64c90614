"""KNOWN-BAD (a cheap reversible step in the kernel, the scan around it): the Pallas kernel only
negates its input; `jnp.cumsum` of the negated values, negated back, is the answer. The kernel
reads the inputs, every output element moves when its result does, and neither stand-in (zeros,
the input passed through) passes parity. Against the reference's O(n^2) triangular matmul the scan
outside is a sliver of the work, so a count against the reference passes it; the candidate's own
arithmetic is two thirds outside its kernel: `firing.kernel_does_the_arithmetic` FAILs."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _negate_kernel(x_ref, o_ref):
    o_ref[...] = -x_ref[...]


def workload(x):
    rows, n = x.shape
    block = min(8, rows)  # whole rows of the array: no padded block inflates the kernel's count
    neg = pl.pallas_call(
        _negate_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block),),
        in_specs=[pl.BlockSpec((block, n), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block, n), lambda i: (i, 0)),
    )(x)
    return (-jnp.cumsum(neg.astype(jnp.float32), axis=-1)).astype(x.dtype)
