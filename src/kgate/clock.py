"""Clocks bound when kgate is imported, before any candidate code exists in the process.

Timing loops use the functions captured here; after a candidate is imported and again
after measuring, `tampered()` names every `time` clock that was replaced since.
"""

from __future__ import annotations

import gc
import random
import resource
import time

_WATCHED = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time")
BOUND = {name: getattr(time, name) for name in _WATCHED}
perf_counter_ns = BOUND["perf_counter_ns"]
_USAGE = resource.getrusage  # bound now, like the clocks
_SYSTEM_RANDOM = random.SystemRandom()  # the OS's entropy, bound before any candidate code exists


def page_faults() -> int:
    """The page faults this process took so far (minor ones: memory mapped or touched afresh)."""
    return _USAGE(resource.RUSAGE_SELF).ru_minflt


_COLLECTOR = (gc.isenabled, gc.disable, gc.enable)  # bound now, like the clocks


def hold_collector() -> bool:
    """Stop the cyclic garbage collector (its pass runs whatever finalizers the candidate hung on
    its garbage); returns whether it was running, for `release_collector`. A timed call holds it
    from the moment its window closes until what it returned is read: nothing the candidate left
    behind can run in between and finish an answer the clock did not see."""
    was = _COLLECTOR[0]()
    _COLLECTOR[1]()
    return was


def release_collector(was: bool) -> None:
    """Let the collector run again, if it ran before `hold_collector`."""
    if was:
        _COLLECTOR[2]()


def draw_seed(taken: tuple[int, ...] | list[int] = ()) -> int:
    """A probe or timing seed nobody could know in advance (recorded once drawn)."""
    while True:
        seed = _SYSTEM_RANDOM.randrange(1, 2**31 - 1)
        if seed not in taken:
            return seed


def pick(n: int) -> int:
    """An index drawn evenly from range(n), from the OS's entropy."""
    return _SYSTEM_RANDOM.randrange(n)


def tampered() -> list[str]:
    """`time.<name>` clocks that no longer are the functions bound at import."""
    return [f"time.{name}" for name, fn in BOUND.items() if getattr(time, name) is not fn]


def restore() -> None:
    """Put the bound clocks back (a candidate's patch must not outlive its run)."""
    for name, fn in BOUND.items():
        setattr(time, name, fn)
