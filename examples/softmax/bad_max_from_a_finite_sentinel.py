"""KNOWN-BAD (values random probes never hit, HACKS 11): a softmax whose row maximum is floored
at -1e30, the finite sentinel a kernel writes to keep exp(-inf - -inf) from being a NaN. Right on
every random draw, on every -inf mask and on every shift below zero kgate makes; a row that a
model masked whole with a finite value below the sentinel (`finfo(float32).min`, or kgate's
-5.2e33) has the reference's answer 1/n in every element, and here exp(x - -1e30) underflows to
0 everywhere: 0/0. kgate's `edge-lowest` probe fills a quarter of the rows whole with such a
value: FAIL there alone."""

import jax.numpy as jnp

import reference  # noqa: F401  (the protocol: the candidate replaces reference.workload)

SENTINEL = -1e30


def workload(x):
    m = jnp.maximum(jnp.max(x, axis=-1, keepdims=True), SENTINEL)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)
