"""The process's OS threads, from /proc/self/task: who exists, and how much CPU each used;
and the processes below it, from /proc/PID/task/TID/children.

The Python thread check sees only threads made through `threading`; a thread started with
`_thread.start_new_thread`, or by native code, is visible here. The framework's own pools
name their threads (XLA's are `tf_...`, `XLA...`, `pjrt...`); a thread that carries the
interpreter's own name and did not exist before the candidate was imported is foreign.

A process started by candidate code (a fork, a `subprocess`, a daemon that forks twice to
lose its parent) works outside every thread count: it can do the candidate's work beside the
timed window or slow whatever else is timed. A process that runs legs is made a child
subreaper (Linux), so an orphan below it is re-parented to it rather than to init and stays
in view. Everything here reads /proc through functions bound at kgate's import.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Bound at kgate's import, before any candidate code exists (the process watch flags a rebinding).
_os_open, _os_read, _os_close, _listdir, _getpid, _times = os.open, os.read, os.close, os.listdir, os.getpid, os.times
_affinity = getattr(os, "sched_getaffinity", None)

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


@dataclass(frozen=True)
class ProcessSample:
    name: str
    cpu_s: float  # user + system CPU time so far (a zombie keeps what it used)
    state: str  # the kernel's one-letter state: Z for a zombie
    session: int  # its session id (a leg started in a session of its own leads it)


def _read(path: str) -> str | None:
    try:
        fd = _os_open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return _os_read(fd, 1 << 16).decode(errors="replace")
    except OSError:
        return None
    finally:
        _os_close(fd)


def process(pid: int) -> ProcessSample | None:
    """One process's name, state and CPU time; None when it is gone (or there is no /proc)."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat or ")" not in stat:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return ProcessSample(name, (int(fields[11]) + int(fields[12])) * _TICK_S, fields[0], int(fields[3]))


def stop(pids: Iterable[int]) -> None:
    """SIGKILL each of `pids` that still exists."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def children(pid: int) -> list[int]:
    """The direct children of `pid`: each of its threads lists the ones it forked (and the
    orphans it was handed as a subreaper)."""
    try:
        tasks = _listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tasks:
        text = _read(f"/proc/{pid}/task/{tid}/children")
        if text:
            found += [int(p) for p in text.split()]
    return found


def scheduling(pid: int | str) -> frozenset[tuple[str, int, int, int]]:
    """How the OS schedules each thread of `pid` now (or "self": this process, whatever its
    pid), as the distinct (CPUs allowed, scheduling policy, real-time priority, nice) among them: a
    thread inherits its starter's, so a process whose code changes none shows the values it started
    with. Empty when it is gone."""
    try:
        tasks = _listdir(f"/proc/{pid}/task")
    except OSError:
        return frozenset()
    found: set[tuple[str, int, int, int]] = set()
    if _affinity is None:  # no way to read a thread's CPUs here
        return frozenset()
    for tid in tasks:
        stat = _read(f"/proc/{pid}/task/{tid}/stat")
        fields = stat[stat.rindex(")") + 2 :].split() if stat and ")" in stat else []
        if len(fields) <= 38:
            continue  # the thread ended while we looked (or a /proc that does not say)
        try:
            cpus = ",".join(map(str, sorted(_affinity(int(tid)))))
        except OSError:  # the thread ended while we looked
            continue
        found.add((cpus, int(fields[38]), int(fields[37]), int(fields[16])))  # policy, rt_priority, nice
    return frozenset(found)


def descendants(pid: int, skip: frozenset[int] = frozenset()) -> dict[int, ProcessSample]:
    """Every process below `pid` now (children, theirs, ...), `skip` and what is below them left out."""
    found: dict[int, ProcessSample] = {}
    queue = [c for c in children(pid) if c not in skip]
    while queue:
        child = queue.pop()
        if child in found:
            continue
        sample = process(child)
        if sample is None:
            continue  # it ended while we looked
        found[child] = sample
        queue += [c for c in children(child) if c not in skip]
    return found


def reaped_cpu() -> float:
    """CPU seconds of this process's children that were waited for (they are gone from /proc)."""
    t = _times()
    return float(t.children_user + t.children_system)


def processes_available() -> bool:
    return _read(f"/proc/{_getpid()}/stat") is not None


_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37


def become_subreaper() -> bool:
    """Make this process the child subreaper of everything below it (Linux): an orphan below is
    re-parented here, never to init, and stays in view. False where it cannot be."""
    try:
        import ctypes

        return int(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def is_subreaper() -> bool | None:
    """Whether this process is still a child subreaper; None where that cannot be asked."""
    try:
        import ctypes

        flag = ctypes.c_int(0)
        if int(ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)) != 0:
            return None
        return bool(flag.value)
    except (OSError, AttributeError):
        return None


# The processes this one started on purpose (legs, fork servers): a child of this process outside
# this set, that was not there before a leg started, came to it as an orphan from below.
_OURS: set[int] = set()


def own(pid: int) -> None:
    _OURS.add(pid)


def strays(before: frozenset[int]) -> dict[int, ProcessSample]:
    """This process's children that it did not start and that were not there in `before` (an
    orphan re-parented here: this process is a subreaper), with everything below them."""
    me = _getpid()
    found: dict[int, ProcessSample] = {}
    for child in children(me):
        if child in _OURS or child in before:
            continue
        sample = process(child)
        if sample is not None:
            found[child] = sample
            found.update(descendants(child))
    return found

