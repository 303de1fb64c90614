"""KNOWN-BAD (refused): its weights are `w` and `b`, not the reference's `weight` and `bias`,
and it has no set_weights, so kgate cannot give it the reference's weights. kgate refuses,
naming both sets of names, instead of comparing two differently initialized layers."""

import jax.numpy as jnp

from pallas import linear_gelu


class ModelNew:
    def __init__(self, in_features, out_features):
        self.w = jnp.ones((out_features, in_features), jnp.float32)
        self.b = jnp.zeros((out_features,), jnp.float32)

    def forward(self, x):
        return linear_gelu(x, self.w, self.b)
