"""KNOWN-BAD (small answers thresholded away): the kernel's "fast exp" is zero below -23, so every
probability under about 1e-10 comes out exactly 0 (its logarithm -inf, where the answer is -25 to
-60). Each such error is far under the allowance scaled to its size (never finer than 1/256 of the
floor at the largest output), so the error grades passed it; the vanishing grade counts the
elements the reference resolves that the candidate returns as zero: 12% to 20% of a seed's. It FAILs."""

import jax.numpy as jnp

from row_blocks import row_blocks


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    z = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.where(z < -23.0, 0.0, jnp.exp(z))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


def workload(x, *, block_rows=8):
    return row_blocks(softmax_kernel, x, block_rows=block_rows)
