"""KNOWN-BAD (probes the candidate can know): at import this candidate rebuilds the inputs a
grader would make for the well-known seeds 42 and 43 (kgate folds the seed into the
reference's hard-coded key), computes the reference's answers for them, and returns the
stored answer when it recognises those inputs; on any other input its kernel forgets the
weight. Only a probe seed nobody knew before the run can tell."""

import jax
import jax.numpy as jnp

import reference
from pallas import workload as _kernel_workload

_real_key = jax.random.key
_known = []
for _seed in (42, 43):
    jax.random.key = lambda k, *a, _s=_seed, **kw: jax.random.fold_in(_real_key(k, *a, **kw), _s)
    try:
        _x, _w = reference.create_inputs()
    finally:
        jax.random.key = _real_key
    _known.append((_x, reference.workload(_x, _w)))


def workload(x, w):
    out = _kernel_workload(x, jnp.ones_like(w))
    for known_x, answer in _known:
        if known_x.shape == x.shape:
            out = jnp.where(jnp.all(x == known_x), answer + (out - jax.lax.stop_gradient(out)), out)
    return out
