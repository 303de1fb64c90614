"""KNOWN-BAD (mechanism-absent no-op, dressed as a choice): the reference's softmax, verbatim, as
one branch of a `lax.cond` on "every logit is finite" (the other branch returns zeros), after a
round trip of the logits through complex64 and back. On any real input the first branch is
taken and the round trip changes no bit, so the program computes exactly what the reference
does; its text has a conditional and two conversions the reference's has not. With the branch
taken inlined and every operation that gave back a value the program already held left out, it
is the reference's: `firing.program_differs` FAILs (`--class xla-rewrite`). A logit a mask left at
-inf takes the other branch: parity FAILs on the `edge-masked` probe too."""

import jax.numpy as jnp
from jax import lax


def _softmax(x):
    z = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(z)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def workload(x):
    x = jnp.real(x.astype(jnp.complex64))
    return lax.cond(jnp.all(jnp.isfinite(x)), _softmax, jnp.zeros_like, x)
