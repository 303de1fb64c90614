"""KNOWN-BAD (work escaping the timed window, in a process that hides its parentage): at import
this candidate starts a daemon the classic way, a shell that puts a busy Python process in
the background in a session of its own and exits at once. The daemon is nobody's child
any more; it spins from then on, slowing what is timed beside it. kgate makes the timed
process the subreaper of everything below it before the candidate's import, so the orphan
is handed to it and stays counted."""

import subprocess
import sys

from xla_rewrite import workload  # noqa: F401  (the rewrite itself is honest)

_SPIN = "import time\nwhile True:\n    end = time.perf_counter() + 0.002\n    while time.perf_counter() < end:\n        pass\n    time.sleep(0.0005)\n"

subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" </dev/null >/dev/null 2>&1 &', _SPIN],
               start_new_session=True, check=True)
