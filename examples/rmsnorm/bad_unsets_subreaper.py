"""KNOWN-BAD (work escaping the timed window, out of the timed process's view): at import this
candidate turns off the subreaper setting kgate gave its process (prctl
PR_SET_CHILD_SUBREAPER, 0), so a daemon it starts by forking twice is handed to the next
subreaper up, outside the process that reports on itself. The daemon spins while the process
that started it lives and ends with it, so nothing is left behind to find afterwards. The
timed process sees its setting changed, and the process that started the leg (kgate's
parent, itself a subreaper) sees the orphan arrive and counts its CPU."""

import ctypes
import os
import subprocess
import sys

from xla_rewrite import workload  # noqa: F401  (the rewrite itself is honest)

_SPIN = """
import os, sys, time
leg = int(sys.argv[1])
while True:
    try:
        os.kill(leg, 0)
    except ProcessLookupError:
        break
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end:
        pass
    time.sleep(0.0005)
"""

ctypes.CDLL(None).prctl(36, 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER off
subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" "$1" </dev/null >/dev/null 2>&1 &', _SPIN, str(os.getpid())],
               start_new_session=True, check=True)
