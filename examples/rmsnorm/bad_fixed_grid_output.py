"""KNOWN-BAD (precision downgrade with an absolute error, smaller than a rounding): the kernel
rounds every output to a fixed grid of 2^-10 (a fixed-point output with ten fraction bits). That is
an eighth of a bfloat16 rounding at the row's largest outputs, so the `error` check, graded
against the floor taken there, passes it; outputs under 2^-11 come back as zero and those near
2^-8 are 20% off. Graded against the floor scaled to each element's magnitude, `relative_error`
FAILs."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks

STEP = 2.0 ** -10


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    y = x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)
    o_ref[...] = (jnp.round(y / STEP) * STEP).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
