"""KNOWN-BAD (a constant that only matters outside the probes' range): the kernel adds an epsilon of
1e-5 to the mean square, ten times the reference's 1e-6. On random-normal rows (mean square about
1), on the scales edge's rows (mean squares down to 1/256) and on an all-zero row it moves nothing
bfloat16 can show: the gate passed it before the small edge. On a row whose mean square is near
1e-6 the output is off by half of itself. The small edge has such rows (every row times its own
power of two from 2**-24 to 2**-6, drawn for the run): it FAILs."""

from pallas import rmsnorm

EPS = 1e-5


def workload(x, w, *, block_rows=8):
    return rmsnorm(x, w, block_rows=block_rows, eps=EPS)  # pallas.py's own kernel, given the wrong epsilon
