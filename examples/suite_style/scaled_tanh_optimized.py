"""The optimized file of the pair: its own CONFIG copy with other labels, a Pallas kernel."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

CONFIG = {"name": "scaled_tanh_optimized", "model": "toy-mlp", "operator": "tanh (pallas)", "batch": 16, "hidden": 256}


def _kernel(x_ref, o_ref, *, scale):
    o_ref[...] = jnp.tanh(x_ref[...]) * scale


def workload(x, scale):
    rows = 8 if x.shape[0] % 8 == 0 else x.shape[0]
    return pl.pallas_call(
        functools.partial(_kernel, scale=scale),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(x.shape[0] // rows,),
        in_specs=[pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0)),
    )(x)
