"""The sequential stop, tried against what it promises (issue 14's acceptance). Run by hand:

    .venv/bin/python benchmarks/sequential_stopping.py [--aa-runs 100] [--slow-runs 20] [--old REV]

1. A/A: a candidate identical to the reference, `kgate measure --bar "speedup > 1.02x"`,
   many runs: how often the bar is MET (must be at most 5 in 100, target 0) and how often
   the interval contains 1.0 (at least 95 in 100), with the sequential stop on.
2. A known 3% slowdown (the same loop, 3% more iterations), `--bar "speedup > 1x"`: how
   often the interval lies wholly below 1.0, and each run's wall time (at least 18 of 20
   within 10 s).
3. The bundled cumsum rewrite (~3.8x) against a 2x bar, `kgate verify --mode screen`, this
   kgate against the kgate at --old REV (before the sequential stop), interleaved, side
   by side: the ratio of their median wall times (target: at most a third).

Everything runs in fresh processes (`python -m kgate ...`), as a user would run it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CUMSUM = ROOT / "examples" / "cumsum"
OLD_REV = "bcd5fdf"  # the last commit with the fixed-budget timing

LOOP = '''import jax
import jax.numpy as jnp

CONFIG = {{"n": 128, "steps": {steps}}}


def create_inputs(seed=0):
    return (jax.random.normal(jax.random.key(seed), (CONFIG["n"], CONFIG["n"]), jnp.float32),)


def workload(x):
    return jax.lax.fori_loop(0, CONFIG["steps"], lambda i, v: jnp.sin(v) * 0.5 + v * 0.5, x)
'''

SLOWER = '''import jax
import jax.numpy as jnp
from reference import CONFIG


def workload(x):  # 3% more iterations of the same loop: extra work of known size
    return jax.lax.fori_loop(0, CONFIG["steps"] * 103 // 100, lambda i, v: jnp.sin(v) * 0.5 + v * 0.5, x)
'''


def kgate(args: list[str], src: Path = ROOT / "src") -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kgate", *args, "--json"], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    try:
        return wall, json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.exit(f"kgate {' '.join(args)} printed no JSON (exit {proc.returncode}): {proc.stderr[-800:]}")


def aa(folder: Path, runs: int) -> None:
    met = contains = 0
    walls = []
    for i in range(runs):
        wall, data = kgate(["measure", "-r", str(folder / "reference.py"), "-c", str(folder / "copy.py"),
                            "--bar", "speedup > 1.02x"])
        sp = data["gates"]["timing"]["speedup"]
        met += data["gates"]["bar"]["outcome"] == "MET"
        contains += float(sp["low"]) <= 1.0 <= float(sp["high"])
        walls.append(wall)
        print(f"  A/A run {i + 1}: [{float(sp['low']):.4f}, {float(sp['high']):.4f}] "
              f"{data['gates']['bar']['outcome']} in {wall:.1f} s", flush=True)
    print(f"A/A, {runs} runs: bar 'speedup > 1.02x' MET in {met} (must be <= {runs * 5 // 100}, target 0); "
          f"interval contains 1.0 in {contains} (must be >= {runs * 95 // 100}); median wall {statistics.median(walls):.1f} s")


def slowdown(folder: Path, runs: int) -> None:
    below = in_time = 0
    for i in range(runs):
        wall, data = kgate(["measure", "-r", str(folder / "reference.py"), "-c", str(folder / "slower.py"),
                            "--bar", "speedup > 1x"])  # MISSED, confidently, is the detection
        sp = data["gates"]["timing"]["speedup"]
        hit = float(sp["high"]) < 1.0
        below += hit
        in_time += hit and wall <= 10.0
        print(f"  3% slower run {i + 1}: {float(sp['estimate']):.4f} [{float(sp['low']):.4f}, {float(sp['high']):.4f}]"
              f" in {wall:.1f} s: {data['gates']['timing']['method']['stop_reason']}", flush=True)
    print(f"3% slowdown, {runs} runs: interval below 1.0 in {below}, of them within 10 s: {in_time} "
          f"(must be >= {-(-runs * 9 // 10)})")


def old_tree(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    path = into / "old.tar"
    path.write_bytes(archive)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def cumsum(rev: str, runs: int, tmp: Path) -> None:
    old_src = old_tree(rev, tmp / "old")
    args = ["verify", "-r", str(CUMSUM / "reference.py"), "-c", str(CUMSUM / "xla_rewrite.py"), "--class",
            "xla-rewrite", "--bar", "speedup > 2x", "--lock-dir", str(tmp), "-o", str(tmp / "r.json")]
    new, old = [], []
    for _ in range(runs):  # interleaved: a busy spell hits both
        wall, data = kgate(args)
        new.append((wall, data["gates"]["bar"]["outcome"]))
        wall, data = kgate(args, old_src)
        old.append((wall, data["gates"]["bar"]["outcome"]))
    n, o = statistics.median(w for w, _ in new), statistics.median(w for w, _ in old)
    print(f"cumsum rewrite vs a 2x bar, screen verify, {runs} runs each: this kgate {n:.1f} s "
          f"(outcomes {[x for _, x in new]}), kgate {rev} {o:.1f} s (outcomes {[x for _, x in old]}); "
          f"ratio {n / o:.2f} (target <= 0.33)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aa-runs", type=int, default=100)
    parser.add_argument("--slow-runs", type=int, default=20)
    parser.add_argument("--cumsum-runs", type=int, default=3)
    parser.add_argument("--old", default=OLD_REV, help="the kgate revision to compare the cumsum verify with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        loop = tmp / "loop"
        loop.mkdir()
        (loop / "reference.py").write_text(LOOP.format(steps=100))
        (loop / "copy.py").write_text("from reference import workload  # noqa: F401\n")
        (loop / "slower.py").write_text(SLOWER)
        if args.cumsum_runs:
            cumsum(args.old, args.cumsum_runs, tmp)
        if args.slow_runs:
            slowdown(loop, args.slow_runs)
        if args.aa_runs:
            aa(loop, args.aa_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
