"""KNOWN-BAD (vacuous problem, HACKS 9): hands the input back, skipping the matmul; the
reference's update is below its output's bfloat16 rounding, so parity alone would pass it."""

import reference  # noqa: F401  (the protocol: the candidate replaces reference.workload)


def workload(x, w):
    return x
