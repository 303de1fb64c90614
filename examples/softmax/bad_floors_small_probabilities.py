"""KNOWN-BAD (small answers floored): the kernel's "fast exp" gives 1e-30 below -23 instead of 0, so no
probability is zero and none changes sign: every probability under about 1e-10 comes out 1e-30-ish
(its logarithm -69 where the answer is -25 to -60), each error under the allowance scaled to its
size. The vanishing grade counts the resolved elements off by more than a factor of two: it FAILs."""

import jax.numpy as jnp

from row_blocks import row_blocks


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    z = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.where(z < -23.0, 1e-30, jnp.exp(z))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


def workload(x, *, block_rows=8):
    return row_blocks(softmax_kernel, x, block_rows=block_rows)
