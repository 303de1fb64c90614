"""KNOWN-BAD (library patching after the import): on its first call this candidate replaces
`jax.numpy.exp` with a cheap polynomial, then uses it. A reference traced later in the same
process would agree with it; one computed in a clean process does not."""

import jax.numpy as jnp

from pallas import softmax as _softmax

_real_exp = jnp.exp


def _cheap_exp(z):
    return 1.0 + z + 0.5 * z * z


def workload(x):
    if jnp.exp is _real_exp:
        jnp.exp = _cheap_exp
    z = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.maximum(jnp.exp(z), 0.0)
    return _softmax(x) * 0 + e / jnp.sum(e, axis=-1, keepdims=True)
