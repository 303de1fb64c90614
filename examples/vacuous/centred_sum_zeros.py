"""KNOWN-BAD (vacuous probe, rounding noise): returns zeros for the centred sum, and keeps a
quarter of the reference's matmul alive (multiplied by zero, which XLA keeps for floats) so that
its time is not below the physical floor. Zeros are within parity's allowance of an answer that
is only rounding noise: kgate FAILs the probe as vacuous."""

import jax.numpy as jnp


def workload(x, w):
    kept = x @ w[:, : w.shape[1] // 4]
    return 0.0 * jnp.sum(kept, axis=-1)
