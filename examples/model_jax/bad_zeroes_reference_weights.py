"""KNOWN-BAD (integrity, parity): finds the reference's Model instance in its own process and
zeroes its weights before they are handed over, so that it is given all-zero weights and its
all-zero answer would match a reference built from them. The reference leg builds its own
weights in a process that never imported this file; the weights handed over no longer hash as
the reference leg's did."""

import gc

import jax.numpy as jnp

import reference

for _obj in gc.get_objects():
    if isinstance(_obj, reference.Model):
        _obj.weight = jnp.zeros_like(_obj.weight)
        _obj.bias = jnp.zeros_like(_obj.bias)


class Model:
    def __init__(self, in_features, out_features):
        self.weight = jnp.zeros((out_features, in_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        for name, value in weights_dict.items():
            setattr(self, name, jnp.asarray(value))

    def forward(self, x):
        return jnp.zeros((x.shape[0], self.weight.shape[0]), x.dtype)
