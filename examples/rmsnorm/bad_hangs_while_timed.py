"""Right answers, then a host callback inside the timed calls that never returns: the timed
round never ends, and no tick can end it from the process that waits on it."""

import time

import jax
import jax.numpy as jnp

import reference

_calls = [0]


def _count() -> None:  # runs on the host at every execution
    _calls[0] += 1
    if _calls[0] > 6:  # past the first runs: inside the timed rounds
        time.sleep(3600)


def workload(x, w):
    jax.debug.callback(_count)
    x32 = x.astype(jnp.float32)
    inv = jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + reference.CONFIG["eps"])
    return (x32 * inv * w.astype(jnp.float32)).astype(x.dtype)
