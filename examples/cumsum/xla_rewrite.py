"""The scan as a scan: jnp.cumsum in float32 (O(n) work), then bf16 like the reference."""

import jax.numpy as jnp

import reference  # noqa: F401  (the protocol: the candidate replaces reference.workload)


def workload(x):
    return jnp.cumsum(x.astype(jnp.float32), axis=-1).astype(x.dtype)
