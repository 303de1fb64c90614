"""KNOWN-BAD (firing), kernel-authored: its only Pallas kernel transposes the weight, a constant
of the program that it never combines with the input; the matmul, bias and GELU are XLA's.
Replacing the kernel with a stand-in breaks the answer, so it looks like it does the work;
but no kernel reads the workload's inputs, so what it computes could have been computed once
ahead of time."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def transpose_kernel(w_ref, o_ref):
    o_ref[...] = w_ref[...].T


class Model:
    def __init__(self, in_features, out_features):
        self.weight = jnp.zeros((out_features, in_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        for name, value in weights_dict.items():
            setattr(self, name, jnp.asarray(value))

    def forward(self, x):
        n, k = self.weight.shape
        w_t = pl.pallas_call(transpose_kernel, out_shape=jax.ShapeDtypeStruct((k, n), self.weight.dtype))(self.weight)
        return jax.nn.gelu(jnp.dot(x, w_t) + self.bias)
