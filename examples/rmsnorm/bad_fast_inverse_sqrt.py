"""KNOWN-BAD (an approximation below the output's resolution): the kernel's 1/sqrt is the bit
trick (the magic constant 0x5f3759df) refined by one Newton step, good to 1.75e-3 of itself,
under half a bfloat16 ulp. Every element stays within the floor's allowance (2.5 bfloat16 ulps),
so max-abs and mean-abs pass; but one element in ten or more is not the bfloat16 rounding of the
answer, where the reference and any float32 computation miss it on none. The rounding grade
FAILs it."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def _fast_rsqrt(m):
    bits = jax.lax.bitcast_convert_type(m, jnp.int32)
    y = jax.lax.bitcast_convert_type(jnp.int32(0x5F3759DF) - (bits >> 1), jnp.float32)
    return y * (1.5 - 0.5 * m * y * y)


def _kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = (x * _fast_rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
