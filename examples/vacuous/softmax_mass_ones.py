"""KNOWN-BAD (vacuous probe, one value): returns ones for the softmax's row masses without
reading the inputs' values. Ones are within parity's allowance of every answer: kgate FAILs the
probe as vacuous."""

import jax.numpy as jnp


def workload(x):
    return jnp.ones(x.shape[:1], x.dtype) + 0.0 * x[:, 0]
