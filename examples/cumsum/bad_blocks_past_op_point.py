"""KNOWN-BAD (sizes past the op-point): the scan in independent blocks of twice the op-point's
row length, each block's running sum started from zero, so nothing carries from one block to the
next. Every row up to twice the op-point's length is one block and exact (TINY, the odd and drawn
shapes, and the op-point itself all pass); a longer row restarts its sum. A verified op-point's
probe past it (one size drawn up to 16 times the op-point's) FAILs it."""

import jax.numpy as jnp

import reference  # noqa: F401  (the protocol: the candidate replaces reference.workload)

BLOCK = 2048  # twice the bundled op-point's row length (reference.CONFIG["n"] = 1024)


def workload(x):
    rows, n = x.shape
    x32 = x.astype(jnp.float32)
    if n <= BLOCK:
        return jnp.cumsum(x32, axis=-1).astype(x.dtype)
    blocks = -(-n // BLOCK)
    padded = jnp.pad(x32, ((0, 0), (0, blocks * BLOCK - n))).reshape(rows, blocks, BLOCK)
    return jnp.cumsum(padded, axis=-1).reshape(rows, blocks * BLOCK)[:, :n].astype(x.dtype)
