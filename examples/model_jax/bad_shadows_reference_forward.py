"""KNOWN-BAD (integrity): at its first call, finds the reference's Model instance in its own
process and shadows its forward with a slower one that gives the same answer (an attribute on
the instance, so the class itself is untouched), hoping that a process timing both calls the
reference through the instance. kgate calls the reference's method as resolved from its class
before the candidate was imported, and names the instance's new attribute."""

import gc
import types

import jax
import jax.numpy as jnp

import reference

_done = []


def _slow_forward(self, x):
    y = x @ self.weight.T
    for _ in range(10):
        y = jax.lax.optimization_barrier(y + 0.0 * (x @ self.weight.T))
    return jax.nn.gelu(y + self.bias)


class Model(reference.Model):
    def forward(self, x):
        if not _done:
            _done.append(True)
            for obj in gc.get_objects():
                if type(obj) is reference.Model:
                    obj.forward = types.MethodType(_slow_forward, obj)
        return jax.nn.gelu(jnp.dot(x, self.weight.T) + self.bias)
