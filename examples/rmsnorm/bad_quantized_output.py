"""KNOWN-BAD (precision downgrade with an absolute error): the kernel rounds each row's outputs to
a grid of 511 levels spanning the row's largest magnitude (a 9-bit fixed-point output with a
per-row scale). The error is at most half a step, about 0.2% of the row's largest output: under the
floor's allowance at the largest outputs, and on average under the mean-abs limit, so the `error`
check passes it on every seed probe (some edge probes' mean-abs limits catch it). On the row's
small outputs the same absolute error is tens of percent: `relative_error` FAILs on every probe."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks

LEVELS = 255  # each side of zero


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    y = x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)
    step = jnp.max(jnp.abs(y), axis=-1, keepdims=True) / LEVELS
    o_ref[...] = (jnp.round(y / jnp.where(step > 0, step, 1.0)) * step).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
