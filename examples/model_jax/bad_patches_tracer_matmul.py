"""KNOWN-BAD (integrity, measure): correct, and no faster. At import it replaces jax's
`Tracer.__matmul__` (the operator behind `x @ w`, a dunder of a library class) with one that
chains the matmul 24 times, so any program written with `@` (the reference's) does 24x the
work; this candidate writes `jnp.dot` and is untouched. In a process that times both, the
reference's program is no longer the one lowered before this file was imported, and the
operator's rebinding is named."""

import jax
import jax.numpy as jnp
from jax._src import core

_matmul = core.Tracer.__matmul__


def _chained(self, other):
    y = _matmul(self, other)
    for _ in range(24):
        y = _matmul(self + 0.0 * jnp.sum(y), other)
    return y


core.Tracer.__matmul__ = _chained


class Model:
    def __init__(self, in_features, out_features):
        self.weight_t = jnp.zeros((in_features, out_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        self.weight_t = jnp.asarray(weights_dict["weight"]).T
        self.bias = jnp.asarray(weights_dict["bias"])

    def forward(self, x):
        return jax.nn.gelu(jnp.dot(x, self.weight_t) + self.bias)
