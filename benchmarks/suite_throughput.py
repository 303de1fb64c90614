"""Suite throughput: the same suite run by each executor, side by side in one run, as rows per
minute and as a ratio to one row at a time in this process. Run by hand:

    .venv/bin/python benchmarks/suite_throughput.py [--jobs 2] [--no-ray]

The suite is built from the bundled cumsum and softmax problems (two correct rewrites, wrong
ones, one that does not import) in a temporary folder; each executor gets a fresh results folder, so
every row runs. The Ray executor starts a local cluster with this machine's cores (its start
is counted: a suite on an existing cluster does not pay it). Every executor must give the same
statuses; the benchmark says so, or stops.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from kgate.suite import discover
from kgate.suite.executors import InProcess, Pool, RayExecutor
from kgate.suite.run import SuiteRequest, run_suite

EX = Path(__file__).resolve().parent.parent / "examples"
TREE = {  # candidates that stand alone (no sibling module to import); quick op-points
    "cumsum": ["xla_rewrite.py", "same_work.py", "bad_exclusive.py", "bad_bf16_accumulate.py"],
    "softmax": ["bad_no_max_subtraction.py"],
}


def tree(root: Path) -> Path:
    for problem, candidates in TREE.items():
        folder = root / "suite" / problem
        folder.mkdir(parents=True)
        for name in ["reference.py", *candidates]:
            shutil.copy(EX / problem / name, folder / name)
    (root / "suite" / "cumsum" / "crashes_at_import.py").write_text("raise RuntimeError('does not import')\n")
    return root / "suite"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="the local pool's size")
    parser.add_argument("--no-ray", action="store_true", help="leave the Ray executor out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        suite = tree(Path(tmp))
        entries = tuple(discover(suite, klass="xla-rewrite"))
        runs = [("in process, one at a time", InProcess), (f"local pool of {args.jobs}", lambda: Pool(args.jobs))]
        if not args.no_ray:
            runs.append(("ray (a local cluster, its start counted)", RayExecutor))
        per_problem = ", ".join(f"{p}: {sum(e.problem == p for e in entries)}" for p in TREE)
        print(f"{len(entries)} rows ({per_problem}) on {os.cpu_count()} cores")
        seconds: dict[str, float] = {}
        statuses: dict[str, dict[str, str]] = {}
        for i, (name, make) in enumerate(runs):
            request = SuiteRequest(entries, Path(tmp) / f"results-{i}", budget_s=2.0, phase_budget_s=120.0)
            started = time.perf_counter()
            rows = run_suite(request, executor=make())
            seconds[name] = time.perf_counter() - started
            statuses[name] = {f"{r.problem}/{r.candidate}": r.status for r in rows}
            print(f"  {name:42s} {seconds[name]:7.1f} s  {60 * len(rows) / seconds[name]:5.1f} rows/min")
        first = next(iter(statuses.values()))
        if any(s != first for s in statuses.values()):
            raise SystemExit(f"the executors disagree: {statuses}")
        base = next(iter(seconds.values()))
        print("throughput vs one at a time: " + ", ".join(f"{name}: {base / s:.2f}x" for name, s in seconds.items()))
        print("statuses, the same under every executor: " + ", ".join(f"{k} {v}" for k, v in sorted(first.items())))


if __name__ == "__main__":
    main()
