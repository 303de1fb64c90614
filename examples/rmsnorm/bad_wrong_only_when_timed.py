"""KNOWN-BAD (tells checking from timing): the honest rewrite in the process that is checked,
and in the process that times it (its command line names the measure leg) a cheaper program
that skips the normalization. Every timed session agrees with the first, so no check inside
the timing process alone can see it; verify compares the timed answer with the checked one."""

import sys

import jax.numpy as jnp

from xla_rewrite import workload as honest

TIMED = "measure" in sys.argv  # `python -m kgate.verify.leg measure -`, or `kgate measure`


def workload(x, w):
    if TIMED:
        return (x.astype(jnp.float32) * w.astype(jnp.float32)).astype(x.dtype)
    return honest(x, w)
