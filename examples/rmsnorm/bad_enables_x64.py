"""KNOWN-BAD (a setting for both legs): a correct rewrite that turns on 64-bit types for
the whole process at import. In a process that also compiles and times the reference,
the reference's program changes with it (a flag applied to both legs, set by one of
them). Any change to the array library's settings by candidate code is an integrity
ANOMALY, named."""

import jax

from xla_rewrite import workload  # noqa: F401

jax.config.update("jax_enable_x64", True)
