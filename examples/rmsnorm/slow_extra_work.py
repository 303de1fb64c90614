"""A known slowdown: the correct result plus extra work XLA cannot drop (a data-dependent
loop of elementwise passes whose result feeds the output through a zero-valued term)."""

import jax
import jax.numpy as jnp

import reference


def workload(x, w, *, passes=1):
    out = reference.workload(x, w)

    def body(i, acc):
        return jnp.tanh(acc * 1.0001 + 0.5)  # cannot be folded: depends on the previous pass

    junk = jax.lax.fori_loop(0, passes, body, x.astype(jnp.float32))
    # min(|junk|, 0) is always 0, but XLA cannot prove it, so the loop must run.
    return (out.astype(jnp.float32) + jnp.minimum(jnp.abs(junk), 0.0)).astype(out.dtype)
