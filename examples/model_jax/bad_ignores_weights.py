"""KNOWN-BAD (refused): its set_weights accepts the reference's weights and keeps its own, so
whatever it computes, it computes with other weights. kgate reads the weights back after
set_weights and refuses, naming the ones that still differ."""

import jax.numpy as jnp

from pallas import linear_gelu


class Model:
    def __init__(self, in_features, out_features):
        self.weight = jnp.full((out_features, in_features), 0.01, jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        pass

    def forward(self, x):
        return linear_gelu(x, self.weight, self.bias)
