"""KNOWN-BAD (grader patching, then covering it up): like `bad_erases_the_watch_record.py`, and on
its first trace it also puts a pipe of its own in place of the channel kgate's leg reports to its
parent on, with a thread that forwards every line but the seals of the watch's changes to the
real one; its second call puts the real channel back. kgate writes on that channel only while it
is the pipe the leg was given: the leg stops at its next line, without a result, and the run
FAILs (parity.candidate_ran)."""

import os
import threading

from bad_erases_the_watch_record import patch_kgate, restore_and_erase
from pallas import workload as _kernel_workload

_calls = [0]
_real = []


def _filter(source: int, target: int) -> None:
    with os.fdopen(source, "rb") as lines:
        for line in lines:
            if not line.startswith(b'seal ["change'):
                os.write(target, line)


def workload(x, w):
    _calls[0] += 1
    channel = os.environ.get("KGATE_BEAT_FD")
    if _calls[0] == 1:
        if channel:
            _real.append(os.dup(int(channel)))
            read, write = os.pipe()
            os.dup2(write, int(channel))
            os.close(write)
            threading.Thread(target=_filter, args=(read, _real[0]), daemon=True).start()
        patch_kgate()
    else:
        restore_and_erase()
        if channel and _real:
            os.dup2(_real.pop(), int(channel))
    return _kernel_workload(x, w)
