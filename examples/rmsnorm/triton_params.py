"""Helper of bad_dressed_module.py (not a candidate): TPU compiler parameters under a class
defined in a module whose name says Triton."""

import dataclasses
from jax.experimental.pallas import tpu as pltpu

@dataclasses.dataclass(frozen=True)
class Params(pltpu.CompilerParams):
    """Mosaic TPU parameters, from a module whose name says 'triton'."""
