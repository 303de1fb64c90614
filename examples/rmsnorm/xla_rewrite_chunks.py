"""RMSNorm rewritten for XLA with one knob, for `kgate sweep --class xla-rewrite`: the sum of
squares as a dot product over the row split into `chunks` equal pieces (a reshape, then one
dot_general contracting both). A `chunks` that does not divide the row cannot be reshaped:
that point raises, and a sweep says so and never times it."""

import jax
import jax.numpy as jnp

import reference


def workload(x, w, *, chunks=1):
    x32 = x.astype(jnp.float32)
    d = x.shape[-1]
    if d % chunks:
        raise ValueError(f"chunks={chunks} does not divide the row of {d}")
    pieces = x32.reshape(*x.shape[:-1], chunks, d // chunks)
    ss = jnp.einsum("bscd,bscd->bs", pieces, pieces, precision=jax.lax.Precision.HIGHEST)[..., None]
    inv = jax.lax.rsqrt(ss / d + reference.CONFIG["eps"])
    return (x32 * inv * w.astype(jnp.float32)).astype(x.dtype)
