"""KNOWN-BAD (an answer replayed by code that runs inside the compiled call): the workload returns
its output wrapped in a pytree node of its own. The compiled program only negates x; the node's
unflatten, which jax runs in Python on every call of the compiled program, turns that into the
softmax, computed once per inputs object it finds on its caller's frames and replayed after. Every
output read is right. kgate refuses an output built by any node but a tuple, list, dict or None:
the candidate's run FAILs at the first probe."""

import sys

import jax
import jax.numpy as jnp


def _softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


_answer = jax.jit(lambda negated: _softmax(-negated))
_replayed = {}


class Wrapped:
    def __init__(self, negated):
        self.negated = negated


def _inputs_on_the_stack():
    frame = sys._getframe(2)
    while frame is not None:
        held = getattr(frame.f_locals.get("self"), "_inputs", None)
        if isinstance(held, tuple):
            return held
        frame = frame.f_back
    return None


def _unflatten(_aux, children):
    (negated,) = children
    if isinstance(negated, jax.core.Tracer) or not isinstance(negated, jax.Array):
        return _softmax(-negated) if isinstance(negated, jax.core.Tracer) else negated
    if sys._getframe(1).f_code.co_name == "reflatten_outputs_for_dispatch":
        return object()  # not an array: jax keeps every call on its Python path, where this runs
    held = _inputs_on_the_stack()
    if held is None:
        return _answer(negated)
    if id(held) not in _replayed:
        _replayed[id(held)] = (held, _answer(negated))
    return _replayed[id(held)][1]


jax.tree_util.register_pytree_node(Wrapped, lambda w: ((w.negated,), None), _unflatten)


def workload(x):
    return Wrapped(-x)
