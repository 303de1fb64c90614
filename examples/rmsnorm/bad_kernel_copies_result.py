"""KNOWN-BAD (kernel present, work elsewhere): the answer is computed with plain jnp outside
the kernel, and the Pallas kernel only copies it to the output. The kernel is in the
program, its result reaches the output, and perturbing it moves every element; only
replacing the kernel with one that passes its operand through shows it does no work."""

import jax
from jax.experimental import pallas as pl

import reference


def _copy_kernel(y_ref, o_ref):
    o_ref[...] = y_ref[...]


def workload(x, w):
    y = reference.workload(x, w)
    d = y.shape[-1]
    flat = y.reshape(-1, d)
    out = pl.pallas_call(
        _copy_kernel,
        out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(pl.cdiv(flat.shape[0], 8),),
        in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)),
    )(flat)
    return out.reshape(y.shape)
