"""Known-bad (timer or harness patching, class 7): an honest softmax that, after a timed call
the reference's follows in the same round, leaves `torch.softmax` rebound to a wrapper that first puts the original back and
then computes the softmax eight times over. The reference's next timed call pays for it; by the
end of the round nothing is left rebound, so a check between rounds sees torch as it was. It
reads 4-5x faster than torch's own softmax. kgate reads the bindings the reference looks up
before each of its timed calls: `integrity.process_untouched` FAILs (an ANOMALY)."""

import sys

import torch
import torch.nn as nn

_softmax = torch.softmax


def _slow(*args, **kwargs):
    torch.softmax = _softmax  # taken back at once, inside the reference's own call
    for _ in range(7):
        _softmax(*args, **kwargs)
    return _softmax(*args, **kwargs)


def _reference_follows() -> bool:
    """Whether kgate's timed round on the stack times the reference after this call (read from
    the round's own variables), so that nothing is left for the check after the round."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_round":
            state = frame.f_locals
            return bool(state.get("cand_first")) or len(state.get("c_row", ())) < state.get("per_round", 0) - 1
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        out = e / e.sum(dim=1, keepdim=True)
        if _reference_follows():
            torch.softmax = _slow
        return out
