"""KNOWN-BAD (output replay): the kernel runs once; its first answer is cached on the host
and returned for every later input."""

import jax
import numpy as np

import reference
from pallas import rmsnorm

_FIRST_ANSWER = []


def _replay(out):
    if not _FIRST_ANSWER:
        _FIRST_ANSWER.append(np.array(out))
    return _FIRST_ANSWER[0]


def workload(x, w):
    out = rmsnorm(x, w, eps=reference.CONFIG["eps"])
    return jax.pure_callback(_replay, jax.ShapeDtypeStruct(out.shape, out.dtype), out)
