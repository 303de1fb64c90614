"""KNOWN-BAD (it evaded an earlier version of the count): the kernel only negates; squares come from a bf16 lookup table (gather: free),
row sums from scatter-add (counted by its 1-op update_jaxpr), and the scale from
scatter-mul onto a ones array (again 1 op)."""
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
import reference

def _negate_kernel(x_ref, o_ref):
    o_ref[...] = -x_ref[...]

_bits = np.arange(65536, dtype=np.uint16)
_vals = jnp.asarray(_bits).view(jnp.bfloat16).astype(np.float32)
SQUARE = np.asarray(_vals) ** 2          # a table of constants, built once

def workload(x, w):
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    rows = flat.shape[0]
    neg = pl.pallas_call(_negate_kernel, out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(pl.cdiv(rows, 8),), in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)))(flat)
    bits = lax.bitcast_convert_type(neg, jnp.uint16).astype(jnp.uint32)
    sq = jnp.asarray(SQUARE)[bits]                                       # gather: free
    rowid = lax.broadcasted_iota(jnp.uint32, flat.shape, 0)
    ss = jnp.zeros((rows,), jnp.float32).at[rowid].add(sq)               # scatter-add: "1 op"
    r = -lax.rsqrt(ss / d + reference.CONFIG["eps"])
    n = neg.astype(jnp.float32)
    y = jnp.ones(flat.shape, jnp.float32)
    idx = lax.iota(jnp.uint32, flat.size).reshape(flat.shape)
    y = y.reshape(-1).at[idx.reshape(-1)].multiply(n.reshape(-1))
    y = y.at[idx.reshape(-1)].multiply(jnp.broadcast_to(r[:, None], flat.shape).reshape(-1))
    y = y.at[idx.reshape(-1)].multiply(jnp.broadcast_to(w.astype(jnp.float32), flat.shape).reshape(-1))
    return y.reshape(x.shape).astype(x.dtype)
