"""What grading in separate processes costs: `kgate gate` of this tree against the same command
of an earlier kgate (default: 500c6c8, the last commit that graded in the candidate's own
process), run side by side, interleaved, on the same examples. Run by hand:

    .venv/bin/python benchmarks/isolation_cost.py [--runs 5] [--baseline REV]

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


def timed(source: Path, reference: str, candidate: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kgate", "gate", "-r", str(ROOT / reference), "-c", str(ROOT / candidate), "--json"],
        capture_output=True, text=True, env=env, cwd=source,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 2) or '"status"' not in proc.stdout:
        raise SystemExit(f"kgate gate failed under {source}: {proc.stderr[-400:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="500c6c8")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgate-baseline-") as scratch:
        baseline = Path(scratch) / "kgate"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(baseline), args.baseline],
                       check=True)
        try:
            print(f"{'pair':58}{'baseline s':>11}{'isolated s':>11}{'ratio':>8}")
            ratios = []
            for reference, candidate in PAIRS:
                old, new = [], []
                for _ in range(args.runs):  # interleaved: the machine's drift hits both alike
                    old.append(timed(baseline, reference, candidate))
                    new.append(timed(ROOT, reference, candidate))
                ratio = statistics.median(new) / statistics.median(old)
                ratios.append(ratio)
                print(f"{candidate:58}{statistics.median(old):11.2f}{statistics.median(new):11.2f}{ratio:8.2f}")
            print(f"\nkgate gate, isolated vs {args.baseline} (median of {args.runs} interleaved runs each): "
                  f"{', '.join(f'{r:.2f}x' for r in ratios)}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)], check=False)


if __name__ == "__main__":
    main()
