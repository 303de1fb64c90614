"""KNOWN-BAD (shape overfitting, a family of sizes): the correct kernel runs where the length
is a power of two (TINY's 256, the op-point's 1024) or has the odd remainder the gate's fixed
odd shape always has (all low bits set: 383 = 3 x 2^7 - 1); at any other length a shortcut
drops the last element's contribution. The gate's drawn shape grows each size it moves by a
drawn amount, almost never to one of those two forms."""

import jax.numpy as jnp

from pallas import cumsum as _kernel_cumsum


def _tuned(n: int) -> bool:
    return n & (n - 1) == 0 or (n + 1) % 3 == 0 and ((n + 1) // 3) & ((n + 1) // 3 - 1) == 0


def workload(x):
    if _tuned(x.shape[-1]):
        return _kernel_cumsum(x)
    head = jnp.cumsum(x[:, :-1].astype(jnp.float32), axis=-1)
    return jnp.concatenate([head, head[:, -1:]], axis=-1).astype(x.dtype)
