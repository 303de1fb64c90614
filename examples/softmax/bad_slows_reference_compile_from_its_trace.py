"""KNOWN-BAD (a patch of the compiler's path installed while the reference is traced): no function
kgate watches is rebound while the candidate runs. While it is traced in the timing process, the
candidate adds a garbage-collector callback and has the collector run often; the callback waits
for a collection inside the reference's `workload` (it looks up the stack). There it puts the
collector back as it was and wraps
`jax._src.compiler.backend_compile_and_load`, which compiles the reference's program thirty times
over (`slowed_program.py`) and puts itself back. Every function is its own again before kgate
looks; the reference's lowered program is unchanged. Only the program compiled for the reference,
not the one compiled before the import, shows it."""

import gc
import sys

import jax
import jax.numpy as jnp
from jax._src import compiler

from slowed_program import slowed

_COMPILE = compiler.backend_compile_and_load
_MINE = __file__
_THRESHOLD = gc.get_threshold()


def _compile(backend, module, *args, **kwargs):
    compiler.backend_compile_and_load = _COMPILE
    return _COMPILE(backend, slowed(module), *args, **kwargs)


def _in_the_reference():
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "workload" and code.co_filename != _MINE:
            return True
        frame = frame.f_back
    return False


def _on_collect(phase, info):
    if phase == "start" and _in_the_reference():
        gc.callbacks.remove(_on_collect)
        gc.set_threshold(*_THRESHOLD)
        compiler.backend_compile_and_load = _compile


def workload(x):
    if "measure" in sys.argv and _on_collect not in gc.callbacks:
        gc.callbacks.append(_on_collect)
        gc.set_threshold(20)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    ones = jnp.ones((x.shape[-1], 1), dtype=x.dtype)
    return e / jnp.dot(e, ones, precision=jax.lax.Precision.HIGHEST)
