"""KNOWN-BAD (shape overfitting): the kernel normalizes over the columns that fill whole
128-lane tiles and leaves the remainder to a cheap, wrong path (the exp of the remainder,
unnormalized). At TINY (256 columns) there is no remainder and every probe passes; at the gate's
odd shape (383 columns) the rows no longer sum to one. The gate's odd-shape probe FAILs it."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from pallas import softmax_kernel  # the correct kernel

LANES = 128


def workload(x):
    rows, cols = x.shape
    full = cols // LANES * LANES
    head = pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((rows, full), x.dtype),
        grid=(pl.cdiv(rows, 8),),
        in_specs=[pl.BlockSpec((8, full), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, full), lambda i: (i, 0)),
    )(x[:, :full])
    return jnp.concatenate([head, jnp.exp(x[:, full:] - jnp.max(x, axis=-1, keepdims=True))], axis=-1)
