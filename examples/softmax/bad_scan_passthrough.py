"""KNOWN-BAD (mechanism-absent no-op, dressed in a loop): "stream the rows through a scan that
guards against NaN" -- but no logit is NaN: the scan hands each row back unchanged (carrying a
row count nobody reads), and the reference's softmax runs on what it returns. The compiled
program has a loop the reference's has not; the loop's result is its operand bit for bit, and
with it left out the program is the reference's: `firing.program_differs` FAILs
(`--class xla-rewrite`)."""

import jax
import jax.numpy as jnp


def workload(x):
    _, rows = jax.lax.scan(lambda n, row: (n + 1, jnp.where(jnp.isnan(row), 0.0, row)), 0, x)
    e = jnp.exp(rows - jnp.max(rows, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)
