"""KNOWN-BAD (it evaded an earlier version of the count): the kernel only negates; plain jnp computes RMSNorm one row per trip of a
while loop whose `lt(counter, 1)` looks like one trip: the counter is not incremented,
it is set to 1 only on the last row."""
import jax, jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
import reference

def _negate_kernel(x_ref, o_ref):
    o_ref[...] = -x_ref[...]

def workload(x, w):
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    rows = flat.shape[0]
    neg = pl.pallas_call(_negate_kernel, out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(pl.cdiv(rows, 8),), in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)))(flat)
    w32 = w.astype(jnp.float32)

    def body(c):
        done, row, out = c
        xr = -lax.dynamic_slice_in_dim(neg, row, 1, 0).astype(jnp.float32)
        yr = xr * lax.rsqrt(jnp.mean(xr * xr, axis=-1, keepdims=True) + reference.CONFIG["eps"]) * w32
        out = lax.dynamic_update_slice_in_dim(out, yr.astype(out.dtype), row, 0)
        return ((row + 1 >= rows).astype(jnp.int32), row + 1, out)

    _, _, out = lax.while_loop(lambda c: c[0] < 1, body, (0, 0, jnp.zeros_like(flat)))
    return out.reshape(x.shape)
