"""The candidate's entry is also `forward`: --entry forward --reference-entry forward."""

import jax.numpy as jnp


def forward(x):
    return jnp.maximum(x + x, 0.0)
