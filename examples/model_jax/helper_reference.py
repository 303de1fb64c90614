"""The layer with its math in a module-level jitted helper, as many references are laid out."""

import jax
import jax.numpy as jnp


@jax.jit
def _linear_gelu(x, w, b):
    return jax.nn.gelu(x @ w.T + b)


class Model:
    def __init__(self, in_features, out_features):
        kw, kb = jax.random.split(jax.random.PRNGKey(0))
        self.weight = jax.random.normal(kw, (out_features, in_features), jnp.float32) / jnp.sqrt(in_features)
        self.bias = 0.1 * jax.random.normal(kb, (out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        for name, value in weights_dict.items():
            setattr(self, name, jnp.asarray(value))

    def forward(self, x):
        return _linear_gelu(x, self.weight, self.bias)


batch_size = 256
in_features = 512
out_features = 256
TINY = {"batch_size": 16, "in_features": 128, "out_features": 128}


def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (batch_size, in_features), jnp.float32)]


def get_init_inputs():
    return [in_features, out_features]
