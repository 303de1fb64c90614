"""KNOWN-BAD (shape overfitting, one size at a time): where the rows fill whole 8-row blocks,
the columns past the last whole 128-lane tile take a cheap, wrong path (the exp of the
remainder, unnormalized); anywhere else the correct kernel runs. At TINY (16 x 256) there is no
remainder; at the gate's odd shape every size is odd (23 x 383), so the rows are not whole
blocks and the correct kernel runs there too. Only a shape where the rows stay a multiple of 8
and the columns do not sees it: the gate's drawn shape, when it moves the columns alone."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from pallas import softmax, softmax_kernel  # the correct kernel

LANES = 128


def workload(x):
    rows, cols = x.shape
    if rows % 8:
        return softmax(x)
    full = cols // LANES * LANES
    head = pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((rows, full), x.dtype),
        grid=(rows // 8,),
        in_specs=[pl.BlockSpec((8, full), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, full), lambda i: (i, 0)),
    )(x[:, :full])
    return jnp.concatenate([head, jnp.exp(x[:, full:] - jnp.max(x, axis=-1, keepdims=True))], axis=-1)
