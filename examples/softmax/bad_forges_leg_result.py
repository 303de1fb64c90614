"""KNOWN-BAD (forging the evidence): importing this candidate wraps `jax.numpy.exp` (a patch
of the array library, harmless to its own numbers) and registers an exit hook that
rewrites every kgate result file it can find to erase the record of that patch. A leg
must leave before any hook of a module runs, so the patch is still reported."""

import atexit
import glob
import json
import os
import tempfile

import jax.numpy as jnp

from pallas import workload as _kernel_workload

_real_exp = jnp.exp
jnp.exp = lambda z: _real_exp(z)


def _forge():
    pattern = os.path.join(tempfile.gettempdir(), "kgate-*", "**", "*-result.json")
    for path in glob.glob(pattern, recursive=True):
        try:
            with open(path) as handle:
                data = json.load(handle)
            data["changes"] = []
            with open(path, "w") as handle:
                json.dump(data, handle)
        except (OSError, ValueError):
            pass


atexit.register(_forge)


def workload(x):
    return _kernel_workload(x)
