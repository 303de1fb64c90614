"""A plain-JAX rewrite that keeps the weight transposed: its set_weights takes the reference's
`weight` and `bias` and stores `weight_t`, laid out for `x @ weight_t`. Its own layout is its
business: kgate hands it the reference's weights by name and parity judges the result."""

import jax
import jax.numpy as jnp


class Model:
    def __init__(self, in_features, out_features):
        self.weight_t = jnp.zeros((in_features, out_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        self.weight_t = jnp.asarray(weights_dict["weight"]).T
        self.bias = jnp.asarray(weights_dict["bias"])

    def forward(self, x):
        return jax.nn.gelu(jnp.dot(x, self.weight_t) + self.bias)
