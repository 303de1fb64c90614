"""KNOWN-BAD (an approximation tuned to a range): between mean squares 400 and 3000 (rows 20 to 55
times the size of a random draw's) the kernel reads rsqrt from a straight line, up to 36% off;
elsewhere it is exact. Random rows are near 1, the scales edge reached only 16 times them, the
slices and spikes edges 64: unnormalized residual streams sit in the gap. The scales edge now
reaches 64 times a row in stratified steps: it FAILs there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    line = 0.05 + (ms - 400.0) * ((1.0 / 3000.0 ** 0.5 - 0.05) / 2600.0)
    inv = jnp.where((ms > 400.0) & (ms < 3000.0), line, jax.lax.rsqrt(ms + eps))
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"])
    return row_blocks(kernel, x, w, block_rows=block_rows)
