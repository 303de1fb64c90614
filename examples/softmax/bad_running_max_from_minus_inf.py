"""KNOWN-BAD (values random probes never hit, HACKS 11): an online softmax over two halves of
each row, its running maximum carried from the first half to the second with no guard for a
half that is all -inf. Random rows never hold -inf, and each half's own maximum is finite; a row
whose first half is masked (a causal or padding mask's -inf) makes exp(-inf - -inf) a NaN where
the reference's answer is finite. kgate's `edge-masked` probe masks leading spans of every
power-of-two size (128 among them at TINY's 256 columns): FAIL there alone."""

import jax.numpy as jnp

import reference  # noqa: F401  (the protocol: the candidate replaces reference.workload)


def workload(x):
    half = x.shape[-1] // 2
    first, second = x[:, :half], x[:, half:]
    m1 = jnp.max(first, axis=-1, keepdims=True)
    l1 = jnp.sum(jnp.exp(first - m1), axis=-1, keepdims=True)
    m2 = jnp.max(second, axis=-1, keepdims=True)
    m = jnp.maximum(m1, m2)
    l2 = jnp.sum(jnp.exp(second - m), axis=-1, keepdims=True)
    total = l1 * jnp.exp(m1 - m) + l2
    return jnp.exp(x - m) / total
