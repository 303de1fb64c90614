"""What the surface watch costs a leg that runs candidate code: its three snapshots (kgate's
modules and what a timed call goes through, `hot`; the array library's public modules too,
`public`; every loaded jax, jaxlib, numpy and ml_dtypes module, `deep`), then a diff of each,
read from the live namespaces (`SurfaceSnapshot.diff`, what a leg runs after every candidate call
and timed round), the same diff without reading what each callable holds (closure cells,
partials, properties: the `held` column is what that reading costs), and by walking every
watched module by name again (`_walked_diff`, what it ran before), side by side in one process,
interleaved. Run by hand:

    .venv/bin/python benchmarks/surface_watch.py [--repeats 20]

Both must find nothing here (no candidate ran); the ratio is of medians.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    from kgate.backends import get_backend
    from kgate.backends.jax_backend import load_lazy_modules

    load_lazy_modules()  # as a leg has them
    backend = get_backend("jax")
    import kgate.verify.measure  # noqa: F401  (what a leg that times has loaded)
    import kgate.verify.probes  # noqa: F401
    from kgate.verify.watch import Watch

    start = time.perf_counter()
    watch = Watch(backend)
    print(f"the three snapshots: {time.perf_counter() - start:.3f} s")
    print(f"{'depth':<7} {'bindings':>8} {'holding':>8} {'live (ms)':>10} {'no held (ms)':>13} {'held':>6} "
          f"{'walked (ms)':>12} {'walked/live':>11}")
    for depth, snapshot in watch.snapshots.items():
        bare = dataclasses.replace(snapshot, held={}, _watched=[])  # the same diff, what callables hold unread
        snapshot.diff()  # the first diff reads what the snapshot kept into its list
        bare.diff()
        live, unheld, walked = [], [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            found = snapshot.diff()
            live.append(time.perf_counter() - t)
            t = time.perf_counter()
            plain = bare.diff()
            unheld.append(time.perf_counter() - t)
            t = time.perf_counter()
            again = snapshot._walked_diff(False)
            walked.append(time.perf_counter() - t)
            assert found == plain == again == [], (found, plain, again)
        a, h, b = (statistics.median(x) * 1e3 for x in (live, unheld, walked))
        print(f"{depth:<7} {len(snapshot.entries):>8} {len(snapshot.held):>8} {a:>10.1f} {h:>13.1f} {a / h:>5.2f}x "
              f"{b:>12.1f} {b / a:>10.1f}x")


if __name__ == "__main__":
    main()
