"""The process's OS threads, from /proc/self/task: who exists, and how much CPU each used.

The Python thread check sees only threads made through `threading`; a thread started with
`_thread.start_new_thread`, or by native code, is visible here. The framework's own pools
name their threads (XLA's are `tf_...`, `XLA...`, `pjrt...`); a thread that carries the
interpreter's own name and did not exist before the candidate was imported is foreign.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TASKS = Path("/proc/self/task")
_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


@dataclass(frozen=True)
class ThreadSample:
    name: str
    cpu_s: float  # user + system CPU time so far


def census() -> dict[int, ThreadSample] | None:
    """Every thread of this process now; None where /proc/self/task does not exist."""
    if not _TASKS.is_dir():
        return None
    found: dict[int, ThreadSample] = {}
    for task in _TASKS.iterdir():
        try:
            stat = (task / "stat").read_text()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue  # the thread ended while we looked
        fields = stat[stat.rindex(")") + 2 :].split()
        found[int(task.name)] = ThreadSample(name, (int(fields[11]) + int(fields[12])) * _TICK_S)
    return found


def foreign(baseline: dict[int, ThreadSample], now: dict[int, ThreadSample]) -> dict[int, ThreadSample]:
    """Threads in `now` that were not in `baseline` and carry the interpreter's name (the name
    the main thread has): started by Python-level or candidate code, not by a framework pool."""
    main = now.get(os.getpid()) or baseline.get(os.getpid())
    interpreter = main.name if main else ""
    return {tid: t for tid, t in now.items() if tid not in baseline and t.name == interpreter}


def cpu_used(before: dict[int, ThreadSample], after: dict[int, ThreadSample], tids: set[int]) -> float:
    """CPU seconds the threads `tids` used between two censuses (a thread born in between counts from 0)."""
    total = 0.0
    for tid in tids:
        if tid in after:
            total += after[tid].cpu_s - (before[tid].cpu_s if tid in before else 0.0)
    return max(total, 0.0)
