"""Ends the process at import with `os._exit(0)`: no exception to catch, no exit hook runs; in
the process that grades it, the exit code would be 0 and there would be no report at all."""

import os

os._exit(0)


def workload(x, w):  # never reached
    return x * w
