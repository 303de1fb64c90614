"""What sharing compiled programs between reference legs saves (kgate.verify.refcache): one
process gates the same candidates one after another, as `kgate suite`, a sweep or a test run
does, with the sharing on (the default) and off (KGATE_REFERENCE_CACHE=0), interleaved. Prints
the median wall time of each, their ratio, and the reference leg's programs loaded against
compiled. Run by hand:

    .venv/bin/python benchmarks/reference_programs.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("rmsnorm", "xla_rewrite.py", "xla-rewrite"),
    ("rmsnorm", "pallas.py", "kernel-authored"),
    ("rmsnorm", "bad_drops_eps.py", "xla-rewrite"),
    ("softmax", "xla_rewrite.py", "xla-rewrite"),
    ("softmax", "pallas.py", "kernel-authored"),
    ("softmax", "bad_no_max_subtraction.py", "xla-rewrite"),
]

# One process, every case gated twice (a second candidate of the same problem, as in a suite).
SESSION = r"""
import json, sys, time
from pathlib import Path
from kgate.verify import CheckRequest, run_gate
root, cases = Path(sys.argv[1]), json.loads(sys.argv[2])
start, loaded, compiled = time.perf_counter(), 0, 0
for _ in range(2):
    for problem, candidate, klass in cases:
        report = run_gate(CheckRequest(reference=root / "examples" / problem / "reference.py",
                                       candidate=root / "examples" / problem / candidate, klass=klass)).to_json()
        programs = report.get("seconds", {}).get("reference_programs") or {}
        loaded += programs.get("loaded") or 0
        compiled += programs.get("compiled") or 0
print(json.dumps({"wall_s": time.perf_counter() - start, "loaded": loaded, "compiled": compiled}))
"""


def run(shared: bool) -> dict[str, float]:
    env = {**os.environ, "KGATE_REFERENCE_CACHE": "1" if shared else "0"}
    proc = subprocess.run([sys.executable, "-c", SESSION, str(ROOT), json.dumps(CASES)], capture_output=True,
                          text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"the gates failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    on: list[dict[str, float]] = []
    off: list[dict[str, float]] = []
    for _ in range(args.runs):
        off.append(run(False))
        on.append(run(True))
    wall_on = statistics.median(r["wall_s"] for r in on)
    wall_off = statistics.median(r["wall_s"] for r in off)
    gates = 2 * len(CASES)
    print(f"{gates} gates in one process, median of {args.runs} interleaved runs each:")
    print(f"  programs compiled by every reference leg (KGATE_REFERENCE_CACHE=0): {wall_off:7.1f} s")
    print(f"  programs shared between reference legs (default):                 {wall_on:7.1f} s")
    print(f"  ratio shared/unshared: {wall_on / wall_off:.2f}x; with sharing, the reference legs loaded "
          f"{on[-1]['loaded']:.0f} programs and compiled {on[-1]['compiled']:.0f}")


if __name__ == "__main__":
    main()
