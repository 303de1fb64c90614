"""Hostile: declares itself eager (`_skip_jit`, and the marker an earlier kgate read off any
entry) so that its timed calls would run its Python, which returns a cached answer for the same
input buffers; any trace sees the real computation. kgate honours `_skip_jit` for the reference
only: this candidate is compiled and timed like any other, and its cache never runs."""

import jax
import jax.numpy as jnp

_skip_jit = True
_cache = {}


def workload(a, b):
    if isinstance(a, jax.core.Tracer):  # what tracing and compiling see: a clean program
        return jnp.tanh(a @ b) @ b
    key = (id(a), id(b))
    if key not in _cache:
        _cache[key] = jnp.tanh(a @ b) @ b
    return _cache[key]


workload._skip_jit = True
workload.kgate_eager = True
