"""KNOWN-BAD (hostile: shows the device a different kernel): blocks of 4 rows, which a TPU
rejects, whenever it is traced in interpret mode (where parity runs it), and blocks of 8 rows
when it is traced for the device. The lowering gate traces the candidate both ways and
compares the programs: they must be the same apart from the interpreter's own parameter."""

from jax._src import config

import reference
from pallas import rmsnorm


def workload(x, w):
    interpreted = config.pallas_tpu_interpret_mode_context_manager.value is not None
    return rmsnorm(x, w, block_rows=4 if interpreted else 8, eps=reference.CONFIG["eps"])
