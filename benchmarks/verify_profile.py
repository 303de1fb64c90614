"""Where a screen verify's seconds go, on the bundled examples, and what an interpreted kernel
costs now that it is not timed. Run by hand:

    .venv/bin/python benchmarks/verify_profile.py [--budget 20]

For each example it runs `kgate verify --json` in a fresh process and prints the wall time
and each leg's phases as kgate recorded them (the receipt's `seconds`), grouped by what the
phase does. For the interpreted Pallas kernel it also runs `kgate gate` at the same op-point
and prints the ratio (issue 14's target: verify of an interpreted kernel <= 1.5x the gate),
and the same verify with --time-interpreted, side by side in one run. Last, each example's
verify with the measure leg started ahead (KGATE_START_AHEAD=1) and without (=0), alternated
over --repeats runs, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# (label, reference, candidate, class)
RUNS = [
    ("rmsnorm xla_rewrite (compiled, timed)", "rmsnorm/reference.py", "rmsnorm/xla_rewrite.py", "xla-rewrite"),
    ("cumsum xla_rewrite (compiled, timed)", "cumsum/reference.py", "cumsum/xla_rewrite.py", "xla-rewrite"),
    ("rmsnorm pallas (interpreted, not timed)", "rmsnorm/reference.py", "rmsnorm/pallas.py", "kernel-authored"),
    ("torch softmax rewrite (eager torch, timed)", "model_torch/softmax_reference.py", "model_torch/softmax_rewrite.py",
     "rewrite"),
]

GROUPS = (  # the first words of a phase name -> what it does
    ("starting", "start"), ("importing", "import"), ("making inputs", "inputs"), ("waiting", "wait"),
    ("compiling", "compile"), ("tracing", "trace"), ("running", "run"), ("reference and oracle", "reference+oracle"),
    ("firing", "firing"), ("timing", "timing"), ("checking", "check"),
)


def group(phase: str) -> str:
    return next((name for prefix, name in GROUPS if phase.startswith(prefix)), "other")


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, dict]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - started
    try:
        return wall, json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{' '.join(cmd)} printed no JSON (exit {proc.returncode}): {proc.stderr[-800:]}")


def verify(ref: str, cand: str, klass: str, budget: float, tmp: Path, *extra: str,
           env: dict[str, str] | None = None) -> tuple[float, dict]:
    return run([sys.executable, "-m", "kgate", "verify", "-r", str(EXAMPLES / ref), "-c", str(EXAMPLES / cand),
                "--class", klass, "--budget", str(budget), "--lock-dir", str(tmp), "-o", str(tmp / "r.json"),
                "--json", *extra], env)


def start_ahead(budget: float, repeats: int, tmp: Path) -> None:
    print(f"\nthe measure leg started ahead, or not ({os.cpu_count()} cores; medians of {repeats} alternated runs):")
    for label, ref, cand, klass in RUNS:
        walls: dict[str, list[float]] = {"1": [], "0": []}
        for _ in range(repeats):
            for flag in walls:
                walls[flag].append(verify(ref, cand, klass, budget, tmp, env={"KGATE_START_AHEAD": flag})[0])
        ahead, after = statistics.median(walls["1"]), statistics.median(walls["0"])
        print(f"  {label:42s} ahead {ahead:5.1f} s  after the checks {after:5.1f} s  ratio {ahead / after:.2f}")


def show(label: str, wall: float, data: dict) -> None:
    seconds = data.get("seconds", {})
    print(f"\n{label}: {wall:.1f} s wall, status {data.get('status')}")
    for leg, phases in seconds.get("legs", {}).items():
        spent: dict[str, float] = {}
        for phase, s in phases:
            spent[group(phase)] = spent.get(group(phase), 0.0) + float(s)
        print(f"  {leg:24s} " + "  ".join(f"{k} {v:.1f}" for k, v in spent.items() if v >= 0.05))
    print(f"  {'grading':24s} {float(seconds.get('grading_s', 0.0)):.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        for label, ref, cand, klass in RUNS:
            show(label, *verify(ref, cand, klass, args.budget, tmp))
        ref, cand = EXAMPLES / "rmsnorm/reference.py", EXAMPLES / "rmsnorm/pallas.py"
        config = json.loads(subprocess.run(
            [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ref.parent)!r}); import json, reference; "
             "print(json.dumps(reference.CONFIG))"], capture_output=True, text=True, check=True).stdout)
        at_op_point = [f"--set={k}={v}" for k, v in config.items()]
        gate_wall, _ = run([sys.executable, "-m", "kgate", "gate", "-r", str(ref), "-c", str(cand), *at_op_point,
                            "--json"])
        verify_wall, _ = verify("rmsnorm/reference.py", "rmsnorm/pallas.py", "kernel-authored", args.budget, tmp)
        timed_wall, _ = verify("rmsnorm/reference.py", "rmsnorm/pallas.py", "kernel-authored", args.budget, tmp,
                               "--time-interpreted")
        start_ahead(args.budget, args.repeats, tmp)
    print(f"\ninterpreted Pallas rmsnorm at the bundled op-point ({config}):")
    print(f"  kgate gate at the op-point:            {gate_wall:.1f} s")
    print(f"  kgate verify (not timed, the default): {verify_wall:.1f} s  = {verify_wall / gate_wall:.2f}x the gate "
          "(target <= 1.5x)")
    print(f"  kgate verify --time-interpreted:       {timed_wall:.1f} s  = {timed_wall / gate_wall:.2f}x the gate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
