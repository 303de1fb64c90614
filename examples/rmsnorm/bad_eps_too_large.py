"""KNOWN-BAD (a constant that only matters outside the probes' range): the kernel adds an epsilon of
1e-3 to the mean square, not the reference's 1e-6. On random-normal rows (mean square about 1)
that moves the output by 5e-4 of itself, under one bfloat16 rounding; an all-zero row is zero
either way, and large rows do not feel it. On a row sixteen times smaller (mean square 1/256) the
output is 12% short. The scales edge has such rows: it FAILs."""

from pallas import rmsnorm

EPS = 1e-3


def workload(x, w, *, block_rows=8):
    return rmsnorm(x, w, block_rows=block_rows, eps=EPS)  # pallas.py's own kernel, given the wrong epsilon
