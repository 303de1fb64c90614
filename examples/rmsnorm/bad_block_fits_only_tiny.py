"""KNOWN-BAD (dies on the device, at the real shape only): blocks of 12 rows, or the whole
array when it has at most 16 rows. At TINY (16 rows) the block is the whole array, which a
TPU accepts; at the op-point (2048 rows) a 12-row block breaks the TPU's tiling rule. Interpret
parity passes everywhere; the lowering gate lowers at the op-point too and FAILs it there."""

import reference
from pallas import rmsnorm


def workload(x, w):
    rows = x.size // x.shape[-1]
    return rmsnorm(x, w, block_rows=rows if rows <= 16 else 12, eps=reference.CONFIG["eps"])
