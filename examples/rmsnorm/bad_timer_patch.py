"""KNOWN-BAD (timer patching): importing this candidate replaces time.perf_counter and
time.perf_counter_ns with clocks that run at half speed, so anything timed afterwards
looks twice as fast."""

import time

from aa_copy import workload  # noqa: F401  (the computation itself is honest)

_real_ns = time.perf_counter_ns
_real = time.perf_counter
_start_ns = _real_ns()
_start = _real()

time.perf_counter_ns = lambda: _start_ns + (_real_ns() - _start_ns) // 2
time.perf_counter = lambda: _start + (_real() - _start) / 2
