"""KNOWN-BAD (it evaded an earlier version of the count): the kernel only exponentiates (like bad_kernel_only_exponentiates); the row max,
the shift, the row sum and the division are generic lax.reduce calls (custom lambdas),
each charged one op."""
import jax, jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

def _exp_kernel(x_ref, o_ref):
    o_ref[...] = jnp.exp(x_ref[...])

def _max(a, b): return jnp.maximum(a, b)
def _add(a, b): return a + b
def _mul(a, b): return a * b
def _pair(a, b): return jnp.concatenate([a[..., None], b[..., None]], -1)

def workload(x):
    r, c = x.shape
    m = lax.reduce(x, -jnp.inf, _max, (1,))
    z = lax.reduce(_pair(x, jnp.broadcast_to(-m[:, None], x.shape)), 0.0, _add, (2,))
    e = pl.pallas_call(_exp_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(r, 8),), in_specs=[pl.BlockSpec((8, c), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, c), lambda i: (i, 0)))(z)
    s = lax.reduce(e, 0.0, _add, (1,))
    return lax.reduce(_pair(e, jnp.broadcast_to((1.0 / s)[:, None], x.shape)), 1.0, _mul, (2,))
