"""KNOWN-BAD (work escaping the timed window): importing this candidate starts a native
thread (`_thread.start_new_thread`, invisible to `threading`) that wakes up every few
milliseconds and burns the CPU, slowing whatever happens to be timed. It starts before any
call, so no per-call thread check sees it appear; the OS still counts it."""

import _thread
import time

from pallas import workload  # noqa: F401


def _burn():
    while True:
        end = time.perf_counter() + 0.003
        while time.perf_counter() < end:
            pass
        time.sleep(0.001)


_thread.start_new_thread(_burn, ())
