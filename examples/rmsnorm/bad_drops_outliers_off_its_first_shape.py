"""KNOWN-BAD (overfit to rows a random draw makes, at the shapes the edges never reach): the
outlier-dropping mean square of `bad_drops_outliers.py` (two or more values above six times a
row's root mean square are left out of it), switched on only at shapes other than the first one
it is traced at. kgate's first probes are the seeds', and the edge battery is made from the first
seed's inputs at that shape, so every seed and edge passes, and so do the odd and drawn shapes,
whose draws hold no such rows; `rows-at-a-shape` gives three in four of the rows of one of those
shapes the edges' values (the same few columns standing out in a row, several outliers, among
them): FAIL there."""

import functools

import jax
import jax.numpy as jnp

import reference
from row_blocks import row_blocks

FIRST: list[tuple[int, ...]] = []  # the shape of the first trace: kgate's seed probes


def rmsnorm_kernel(x_ref, w_ref, o_ref, *, eps, robust_rows):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    if robust_rows:
        out = x * x > 36.0 * ms
        kept = jnp.sum(jnp.where(out, 0.0, x * x), axis=-1, keepdims=True) / jnp.maximum(
            jnp.sum((~out).astype(jnp.float32), axis=-1, keepdims=True), 1.0)
        ms = jnp.where(jnp.sum(out.astype(jnp.float32), axis=-1, keepdims=True) >= 2.0, kept, ms)
    o_ref[...] = (x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def workload(x, w, *, block_rows=8):
    if not FIRST:
        FIRST.append(tuple(x.shape))
    kernel = functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"], robust_rows=tuple(x.shape) != FIRST[0])
    return row_blocks(kernel, x, w, block_rows=block_rows)
