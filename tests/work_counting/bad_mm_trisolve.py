"""KNOWN-BAD (it evaded an earlier version of the count): the kernel only negates x; x @ y comes out of one triangular_solve, charged
per output element: with L = [[I, 0], [-x, I]], L^-1 [y; 0] = [y; x @ y]."""
import jax, jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

def _negate_kernel(x_ref, o_ref):
    o_ref[...] = -x_ref[...]

def workload(x, y):
    m, k = x.shape
    n = y.shape[1]
    neg = pl.pallas_call(_negate_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(m, 128),), in_specs=[pl.BlockSpec((128, k), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((128, k), lambda i: (i, 0)))(x)
    ik = (lax.broadcasted_iota(jnp.int32, (k, k), 0) == lax.broadcasted_iota(jnp.int32, (k, k), 1)).astype(x.dtype)
    im = (lax.broadcasted_iota(jnp.int32, (m, m), 0) == lax.broadcasted_iota(jnp.int32, (m, m), 1)).astype(x.dtype)
    L = jnp.concatenate([jnp.concatenate([ik, jnp.zeros((k, m), x.dtype)], 1),
                         jnp.concatenate([neg, im], 1)], 0)
    rhs = jnp.concatenate([y, jnp.zeros((m, n), y.dtype)], 0)
    sol = lax.linalg.triangular_solve(L, rhs, left_side=True, lower=True, unit_diagonal=True)
    return sol[k:].astype(x.dtype)
