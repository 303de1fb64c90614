"""KNOWN-BAD (integrity), against helper_reference.py: correct, and no faster. At import it
swaps the code of the function inside the reference's jitted helper
(`_linear_gelu.__wrapped__.__code__`): the jit wrapper keeps its identity and has no code of
its own, so only a snapshot that looks through `__wrapped__` sees it. The reference's code
changed: named as a change to the reference."""

import jax
import jax.numpy as jnp

import helper_reference


def _chained(x, w, b):
    y = x @ w.T
    for _ in range(24):
        y = (x + 0.0 * jnp.sum(y)) @ w.T
    return jax.nn.gelu(y + b)


helper_reference._linear_gelu.__wrapped__.__code__ = _chained.__code__


class Model:
    def __init__(self, in_features, out_features):
        self.weight = jnp.zeros((out_features, in_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        for name, value in weights_dict.items():
            setattr(self, name, jnp.asarray(value))

    def forward(self, x):
        return jax.nn.gelu(jnp.dot(x, self.weight.T) + self.bias)
