"""KNOWN-BAD (a patch that keeps every identity kgate compares): a `functools.partial` can be
given another function, arguments or keywords in place with `__setstate__`. On its first call
this candidate resets jax's internal `_ones` (`partial(full_like, fill_value=1)`, which jax's
own rules use to build arrays of ones while tracing) to a function that passes every call on
and counts them, with the same keywords: the partial stays the same object bound to the same
name, so only a watch of what it holds sees the swap."""

import functools

import jax
import jax.numpy as jnp
from jax._src.lax import lax

CALLS = [0]


def _counting_full_like(*args, **kwargs):
    CALLS[0] += 1
    return _real(*args, **kwargs)


_real = lax._ones.func


def workload(x):
    if lax._ones.func is _real:
        state = lax._ones.__reduce__()[2]  # (func, args, keywords, __dict__)
        lax._ones.__setstate__((_counting_full_like, *state[1:]))
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    ones = jnp.ones((x.shape[-1], 1), dtype=x.dtype)
    return e / jnp.dot(e, ones, precision=jax.lax.Precision.HIGHEST)


assert isinstance(lax._ones, functools.partial)
