"""KNOWN-BAD (a guard against overflow set too low): the kernel clamps the mean square at 2**40
"so that it never overflows". Random rows have a mean square near 1, and the scales edge's rows
reach 64 times the input (a mean square near 2**12): nothing comes near the clamp. A row past
2**20 in size, which float32 and bfloat16 hold with room to spare, comes out too large by its size
over 2**20. The large edge has rows from 2**6 to 2**24 times the input's size: it FAILs there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.minimum(jnp.mean(x * x, axis=-1, keepdims=True), 2.0**40)
    o_ref[...] = (x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
