"""KNOWN-BAD (vacuous, then parity): a Pallas kernel that writes zeros. Against the zero-weight
reference as shipped it matches exactly, and kgate calls that probe vacuous; with
`--weights random` the reference's output varies and the zeros fail parity."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def zeros_kernel(x_ref, w_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)


class Model:
    def __init__(self, in_features, out_features):
        self.weight = jnp.zeros((out_features, in_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        for name, value in weights_dict.items():
            setattr(self, name, jnp.asarray(value))

    def forward(self, x):
        n = self.weight.shape[0]
        return pl.pallas_call(zeros_kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0], n), x.dtype))(x, self.weight)
