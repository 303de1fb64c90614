"""KNOWN-BAD (work escaping the timed window, below `threading`): on its first call this
candidate starts a thread with `_thread.start_new_thread`, invisible to
`threading.enumerate()`, that keeps the CPU busy from then on, slowing whatever is
timed. Only a count of the process's OS threads, and their CPU time, shows it."""

import _thread
import time

from pallas import workload as _kernel_workload

_STARTED = []


def _spin():
    while True:
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass
        time.sleep(0.0005)


def workload(x, w):
    if not _STARTED:
        _STARTED.append(_thread.start_new_thread(_spin, ()))
    return _kernel_workload(x, w)
