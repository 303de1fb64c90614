"""What grading in separate processes costs: `kgate gate` (or `kgate verify --mode screen`) of
this tree against the same command of an earlier kgate (default: 500c6c8, the last commit that
graded in the candidate's own process), run side by side, interleaved, on the same examples. Run
by hand:

    .venv/bin/python benchmarks/isolation_cost.py [--runs 5] [--baseline REV] [--command gate|verify]

verify runs verify_overhead.py's case (the softmax rewrite at 512x512, --budget 20), and prints
beside it the bare floor (a fresh process that imports jax, compiles both legs and runs each
once) and each kgate's ratio to it.

The earlier kgate is checked out into a temporary git worktree and run from its source with
this virtual environment. Both print their wall time per command; the ratio is of medians.
Note what differs besides isolation: this tree also probes a random seed and the edge battery
and runs the bypass, so the ratio is an upper bound on the cost of isolation alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [
    ("examples/rmsnorm/reference.py", "examples/rmsnorm/pallas.py"),
    ("examples/softmax/reference.py", "examples/softmax/xla_rewrite.py"),
]


VERIFY_PAIR = ("examples/softmax/reference.py", "examples/softmax/xla_rewrite.py")
SOFTMAX_512 = {"rows": 512, "cols": 512}


def command(kind: str, reference: str, candidate: str, scratch: Path) -> list[str]:
    if kind == "gate":
        return ["gate", "-r", str(ROOT / reference), "-c", str(ROOT / candidate), "--json"]
    from verify_overhead import verify_args

    return verify_args(ROOT / Path(reference).parent, SOFTMAX_512, 20.0, scratch)


def timed(source: Path, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kgate", *argv], capture_output=True, text=True, env=env, cwd=source)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 2) or '"status"' not in proc.stdout:
        raise SystemExit(f"kgate {argv[0]} failed under {source}: {proc.stderr[-400:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="500c6c8")
    parser.add_argument("--command", choices=("gate", "verify"), default="gate")
    args = parser.parse_args()
    pairs = PAIRS if args.command == "gate" else [VERIFY_PAIR]
    with tempfile.TemporaryDirectory(prefix="kgate-baseline-") as scratch:
        baseline = Path(scratch) / "kgate"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(baseline), args.baseline],
                       check=True)
        try:
            print(f"{'pair':58}{'baseline s':>11}{'isolated s':>11}{'ratio':>8}")
            ratios = []
            for reference, candidate in pairs:
                old, new, floors = [], [], []
                argv = command(args.command, reference, candidate, Path(scratch))
                for _ in range(args.runs):  # interleaved: the machine's drift hits all alike
                    old.append(timed(baseline, argv))
                    new.append(timed(ROOT, argv))
                    if args.command == "verify":
                        floors.append(bare_floor())
                ratio = statistics.median(new) / statistics.median(old)
                ratios.append(ratio)
                print(f"{candidate:58}{statistics.median(old):11.2f}{statistics.median(new):11.2f}{ratio:8.2f}")
                if args.command == "verify":
                    floor = statistics.median(floors)
                    print(f"{'the bare floor (import jax, compile both, run each once)':58}{floor:11.2f}\n"
                          f"{'ratio to the floor':58}{statistics.median(old) / floor:11.2f}"
                          f"{statistics.median(new) / floor:11.2f}")
            print(f"\nkgate {args.command}, isolated vs {args.baseline} (median of {args.runs} interleaved runs each): "
                  f"{', '.join(f'{r:.2f}x' for r in ratios)}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)], check=False)


def bare_floor() -> float:
    from verify_overhead import floor_command, wall

    return wall(floor_command(ROOT / "examples" / "softmax", SOFTMAX_512))


if __name__ == "__main__":
    main()
