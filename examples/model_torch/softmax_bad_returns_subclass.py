"""Known-bad: returns its result as a Tensor subclass (one that could compute lazily, or
answer comparisons its own way). kgate takes only plain torch.Tensor outputs: the candidate's
run FAILs."""

import torch

from softmax_triton import ModelNew as Honest


class Answer(torch.Tensor):
    pass


class ModelNew(Honest):
    def forward(self, x):
        return super().forward(x).as_subclass(Answer)
