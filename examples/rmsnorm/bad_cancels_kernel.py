"""KNOWN-BAD (kernel cancelled out): the kernel leaves the weight out (wrong), and the output
is `k + stop_gradient(answer - k)`: numerically the reference's answer, with the kernel's
result cancelled. Perturbing the kernel moves only the lowest bits, below what parity
could ever see; replacing it with zeros still passes parity."""

import jax
import jax.numpy as jnp

import reference
from pallas import rmsnorm


def workload(x, w):
    k = rmsnorm(x, jnp.ones_like(w), eps=reference.CONFIG["eps"])
    answer = reference.workload(x, w)
    return k + jax.lax.stop_gradient(answer - k)
