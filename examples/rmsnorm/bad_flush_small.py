"""KNOWN-BAD (wrong on small values): the kernel writes zero wherever an output is below 3.5% of
its row's mean magnitude (about 2.5% of the elements on random rows), and the exact value
elsewhere. Each such element is 100% wrong, but by less than a rounding of the row's largest
outputs, so a grade against the floor at the largest output (the `error` check) passes it. Scaled
to each element's magnitude, that floor is far below those errors: `relative_error` FAILs."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    y = x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)
    small = jnp.abs(y) < 0.035 * jnp.mean(jnp.abs(y), axis=-1, keepdims=True)
    o_ref[...] = jnp.where(small, 0.0, y).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
