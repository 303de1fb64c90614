"""Right answers, then SIGKILLs its own process from a host callback that runs inside the timed
calls: no handler runs, nothing is written; kgate must report how the run ended, never a
missing or partial report."""

import os
import signal

import jax
import jax.numpy as jnp

import reference

_calls = [0]


def _count() -> None:  # runs on the host at every execution, not once per trace
    _calls[0] += 1
    if _calls[0] > 6:  # past the first runs: inside the timed rounds
        os.kill(os.getpid(), signal.SIGKILL)


def workload(x, w):
    jax.debug.callback(_count)
    x32 = x.astype(jnp.float32)
    inv = jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + reference.CONFIG["eps"])
    return (x32 * inv * w.astype(jnp.float32)).astype(x.dtype)
