"""RMSNorm rewritten for XLA: the sum of squares as a dot product instead of a reduce."""

import jax
import jax.numpy as jnp

import reference


def workload(x, w):
    x32 = x.astype(jnp.float32)
    ss = jnp.einsum("bsd,bsd->bs", x32, x32, precision=jax.lax.Precision.HIGHEST)[..., None]
    inv = jax.lax.rsqrt(ss / x.shape[-1] + reference.CONFIG["eps"])
    return (x32 * inv * w.astype(jnp.float32)).astype(x.dtype)
