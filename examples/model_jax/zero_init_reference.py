"""The layer as many translated problems ship it: weights all zero until set_weights is called,
so the output is GELU(0) = 0 for every input. As shipped, every probe is vacuous; with
`--weights random` kgate gives the reference (and the candidate) seeded random weights."""

import jax
import jax.numpy as jnp


class Model:
    def __init__(self, in_features, out_features):
        self.weight = jnp.zeros((out_features, in_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        for name, value in weights_dict.items():
            setattr(self, name, jnp.asarray(value))

    def forward(self, x):
        return jax.nn.gelu(x @ self.weight.T + self.bias)


batch_size = 256
in_features = 512
out_features = 256
TINY = {"batch_size": 16, "in_features": 128, "out_features": 128}


def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (batch_size, in_features), jnp.float32)]


def get_init_inputs():
    return [in_features, out_features]
