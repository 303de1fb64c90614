"""KNOWN-BAD (overfit to inputs a random draw makes): a row already sorted in descending order (what a
top-k or top-p sampler hands a softmax) is normalised by the sum of its first 32 exponentials only,
"the tail is negligible there"; its probabilities come out up to 1.26x too large. No random row is
sorted; the rows edge sorts some rows, ascending or descending: it FAILs there."""

import jax.numpy as jnp

from row_blocks import row_blocks


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    descending = jnp.all(x[:, 1:] <= x[:, :-1], axis=-1, keepdims=True) & (x[:, :1] > x[:, -1:])
    total = jnp.where(descending, jnp.sum(e[:, :32], axis=-1, keepdims=True), jnp.sum(e, axis=-1, keepdims=True))
    o_ref[...] = (e / total).astype(o_ref.dtype)


def workload(x, *, block_rows=8):
    return row_blocks(softmax_kernel, x, block_rows=block_rows)
