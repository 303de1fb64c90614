"""KNOWN-BAD (vacuous probe): a Pallas kernel that writes zeros. It matches the reference
exactly, because the reference's shipped inputs make its output zero."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def zeros_kernel(x_ref, m_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)


def workload(x, mask):
    return pl.pallas_call(zeros_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, mask)
