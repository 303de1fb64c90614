"""KNOWN-BAD (its own calls scheduled apart from the reference's, class 7): an honest softmax rewrite
whose calling thread runs under SCHED_FIFO (real time: no ordinary thread on the machine preempts it)
for the length of the call, and under the normal policy again before it returns; between calls,
where kgate's watch in the timed process reads the threads, nothing has changed. A red-team candidate
ran 8x faster so on a busy machine. Where real-time scheduling is not allowed (it needs privileges)
it pins the thread to one core instead, as visible a change. kgate's parent reads how the timed
leg's threads are scheduled from outside it, every 0.1 s after the candidate's import:
`measure.parent_scheduling` FAILs (ANOMALY). (A candidate whose real-time threads fill every core
leaves the parent no core to look from: see the README's table, class 7.)"""

import os
import threading

import torch
import torch.nn as nn

_EVERY_CORE = sorted(os.sched_getaffinity(0))


def _set(policy, priority, cores):
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, policy, os.sched_param(priority))
    except OSError:
        os.sched_setaffinity(tid, cores)


class ModelNew(nn.Module):
    def forward(self, x):
        _set(os.SCHED_FIFO, 1, _EVERY_CORE[:1])
        try:
            e = torch.exp(x - x.amax(dim=1, keepdim=True))
            return e / e.sum(dim=1, keepdim=True)
        finally:
            _set(os.SCHED_OTHER, 0, _EVERY_CORE)
