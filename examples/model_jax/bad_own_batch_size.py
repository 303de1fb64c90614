"""KNOWN-BAD (integrity): carries its own shape globals with a smaller batch than the
reference's and computes only that many rows (the rest left zero). The shape globals are the
op-point: a candidate's copy that disagrees with the reference's is named."""

import jax.numpy as jnp

from pallas import linear_gelu

batch_size = 8
in_features = 512
out_features = 256


class ModelNew:
    def __init__(self, in_features, out_features):
        self.weight = jnp.zeros((out_features, in_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def forward(self, x):
        head = linear_gelu(x[:batch_size], self.weight, self.bias)
        return jnp.zeros((x.shape[0], head.shape[1]), x.dtype).at[:batch_size].set(head)
