"""KNOWN-BAD (grader patching, then covering it up): like `bad_erases_the_watch_record.py`, and on
its first trace it also puts a pipe of its own in place of the channel kgate's leg reports to its
parent on, with a thread that forwards every line but the seals of the watch's changes to the
real one; its second call puts the real channel back. kgate writes on that channel only while it
is the pipe the leg was given: the leg stops at its next line, without a result, and the run
FAILs (parity.candidate_ran)."""

import gc
import os
import sys
import threading

from pallas import workload as _kernel_workload

_calls = [0]
_kept = {}


def _filter(source: int, target: int) -> None:
    with os.fdopen(source, "rb") as lines:
        for line in lines:
            if not line.startswith(b'seal ["change'):
                os.write(target, line)


def workload(x, w):
    _calls[0] += 1
    parity = sys.modules.get("kgate.gates.parity")
    if parity is not None and _calls[0] == 1:
        channel = os.environ.get("KGATE_BEAT_FD")
        if channel:
            real = os.dup(int(channel))
            read, write = os.pipe()
            os.dup2(write, int(channel))
            os.close(write)
            threading.Thread(target=_filter, args=(read, real), daemon=True).start()
            _kept["real"] = real
        _kept["passes"] = parity.passes
        parity.passes = lambda *args, **kwargs: True
    elif parity is not None and "passes" in _kept:
        parity.passes = _kept.pop("passes")
        channel = os.environ.get("KGATE_BEAT_FD")
        if channel and "real" in _kept:
            os.dup2(_kept.pop("real"), int(channel))
        for obj in gc.get_objects():
            if type(obj).__name__ == "Watch" and isinstance(getattr(obj, "changes", None), list):
                obj.changes.clear()
    return _kernel_workload(x, w)
