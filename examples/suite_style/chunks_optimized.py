"""One pass over the chunks: a reshape and a single cumsum (an XLA rewrite)."""

import jax.numpy as jnp


def workload(x, chunks):
    rows, cols = x.shape
    return jnp.cumsum(x.reshape(rows, chunks, cols // chunks), axis=-1).reshape(rows, cols)
