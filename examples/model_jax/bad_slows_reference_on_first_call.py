"""KNOWN-BAD (integrity): at its first call (after every import-time check), rebinds the
reference class's forward to a slower one that gives the same answer, so that in a process
that times both, the reference it is compared with does ten times the work. kgate watches the
reference module, its classes' methods included, after every candidate call."""

import jax
import jax.numpy as jnp

import reference

_patched = []


def _slow_forward(self, x):
    y = x @ self.weight.T
    for _ in range(10):
        y = y + 0.0 * (x @ self.weight.T)
    return jax.nn.gelu(y + self.bias)


class Model(reference.Model):
    def forward(self, x):
        if not _patched:
            _patched.append(True)
            reference.Model.forward = _slow_forward
        return jax.nn.gelu(jnp.dot(x, self.weight.T) + self.bias)
