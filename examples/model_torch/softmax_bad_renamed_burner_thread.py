"""Known-bad (background work, class 5): an honest softmax whose import starts a Python thread
that renames its OS thread after a framework pool's and burns CPU between the candidate's calls,
where the reference is timed. The OS-thread census looks for threads with the interpreter's name;
this one has another. kgate counts the Python threads alive after each candidate call against
those alive before the candidate's import: `integrity.threads_quiet` FAILs (an ANOMALY)."""

import threading

import torch
import torch.nn as nn


def _burn():
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as comm:
            comm.write("pt_worker")
    except OSError:
        pass
    while True:
        sum(i * i for i in range(20000))


threading.Thread(target=_burn, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
