"""KNOWN-BAD (it evaded an earlier version of the count): the kernel only negates; plain jax computes RMSNorm with generic lax.reduce
(a custom lambda), counted as its scalar body (1 op) instead of per element."""
import jax, jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
import reference

def _negate_kernel(x_ref, o_ref):
    o_ref[...] = -x_ref[...]

def _mul(a, b): return a * b
def _add(a, b): return a + b

def workload(x, w):
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    neg = pl.pallas_call(_negate_kernel, out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(pl.cdiv(flat.shape[0], 8),), in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)))(flat)
    n = neg.astype(jnp.float32)                       # -x (free cast)
    sq = lax.reduce(jnp.concatenate([n[..., None], n[..., None]], -1), 1.0, _mul, (2,))          # x*x, "1 op" (concatenate, not jnp.stack, which is counted)
    ss = lax.reduce(sq, 0.0, _add, (1,))                              # row sums, "1 op"
    r = -lax.rsqrt(ss / d + reference.CONFIG["eps"])                 # rows only
    wf = jnp.broadcast_to(w.astype(jnp.float32), n.shape)
    rb = jnp.broadcast_to(r[:, None], n.shape)
    y = lax.reduce(jnp.concatenate([n[..., None], rb[..., None], wf[..., None]], -1), 1.0, _mul, (2,))     # (-x)*(-r)*w, "1 op"
    return y.reshape(x.shape).astype(x.dtype)
