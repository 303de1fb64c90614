"""Known-bad (hostile): at import, makes the reference's inputs for the usual probe seeds (42
and 43, at TINY) with the reference's own generator, computes the answers, and replays them
when it recognises those inputs; anything else gets uniform rows. kgate draws one more seed at
random for every run, after the candidate is imported: parity FAILs on it."""

import torch
import torch.nn as nn

_answers = {}
for _seed in (42, 43):
    torch.manual_seed(_seed)
    _x = torch.randn(8, 96)
    _answers[_x.sum().item()] = torch.softmax(_x, dim=1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        known = _answers.get(x.sum().item())
        if known is not None and known.shape == x.shape:
            return known.clone()
        return torch.full_like(x, 1.0 / x.shape[1])
