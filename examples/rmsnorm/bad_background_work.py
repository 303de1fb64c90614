"""KNOWN-BAD (work escaping the timed window): each call hands part of its work to a
background thread and returns at once; the thread then runs during whatever is timed
next (usually the reference), so the candidate looks fast and the reference slow."""

import threading
import time

import jax

import reference


def _finish_later(seconds):
    time.sleep(0.0005)  # let the call return first
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:  # holds the interpreter while the next call is timed
        pass


def _hand_off(out):
    threading.Thread(target=_finish_later, args=(0.003,), daemon=True).start()
    return out


def workload(x, w):
    out = reference.workload(x, w)
    return jax.pure_callback(_hand_off, jax.ShapeDtypeStruct(out.shape, out.dtype), out)
