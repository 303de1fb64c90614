"""KNOWN-BAD (fallback to a library op, the kernel's work padded in): the kernel does the whole
triangular matmul, then returns it times zero plus one; the output is jnp.cumsum times the kernel's
ones plus (ones - 1) x 1e4. The kernel reads the input, perturbing its result moves every output,
both do-nothing stand-ins fail parity, and a cumsum is a sliver of the reference's arithmetic, so
the ablation, the bypass and the arithmetic count passed it. With the kernel's results taken from
the run on another probe, the output is still this probe's answer: kernel_carries_the_answer FAILs."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, upper_ref, o_ref):
    acc = jnp.dot(x_ref[...].astype(jnp.float32), upper_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = acc * 0.0 + 1.0


def workload(x):
    rows, n = x.shape
    block = min(8, rows)
    upper = jnp.triu(jnp.ones((n, n), jnp.float32))
    ones = pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32),
        grid=(pl.cdiv(rows, block),),
        in_specs=[pl.BlockSpec((block, n), lambda i: (i, 0)), pl.BlockSpec((n, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block, n), lambda i: (i, 0)),
    )(x, upper)
    return (jnp.cumsum(x.astype(jnp.float32), axis=-1) * ones + (ones - 1.0) * 1.0e4).astype(x.dtype)
