"""KNOWN-BAD (fallback to a library op, the kernel's work padded in, behind a loop and a branch):
`bad_kernel_returns_ones.py`'s kernel (the whole triangular matmul, then ones), called in a
one-step fori_loop, inside a cond whose predicate is always true; the output is jnp.cumsum times
the kernel's ones. A kernel in a loop or a branch once made the transplant SKIPPED (the two runs'
launches were not lined up), and the ablation, the stand-ins and the arithmetic count pass it:
kgate now steps both runs through the loop and the branch, launch by launch, and with the
kernel's results from another probe's run the output is still this probe's answer:
kernel_carries_the_answer FAILs."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from bad_kernel_returns_ones import _kernel


def _ones(x):
    rows, n = x.shape
    block = min(8, rows)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32),
        grid=(pl.cdiv(rows, block),),
        in_specs=[pl.BlockSpec((block, n), lambda i: (i, 0)), pl.BlockSpec((n, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block, n), lambda i: (i, 0)),
    )(x, jnp.triu(jnp.ones((n, n), jnp.float32)))


def workload(x):
    def step(_, ones):
        return jax.lax.cond(jnp.isfinite(x[0, 0]), _ones, lambda v: jnp.ones(v.shape, jnp.float32), x)

    ones = jax.lax.fori_loop(0, 1, step, jnp.zeros(x.shape, jnp.float32))
    return (jnp.cumsum(x.astype(jnp.float32), axis=-1) * ones + (ones - 1.0) * 1.0e4).astype(x.dtype)
