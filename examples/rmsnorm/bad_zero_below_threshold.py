"""KNOWN-BAD (a threshold the reference does not have): the kernel writes zeros for a row whose
mean square is below 1e-8, "to avoid dividing by nothing", where the reference writes
x / sqrt(mean square + 1e-6), about a thousand times x. An all-zero row is zero either way, and no
random row nor any row of the scales edge comes near 1e-8 (their mean squares stay above 1/256):
the gate passed it before the small edge, whose rows reach mean squares of 2**-48. It FAILs."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    inv = jnp.where(ms < 1e-8, 0.0, jax.lax.rsqrt(ms + eps))
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
