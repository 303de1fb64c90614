"""KNOWN-BAD (work escaping the timed window, in another process): on its first trace this
candidate starts a second Python process that keeps a core busy from then on, slowing
whatever is timed beside it (on a shared CPU, the reference's rounds as much as its own).
No thread of the timed process does it, so no thread count sees it: only a count of the
processes below the timed one, and their CPU time, does."""

import subprocess
import sys

from xla_rewrite import workload as _kernel_workload

_SPIN = """
import time
while True:
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end:
        pass
    time.sleep(0.0005)
"""
_STARTED: list[subprocess.Popen] = []


def workload(x, w):
    if not _STARTED:
        _STARTED.append(subprocess.Popen([sys.executable, "-c", _SPIN], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return _kernel_workload(x, w)
