"""Wall time of a screen verify, as a ratio to the bare floor: a fresh process that imports
jax, compiles both legs and runs each once. Run by hand:

    .venv/bin/python benchmarks/verify_overhead.py [--rows 512 --cols 512] [--budget 20]

Target (issue 4): at most 3x the floor for a ~1 ms workload.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOFTMAX = ROOT / "examples" / "softmax"

FLOOR = """
import sys, time
sys.path.insert(0, {folder!r})
import jax
import reference, xla_rewrite
reference.CONFIG.update(rows={rows}, cols={cols})
(x,) = reference.create_inputs(seed=42)
for fn in (reference.workload, xla_rewrite.workload):
    jax.block_until_ready(jax.jit(fn)(x))
"""


def wall(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=False, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--cols", type=int, default=512)
    parser.add_argument("--budget", type=float, default=20.0)
    args = parser.parse_args()
    floor = min(wall([sys.executable, "-c", FLOOR.format(folder=str(SOFTMAX), rows=args.rows, cols=args.cols)]) for _ in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable, "-m", "kgate", "verify", "-r", str(SOFTMAX / "reference.py"),
            "-c", str(SOFTMAX / "xla_rewrite.py"), "--class", "xla-rewrite",
            "--set", f"rows={args.rows}", "--set", f"cols={args.cols}", "--budget", str(args.budget),
            "--lock-dir", tmp, "--receipt", str(Path(tmp) / "r.json"), "--json",
        ]
        verify = wall(cmd)
    print(f"floor (import jax, compile both legs, run each once): {floor:.2f} s")
    print(f"kgate verify --mode screen (--budget {args.budget:g}): {verify:.2f} s")
    print(f"ratio: {verify / floor:.2f}x (target <= 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
