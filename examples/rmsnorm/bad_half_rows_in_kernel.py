"""KNOWN-BAD (partial work in the kernel): the kernel normalizes the first half of the rows;
the second half is computed with plain jnp next to it. Every element is right, and the
kernel is real, but it computes only half of what the candidate claims."""

import jax.numpy as jnp

import reference
from pallas import rmsnorm


def workload(x, w):
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    half = flat.shape[0] // 2
    top = rmsnorm(flat[:half], w, eps=reference.CONFIG["eps"])
    bottom = reference.workload(flat[half:], w)
    return jnp.concatenate([top, bottom], axis=0).reshape(x.shape)
