"""KNOWN-BAD (a patch of the compiler's path that puts itself back): the honest XLA rewrite, which
in the timing process (`measure` in its arguments) rebinds `jax._src.compiler.compile_or_get_cached`
while it is traced. The wrapper lets the candidate's program (it has a dot_general) through; the
next program, the reference's, which kgate has already lowered and fingerprinted, it compiles
thirty times over (`slowed_program.py`: the same answer), and it puts the original function back
at once. The lowered program kgate hashed is untouched and the function is back before the end:
only the function's rebinding seen before the reference's compile, and the compiled program that
differs from the one compiled before the candidate's import, give it away."""

import sys

import jax
import jax.numpy as jnp
from jax._src import compiler

from slowed_program import slowed

_ORIGINAL = compiler.compile_or_get_cached


def _compile(backend, computation, *args, **kwargs):
    if "dot_general" not in str(computation):  # not the candidate's program: the reference's?
        slow = slowed(computation)
        if slow is not computation:  # it was: once is enough
            compiler.compile_or_get_cached = _ORIGINAL
        computation = slow
    return _ORIGINAL(backend, computation, *args, **kwargs)


def workload(x):
    if "measure" in sys.argv:
        compiler.compile_or_get_cached = _compile
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    ones = jnp.ones((x.shape[-1], 1), dtype=x.dtype)
    return e / jnp.dot(e, ones, precision=jax.lax.Precision.HIGHEST)
