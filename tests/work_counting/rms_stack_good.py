"""GOOD: the pallas rmsnorm kernel run per batch element, results joined with jnp.stack
and the weight laid out with jnp.tile (both pure data movement)."""
import jax, jax.numpy as jnp
import pallas as honest
import reference
def workload(x, w):
    outs = [honest.rmsnorm(x[b], w, eps=reference.CONFIG["eps"]) for b in range(x.shape[0])]
    return jnp.stack(outs)
