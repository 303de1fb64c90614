"""KNOWN-BAD (precision downgrade below the output's resolution): the kernel sums the squares in
float32, as the reference does, but squares, normalizes and weights in bfloat16, rounding three
times where the reference rounds once, when it writes the output. Every element stays within
2.5 bfloat16 ulps of the answer (the floor's allowance: the reference's own error here is its one
rounding), so max-abs and mean-abs pass; but about a third of the elements are not the bfloat16
rounding of the answer, where the reference and any float32 computation miss it on none. The
rounding grade FAILs it."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def _kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.bfloat16)
    ms = jnp.mean((x * x).astype(jnp.float32), axis=-1, keepdims=True)
    inv = jax.lax.rsqrt(ms + eps).astype(jnp.bfloat16)
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.bfloat16)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
