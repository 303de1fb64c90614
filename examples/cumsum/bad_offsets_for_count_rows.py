"""KNOWN-BAD (overfit to inputs a random draw makes): a row of whole, non-negative numbers with a zero
and a positive one among them (an attention mask, token counts) is taken for lengths and given the
exclusive prefix sum (offsets): position ids made as cumsum(mask) come out one short wherever the
mask is 1. Random rows are never whole numbers, and the offset edge's rows (whole in bfloat16) hold
no zero; the rows edge makes some rows whole numbers from 0 to 4: it FAILs there."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, upper_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    total = jnp.dot(x, upper_ref[...], preferred_element_type=jnp.float32)
    counts = (jnp.all((x >= 0) & (x == jnp.floor(x)), axis=-1, keepdims=True)
              & jnp.any(x == 0, axis=-1, keepdims=True) & jnp.any(x > 0, axis=-1, keepdims=True))
    o_ref[...] = jnp.where(counts, total - x, total).astype(o_ref.dtype)


def workload(x):
    rows, n = x.shape
    block = min(8, rows)
    upper = jnp.triu(jnp.ones((n, n), jnp.float32))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block),),
        in_specs=[pl.BlockSpec((block, n), lambda i: (i, 0)), pl.BlockSpec((n, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block, n), lambda i: (i, 0)),
    )(x, upper)
