"""KNOWN-BAD (small answers thresholded away): probabilities under 2^-30 of the row's largest are
written as 0, "below anything a sampler would pick". As with a cut-off exp, every error is under
the allowance at its size; several percent of each seed's elements the reference resolves come
out zero. The vanishing grade FAILs it."""

import jax.numpy as jnp

from row_blocks import row_blocks


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    p = e / jnp.sum(e, axis=-1, keepdims=True)
    o_ref[...] = jnp.where(p < 2.0 ** -30 * jnp.max(p, axis=-1, keepdims=True), 0.0, p).astype(o_ref.dtype)


def workload(x, *, block_rows=8):
    return row_blocks(softmax_kernel, x, block_rows=block_rows)
