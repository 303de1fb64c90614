"""KNOWN-BAD (overfit to rows a random draw makes): where a quarter to nine tenths of a row's logits
are exactly zero, the kernel takes them for padding and leaves them out (probability 0, the rest
renormalized). Random heavy-tailed logits are never zero, and the slices edge zeroes one column and
one whole row; the rows edge zeroes a drawn share of some rows: it FAILs there."""

import jax.numpy as jnp

from row_blocks import row_blocks


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    share = jnp.mean((x == 0.0).astype(jnp.float32), axis=-1, keepdims=True)
    padded = (share > 0.25) & (share < 0.9)
    x = jnp.where(padded & (x == 0.0), -jnp.inf, x)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


def workload(x, *, block_rows=8):
    return row_blocks(softmax_kernel, x, block_rows=block_rows)
