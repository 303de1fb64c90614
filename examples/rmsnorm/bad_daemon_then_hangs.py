"""KNOWN-BAD (work left behind by a leg that never finishes): at import this candidate starts a
daemon the classic way (a shell that puts a busy Python process in the background in a session
of its own, and exits), then hangs on its first call. kgate stops the leg when the phase runs
past its budget; the daemon, in no process group of the leg's, would spin on beside whatever
runs next (the next leg, the next candidate of a suite) unless kgate stops it too. Its command
line carries `kgate-bad-daemon-then-hangs`, so a test can look for it."""

import subprocess
import sys
import time

from xla_rewrite import workload as _rewrite

_SPIN = "import time\nwhile True:\n    end = time.perf_counter() + 0.002\n    while time.perf_counter() < end:\n        pass\n    time.sleep(0.0005)\n"

subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" kgate-bad-daemon-then-hangs </dev/null >/dev/null 2>&1 &',
                _SPIN], start_new_session=True, check=True)


def workload(*args):
    time.sleep(3600)  # never returns: the phase budget ends the leg
    return _rewrite(*args)
