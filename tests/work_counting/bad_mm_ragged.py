"""KNOWN-BAD (it evaded an earlier version of the count): the kernel only negates x; the matmul is lax.ragged_dot (one group), whose
primitive ragged_dot_general the count charges per output element, not per multiply-add."""
import jax, jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

def _negate_kernel(x_ref, o_ref):
    o_ref[...] = -x_ref[...]

def workload(x, y):
    m, k = x.shape
    neg = pl.pallas_call(_negate_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(m, 128),), in_specs=[pl.BlockSpec((128, k), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((128, k), lambda i: (i, 0)))(x)
    out = lax.ragged_dot(neg, y[None], jnp.array([m], jnp.int32),
                         precision=lax.Precision.HIGHEST, preferred_element_type=jnp.float32)
    return (-out).astype(x.dtype)
