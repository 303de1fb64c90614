"""The same layer as one Pallas kernel: a block of rows per grid step, the matmul, bias and GELU
fused. It initializes its own weights (zeros): kgate gives it the reference's through set_weights."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def linear_gelu_kernel(x_ref, w_ref, b_ref, o_ref):
    y = jax.lax.dot_general(x_ref[...], w_ref[...], (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)
    o_ref[...] = jax.nn.gelu(y + b_ref[...]).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def linear_gelu(x, weight, bias, *, block_rows=8):
    rows, k = x.shape
    n = weight.shape[0]
    return pl.pallas_call(
        linear_gelu_kernel,
        out_shape=jax.ShapeDtypeStruct((rows, n), x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[
            pl.BlockSpec((block_rows, k), lambda i: (i, 0)),
            pl.BlockSpec((n, k), lambda i: (0, 0)),
            pl.BlockSpec((1, n), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((block_rows, n), lambda i: (i, 0)),
    )(x, weight, bias.reshape(1, n))


class Model:
    def __init__(self, in_features, out_features):
        self.weight = jnp.zeros((out_features, in_features), jnp.float32)
        self.bias = jnp.zeros((out_features,), jnp.float32)

    def set_weights(self, weights_dict):
        for name, value in weights_dict.items():
            setattr(self, name, jnp.asarray(value))

    def forward(self, x, *, block_rows=8):
        return linear_gelu(x, self.weight, self.bias, block_rows=block_rows)


batch_size = 256
in_features = 512
out_features = 256


def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (batch_size, in_features), jnp.float32)]


def get_init_inputs():
    return [in_features, out_features]
