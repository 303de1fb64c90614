"""KNOWN-BAD (a patch that keeps every identity kgate compares): `jax.jit` is a wrapper whose
closure cell holds the real jit. On its first call this candidate swaps that cell's contents
for a spy that passes every call on and keeps each function jitted from then on (the firing
audit's stand-ins, the checks kgate runs after it): the first step to computing one way when
graded and another when audited. `jax.jit` stays the same object with the same code and
defaults, so only a watch of what it holds sees the swap."""

import jax
import jax.numpy as jnp

SEEN = []  # every function kgate jits after the first call


def _spy(real):
    def jit(fun, *args, **kwargs):
        SEEN.append(fun)
        return real(fun, *args, **kwargs)
    jit.spy = True
    return jit


def workload(x):
    cell = jax.jit.__closure__[0]
    if not getattr(cell.cell_contents, "spy", False):
        cell.cell_contents = _spy(cell.cell_contents)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    ones = jnp.ones((x.shape[-1], 1), dtype=x.dtype)
    return e / jnp.dot(e, ones, precision=jax.lax.Precision.HIGHEST)
