"""KNOWN-BAD (a patch of the compiler's path that also forges what the compiled program says it
is): as `bad_slows_reference_compile_from_its_trace.py`, the reference's own trace installs a
wrapper of `jax._src.compiler.backend_compile_and_load` that puts itself back after one use. This
one compiles the reference's program twice, as lowered and thirty times over, returns the slow
executable, and rebinds `LoadedExecutable.hlo_modules` (a method of jaxlib's class, which Python
lets anyone set) so that the slow executable names the honest program's modules, and `as_text()`
shows the honest program. kgate reads a compiled program through the methods it bound at import:
the slow program's modules are what it hashes."""

import sys

import jax
import jax.numpy as jnp
from jax._src import compiler
from jax._src.lib import xla_client

from slowed_program import slowed

_MAX = jnp.max
_TRACES = []
_COMPILE = compiler.backend_compile_and_load
_MODULES = xla_client.LoadedExecutable.hlo_modules
_HONEST = {}  # id of a slow executable -> the honest one it stands for


def _modules(executable):
    return _MODULES(_HONEST.get(id(executable), executable))


def _compile(backend, module, *args, **kwargs):
    compiler.backend_compile_and_load = _COMPILE
    honest = _COMPILE(backend, module, *args, **kwargs)
    slow = _COMPILE(backend, slowed(module), *args, **kwargs)
    _HONEST[id(slow)] = honest
    xla_client.LoadedExecutable.hlo_modules = _modules
    return slow


def _trojan(*args, **kwargs):
    jnp.max = _MAX
    compiler.backend_compile_and_load = _compile
    return _MAX(*args, **kwargs)


def workload(x):
    _TRACES.append(x.shape)
    e = jnp.exp(x - _MAX(x, axis=-1, keepdims=True))
    if "measure" in sys.argv and len(_TRACES) > 2:  # a later session's trace: kgate looks hardest at the first call
        jnp.max = _trojan
    ones = jnp.ones((x.shape[-1], 1), dtype=x.dtype)
    return e / jnp.dot(e, ones, precision=jax.lax.Precision.HIGHEST)
