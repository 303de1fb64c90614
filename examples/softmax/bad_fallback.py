"""KNOWN-BAD (fallback to the reference): the kernel is only used on a TPU; everywhere else
the library softmax runs, so the authored kernel is never what was measured."""

import jax

from pallas import softmax


def workload(x):
    if jax.devices()[0].platform == "tpu":
        return softmax(x)
    return jax.nn.softmax(x, axis=-1)
