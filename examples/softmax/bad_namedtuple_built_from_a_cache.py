"""KNOWN-BAD (code that runs inside the compiled call): the workload returns its output in a
namedtuple whose constructor, which jax calls in Python on every call of the compiled program to
rebuild the output, returns a bare array instead, so the output's structure is the reference's:
the first answer it saw at that shape, whatever the program computed since (an answer replayed on
every later call). kgate refuses an output built by any node but a tuple, list, dict or None: the
candidate's run FAILs at the first probe."""

from collections import namedtuple

import jax
import jax.numpy as jnp

_first = {}


class Probabilities(namedtuple("Probabilities", "p")):
    def __new__(cls, p):
        if isinstance(p, jax.Array) and not isinstance(p, jax.core.Tracer):
            return _first.setdefault(p.shape, p)  # not a Probabilities: the bare, first answer
        return super().__new__(cls, p)


def workload(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return Probabilities(e / jnp.sum(e, axis=-1, keepdims=True))
