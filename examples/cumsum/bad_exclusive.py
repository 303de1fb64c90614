"""KNOWN-BAD (off by one): an exclusive scan (each output excludes its own element), fast and
wrong; parity fails, so whatever its speed it supports and refutes nothing."""

import jax.numpy as jnp

import reference  # noqa: F401


def workload(x):
    x32 = x.astype(jnp.float32)
    return (jnp.cumsum(x32, axis=-1) - x32).astype(x.dtype)
