"""KNOWN-BAD (values random probes never hit, HACKS 11): a softmax that treats every value at or
below -1e30 as masked and writes zeros for a row with nothing left unmasked, as some attention
kernels do for a query that sees no key. The reference has no such rule: a row masked whole with
a finite value (`finfo(float32).min` as a model writes its mask, or kgate's -5.2e33) is a row of
equal values, and its answer is 1/n in every element. Random draws, shifts and -inf masks (a row
wholly -inf is NaN in the reference, so never graded) never meet the rule; kgate's `edge-lowest`
probe, a quarter of the rows filled whole with such a value, FAILs it."""

import jax.numpy as jnp

import reference  # noqa: F401  (the protocol: the candidate replaces reference.workload)

MASKED = -1e30


def workload(x):
    kept = x > MASKED
    m = jnp.max(jnp.where(kept, x, -jnp.inf), axis=-1, keepdims=True)
    e = jnp.where(kept, jnp.exp(x - jnp.where(jnp.isfinite(m), m, 0.0)), 0.0)
    total = jnp.sum(e, axis=-1, keepdims=True)
    return jnp.where(total > 0, e / jnp.where(total > 0, total, 1.0), 0.0)
