"""KNOWN-BAD (shape overfitting): the kernel is used only at the shapes it was tuned for
(rows a multiple of 4, length a multiple of 128), and anything else goes through a shortcut
that drops the last element's contribution. Right at TINY and at the op-point, wrong
elsewhere: the gate's odd-shape probe FAILs it."""

import jax.numpy as jnp

from pallas import cumsum as _kernel_cumsum


def workload(x):
    rows, n = x.shape
    if rows % 4 == 0 and n % 128 == 0:
        return _kernel_cumsum(x)
    head = jnp.cumsum(x[:, :-1].astype(jnp.float32), axis=-1)
    return jnp.concatenate([head, head[:, -1:]], axis=-1).astype(x.dtype)
