"""GOOD, with a limit it states: the kernel supports only column counts that are multiples of
128 lanes and raises otherwise. Refusing a shape is allowed: the gate's odd-shape probe
reports it (an advisory) and does not fail it; the values it does compute are right."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


def workload(x):
    rows, cols = x.shape
    if cols % 128:
        raise ValueError(f"this kernel needs a multiple of 128 columns, got {cols}")
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, 8),),
        in_specs=[pl.BlockSpec((8, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, cols), lambda i: (i, 0)),
    )(x)
