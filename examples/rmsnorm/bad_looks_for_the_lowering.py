"""KNOWN-BAD (hostile: shows the device a different kernel): blocks of 4 rows, which a TPU
rejects, except when a frame of kgate's lowering is on the call stack, where it asks for 8.
At TINY the program lowered is the first one parity ran (a fresh trace that differed would
be refused as another program), so its 4-row blocks are what the TPU lowering sees, and the
gate FAILs it there."""

import sys

import reference
from pallas import rmsnorm


def _being_lowered() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in ("lower_for", "lowered_programs"):
            return True
        frame = frame.f_back
    return False


def workload(x, w):
    return rmsnorm(x, w, block_rows=8 if _being_lowered() else 4, eps=reference.CONFIG["eps"])
