"""A Python loop over a large range: every iteration is traced into the program."""


def workload(x):
    y = x
    for i in range(400_000):
        y = y + 0.0 * i
    return x * 2.0
