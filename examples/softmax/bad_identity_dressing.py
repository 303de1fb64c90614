"""KNOWN-BAD (mechanism-absent no-op, dressed): the reference's softmax with operations woven
through it that compute nothing on its values and that XLA keeps: a clamp of the input to
+-1e30 (far outside any logit), an optimization barrier inside a nested jit, and a NaN guard on
the exponentials (`where(isnan(e), 0, e)`: nothing to guard on finite logits). The compiled
program's text differs from the reference's; with every operation that handed back its operand
unchanged left out, it is the reference's: `firing.program_differs` FAILs (`--class xla-rewrite`)."""

import jax
import jax.numpy as jnp


@jax.jit
def _kept(v):
    return jax.lax.optimization_barrier(v)


def workload(x):
    x = _kept(jnp.clip(x, -1e30, 1e30))
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    e = jnp.where(jnp.isnan(e), 0.0, e)
    return e / jnp.sum(e, axis=-1, keepdims=True)
