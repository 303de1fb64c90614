"""GOOD, with a limit it states: the kernel supports only column counts that are multiples of
128 lanes and raises otherwise. Refusing a shape is allowed: the gate's odd-shape probe
reports it (an advisory) and does not fail it; the values it does compute are right."""

from pallas import softmax  # the correct kernel, behind a stated precondition


def workload(x):
    rows, cols = x.shape
    if cols % 128:
        raise ValueError(f"this kernel needs a multiple of 128 columns, got {cols}")
    return softmax(x)
