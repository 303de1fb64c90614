"""KNOWN-BAD (integrity): patches the reference's class so that, in any process that loads both,
the reference computes what this candidate computes (a GELU dropped for a ReLU). Reference and
oracle come from a process that never imports the candidate, and the patch on the reference's
class is named as a change to the reference."""

import jax
import jax.numpy as jnp

import reference

from pallas import linear_gelu  # noqa: F401  (the kernel it would have used)


def _relu_forward(self, x):
    return jax.nn.relu(x @ self.weight.T + self.bias)


reference.Model.forward = _relu_forward


class Model(reference.Model):
    def forward(self, x):
        return jnp.maximum(x @ self.weight.T + self.bias, 0.0)
