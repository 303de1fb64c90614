"""KNOWN-BAD (a guard against overflow set too low): the kernel clamps its logits to +-2**20
before the softmax, "so that exp never sees an infinity". Random logits, the offset edge's (64
times the largest) and the scales edge's rows never reach it; a row of logits past 2**20 (which
float32 holds with 2**100 to spare, and whose softmax the reference computes exactly) comes out
flattened: every logit past the clamp ties. The large edge has such rows: it FAILs there."""

import jax.numpy as jnp

from row_blocks import row_blocks


def softmax_kernel(x_ref, o_ref):
    x = jnp.clip(x_ref[...].astype(jnp.float32), -(2.0**20), 2.0**20)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


def workload(x, *, block_rows=8):
    return row_blocks(softmax_kernel, x, block_rows=block_rows)
