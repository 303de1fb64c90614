"""KNOWN-BAD (mechanism-absent no-op, dressed): the reference's softmax verbatim, behind a
`reduce_precision` to float32's own exponent and mantissa widths. On float32 that rounds nothing,
but XLA keeps the operation, so the compiled program's text differs from the reference's. With
every operation that handed back its operand unchanged left out, the programs are identical:
`firing.program_differs` FAILs (`--class xla-rewrite`)."""

import jax
import jax.numpy as jnp


def workload(x):
    x = jax.lax.reduce_precision(x, exponent_bits=8, mantissa_bits=23)
    z = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(z)
    return e / jnp.sum(e, axis=-1, keepdims=True)
