"""KNOWN-BAD (grader patching, then covering it up): like `bad_erases_the_watch_record.py`, and
on its first trace it also writes a seal of its own, for the change the watch is about to
record, on the channel kgate's leg reports to its parent on (named in its environment), so
that kgate's real seal, coming second, would be the one set aside. A name sealed twice means
something else wrote on kgate's channel: integrity.process_untouched (ANOMALY)."""

import gc
import json
import os
import sys

from pallas import workload as _kernel_workload

_calls = [0]
_kept = {}


def workload(x, w):
    _calls[0] += 1
    parity = sys.modules.get("kgate.gates.parity")
    if parity is not None and _calls[0] == 1:
        _kept["passes"] = parity.passes
        parity.passes = lambda *args, **kwargs: True
        channel = os.environ.get("KGATE_BEAT_FD")
        if channel:
            os.write(int(channel), ("seal " + json.dumps(["change 0", "0" * 64, ""]) + "\n").encode())
    elif parity is not None and "passes" in _kept:
        parity.passes = _kept.pop("passes")
        for obj in gc.get_objects():
            if type(obj).__name__ == "Watch" and isinstance(getattr(obj, "changes", None), list):
                obj.changes.clear()
    return _kernel_workload(x, w)
