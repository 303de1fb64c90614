"""Wall time of a screen verify, as a ratio to the bare floor: a fresh process that imports
jax, compiles both legs and runs each once. Run by hand:

    .venv/bin/python benchmarks/verify_overhead.py [--problem softmax|rmsnorm] [--budget 20] [--runs 3]

softmax: the softmax rewrite at 512x512 (--rows, --cols); target (issue 4): at most 3x the
floor for a ~1 ms workload. rmsnorm: the RMSNorm rewrite at its bundled op-point (2048 rows
of 1024); target (issue 14): at most 2x the floor. The floor and the verify alternate, --runs
times each, and the medians are compared.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOFTMAX = ROOT / "examples" / "softmax"

FLOOR = """
import sys
sys.path.insert(0, {folder!r})
import jax
import reference, xla_rewrite
reference.CONFIG.update({updates!r})
inputs = reference.create_inputs()
for fn in (reference.workload, xla_rewrite.workload):
    jax.block_until_ready(jax.jit(fn)(*inputs))
"""

TARGETS = {"softmax": 3.0, "rmsnorm": 2.0}


def floor_command(folder: Path, updates: dict[str, int]) -> list[str]:
    return [sys.executable, "-c", FLOOR.format(folder=str(folder), updates=updates)]


def verify_args(folder: Path, updates: dict[str, int], budget: float, scratch: Path) -> list[str]:
    """`kgate verify` of the folder's rewrite (what follows `kgate`), its receipt and lock in `scratch`."""
    return ["verify", "-r", str(folder / "reference.py"), "-c", str(folder / "xla_rewrite.py"), "--class", "xla-rewrite",
            *(f"--set={k}={v}" for k, v in updates.items()), "--budget", f"{budget:g}", "--lock-dir", str(scratch),
            "--receipt", str(scratch / "r.json"), "--json"]


def _status(stdout: str) -> str | None:
    try:
        return json.loads(stdout).get("status")
    except (ValueError, AttributeError):
        return None


def wall(cmd: list[str]) -> float:
    """Seconds `cmd` took; a run that crashed, or a kgate that printed no report, is no number."""
    started = time.perf_counter()
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1, 2) or ("kgate" in cmd and _status(proc.stdout) in (None, "ERROR")):
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed (exit {proc.returncode}): {(proc.stderr or proc.stdout)[-400:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=sorted(TARGETS), default="softmax")
    parser.add_argument("--rows", type=int, default=512, help="softmax only")
    parser.add_argument("--cols", type=int, default=512, help="softmax only")
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    folder = ROOT / "examples" / args.problem
    updates = {"rows": args.rows, "cols": args.cols} if args.problem == "softmax" else {}
    floors, verifies = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "kgate", *verify_args(folder, updates, args.budget, Path(tmp))]
        for _ in range(args.runs):  # alternated: the machine's drift hits both alike
            floors.append(wall(floor_command(folder, updates)))
            verifies.append(wall(cmd))
    floor, verify = statistics.median(floors), statistics.median(verifies)
    print(f"{args.problem} rewrite{' at ' + 'x'.join(map(str, updates.values())) if updates else ' at its op-point'}, "
          f"medians of {args.runs} alternated runs")
    print(f"floor (import jax, compile both legs, run each once): {floor:.2f} s")
    print(f"kgate verify --mode screen (--budget {args.budget:g}): {verify:.2f} s")
    print(f"ratio: {verify / floor:.2f}x (target <= {TARGETS[args.problem]:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
