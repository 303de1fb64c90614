"""GOOD: the whole RMSNorm in the kernel, run per batch element; glue is pure data
movement: the weight pre-laid out per row with jnp.tile, results joined with jnp.stack."""
import functools, jax, jax.numpy as jnp
from jax.experimental import pallas as pl
import pallas as honest
import reference
def _one(x2, wt):
    rows, d = x2.shape
    return pl.pallas_call(functools.partial(honest.rmsnorm_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x2.dtype), grid=(pl.cdiv(rows, 8),),
        in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0)), pl.BlockSpec((8, d), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)))(x2, wt)
def workload(x, w):
    wt = jnp.tile(w[None], (x.shape[1], 1))
    return jnp.stack([_one(x[b], wt) for b in range(x.shape[0])])
