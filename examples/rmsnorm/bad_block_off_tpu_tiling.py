"""KNOWN-BAD (dies on the device): the right RMSNorm kernel with blocks of 4 rows. Interpret
mode runs any block shape, so parity passes on a CPU; a TPU host rejects it at compile time,
because the second-to-last block dimension must be a multiple of 8 (16 for bfloat16) or the
array's own. The lowering gate lowers it for TPU on any machine and FAILs it there."""

import reference
from pallas import rmsnorm


def workload(x, w):
    return rmsnorm(x, w, block_rows=4, eps=reference.CONFIG["eps"])
