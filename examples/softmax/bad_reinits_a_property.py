"""KNOWN-BAD (a patch that keeps every identity kgate compares): a property is an object whose
`__init__` can be called again, in place. At import this candidate re-initialises the `dtype`
property of jax's array class with a getter that passes the real one on and counts each read
(kgate reads every output's dtype as it grades and copies it): the property stays the same
object, the class keeps the same members, so only a watch of what it holds sees the swap."""

import jax
import jax.numpy as jnp
from jax._src import array

READS = [0]
_prop = vars(array.ArrayImpl)["dtype"]
_real = _prop.fget


def _counting(self):
    READS[0] += 1
    return _real(self)


property.__init__(_prop, _counting, _prop.fset, _prop.fdel, _prop.__doc__)


def workload(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    ones = jnp.ones((x.shape[-1], 1), dtype=x.dtype)
    return e / jnp.dot(e, ones, precision=jax.lax.Precision.HIGHEST)
