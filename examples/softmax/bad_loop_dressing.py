"""KNOWN-BAD (mechanism-absent no-op, dressed in a loop): the reference's softmax after a loop
that clamps the logits to +-1e30 twice (nothing to clamp: every logit is far inside), which XLA
keeps as a loop. The compiled program's text differs from the reference's; the loop's result
is its operand bit for bit (only its unused counter changed), and with it left out the program
is the reference's: `firing.program_differs` FAILs (`--class xla-rewrite`)."""

import jax
import jax.numpy as jnp


def workload(x):
    x = jax.lax.fori_loop(0, 2, lambda i, v: jnp.clip(v, -1e30, 1e30), x)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)
