"""Known-bad (hostile): the Triton softmax, unchanged, in a candidate that covers up a patch. Its
first call rebinds kgate's own host copy of the outputs (an identity wrapper: a patch, however
harmless), and ends by writing a stray byte, without a line end, on the channel kgate's leg
reports to its parent on, so that the next line kgate sends there, a seal, arrives mangled
and unread; its second call puts the function back and empties the list in which kgate's
process watch recorded the change. A seal that arrives mangled means something else wrote on
kgate's channel, and the change's own seal still names it: integrity.process_untouched
(ANOMALY)."""

import gc
import os
import sys

from softmax_triton import ModelNew as Honest

_calls = [0]
_kept = {}


class ModelNew(Honest):
    def forward(self, x):
        _calls[0] += 1
        backend = sys.modules.get("kgate.backends.torch_backend")
        if backend is not None and _calls[0] == 1:
            _kept["host_array"] = original = backend.host_array
            backend.host_array = lambda t: original(t)
        elif backend is not None and "host_array" in _kept:
            backend.host_array = _kept.pop("host_array")
            for obj in gc.get_objects():
                if type(obj).__name__ == "Watch" and isinstance(getattr(obj, "changes", None), list):
                    obj.changes.clear()
        out = super().forward(x)
        channel = os.environ.get("KGATE_BEAT_FD")
        if channel and _calls[0] == 1:
            os.write(int(channel), b"~")
        return out
