"""What the lowering gate adds to the early-kill gate: `kgate gate` on the bundled Pallas
examples with the lowering gate (the default for a kernel-authored candidate) and without it
(`--lower-for none`), run side by side, interleaved, in one run. Target: at most 1.3x. Run by hand:

    .venv/bin/python benchmarks/lowering_cost.py [--runs 3]

Each command is a fresh `kgate gate` process; the ratio is of median wall times. Beside it, the
seconds the candidate's process spent in its lowering phase, as the report's own clock says.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [
    ("examples/rmsnorm/reference.py", "examples/rmsnorm/pallas.py"),
    ("examples/softmax/reference.py", "examples/softmax/pallas.py"),
    ("examples/cumsum/reference.py", "examples/cumsum/pallas.py"),
    ("examples/jax_ops/attention_reference.py", "examples/jax_ops/flash_attention_pallas.py"),
]
LOWERING_PHASE = "lowering the candidate for its device"


def timed(reference: str, candidate: str, *extra: str) -> tuple[float, float]:
    """Wall seconds of one `kgate gate`, and the seconds its candidate leg spent lowering."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kgate", "gate", "-r", str(ROOT / reference), "-c", str(ROOT / candidate), "--json",
         *extra], capture_output=True, text=True, cwd=ROOT,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1) or '"status"' not in proc.stdout:
        raise SystemExit(f"kgate gate did not pass on {candidate}: {proc.stdout[-400:]}{proc.stderr[-400:]}")
    phases = json.loads(proc.stdout)["seconds"]["legs"]["candidate leg"]
    return elapsed, sum(seconds for name, seconds in phases if name == LOWERING_PHASE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'candidate':48}{'without s':>10}{'with s':>9}{'lowering s':>12}{'ratio':>8}")
    ratios = []
    for reference, candidate in PAIRS:
        without, with_, lowering = [], [], []
        for _ in range(args.runs):  # interleaved: the machine's drift hits both alike
            without.append(timed(reference, candidate, "--lower-for", "none")[0])
            wall, spent = timed(reference, candidate)
            with_.append(wall)
            lowering.append(spent)
        ratio = statistics.median(with_) / statistics.median(without)
        ratios.append(ratio)
        print(f"{candidate:48}{statistics.median(without):10.2f}{statistics.median(with_):9.2f}"
              f"{statistics.median(lowering):12.2f}{ratio:8.3f}")
    print(f"median ratio with/without the lowering gate: {statistics.median(ratios):.3f} (target: at most 1.3)")


if __name__ == "__main__":
    main()
