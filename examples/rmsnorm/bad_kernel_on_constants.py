"""KNOWN-BAD (firing), kernel-authored: the normalization is plain XLA; its one Pallas kernel
builds a row of ones from a constant (it never sees x or w), and the result is multiplied by
that row. The kernel's result reaches the output and a stand-in for it breaks the answer, but
no kernel reads the workload's inputs."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def ones_kernel(c_ref, o_ref):
    o_ref[...] = c_ref[...] * 0.0 + 1.0


def workload(x, w):
    d = x.shape[-1]
    ones = pl.pallas_call(ones_kernel, out_shape=jax.ShapeDtypeStruct((8, d), jnp.float32))(jnp.zeros((8, d), jnp.float32))
    return (reference.workload(x, w).astype(jnp.float32) * ones[0]).astype(x.dtype)
