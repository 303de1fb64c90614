"""How often does `kgate measure` make a false claim, and how often does it catch a real
slowdown -- side by side with the usual "warm up, time 50 calls each, compare p50s".

Run by hand (not part of CI's pass/fail; timings on a shared machine are noisy):

    .venv/bin/python benchmarks/timing_honesty.py [--runs 20] [--seq-len 128]

A/A: the reference against `aa_copy.py` (the same computation written out again).
A false claim is the bar "p50 beats naive by >2% AND 3σ" being MET (kgate), or the naive
p50 ratio exceeding 1.02 (naive). Slowdown: `slow_extra_work.py --passes 1`; detected
means kgate's interval lies entirely below 1.0 with no integrity anomaly (kgate), or the
naive p50 ratio is below 1.0 (naive).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "rmsnorm"

from kgate import clock  # noqa: E402
from kgate.backends import get_backend  # noqa: E402
from kgate.gates.bar import parse_bar  # noqa: E402
from kgate.problem import load_pair  # noqa: E402
from kgate.verify.measure import MeasureRequest, run_measure  # noqa: E402

BAR = "p50 beats naive by >2% AND 3σ"


def naive_ratio(candidate: Path, overrides: dict, calls: int = 50) -> float:
    """The usual helper: warm up, time `calls` back-to-back calls of each leg, compare p50s."""
    backend = get_backend()
    with load_pair(EXAMPLE / "reference.py", candidate, overrides=overrides) as pair:
        inputs, _ = backend.create_inputs(pair.reference, 42, None)
        ref = backend.compile_timed(pair.reference.entry, inputs, clock.perf_counter_ns)
        cand = backend.compile_timed(pair.candidate.entry, inputs, clock.perf_counter_ns)
        for _ in range(5):
            ref(), cand()
        ref_ms = [ref() / 1e6 for _ in range(calls)]
        cand_ms = [cand() / 1e6 for _ in range(calls)]
    return float(np.median(ref_ms) / np.median(cand_ms))


def kgate_run(candidate: Path, overrides: dict) -> dict:
    report = run_measure(
        MeasureRequest(reference=EXAMPLE / "reference.py", candidate=candidate, overrides=overrides, bar=parse_bar(BAR))
    )
    data = report.to_json()
    sp = data["gates"]["timing"]["speedup"]
    return {
        "speedup": sp,
        "bar": data["gates"]["bar"]["outcome"],
        "anomaly": data["status"] == "ANOMALY",
        "anomalies": [c["name"] for c in data["gates"]["integrity"]["checks"] if c["status"] == "FAIL"],
        "interpreted": data["interpreted"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seq-len", type=int, default=128)
    args = parser.parse_args()
    overrides = {"seq_len": args.seq_len}

    print(f"A/A: {args.runs} runs, rmsnorm seq_len={args.seq_len}, bar {BAR!r}")
    aa = [kgate_run(EXAMPLE / "aa_copy.py", overrides) for _ in range(args.runs)]
    aa_naive = [naive_ratio(EXAMPLE / "aa_copy.py", overrides) for _ in range(args.runs)]
    met = sum(r["bar"] == "MET" for r in aa)
    covers = sum(r["speedup"]["low"] <= 1.0 <= r["speedup"]["high"] for r in aa)
    naive_claims = sum(r > 1.02 for r in aa_naive)
    print(f"  kgate: bar MET (false claim) in {met}/{args.runs}; interval contains 1.0 in {covers}/{args.runs}")
    print(f"  naive: p50 ratio > 1.02 (false claim) in {naive_claims}/{args.runs}; ratios "
          f"min {min(aa_naive):.3f} max {max(aa_naive):.3f}")

    slow = EXAMPLE / "slow_extra_work.py"
    print(f"Slowdown: {args.runs} runs of {slow.name} (one extra elementwise pass)")
    sd = [kgate_run(slow, overrides) for _ in range(args.runs)]
    sd_naive = [naive_ratio(slow, overrides) for _ in range(args.runs)]
    detected = sum(r["speedup"]["high"] < 1.0 and not r["anomaly"] for r in sd)
    anomalies = sum(r["anomaly"] for r in sd)
    names = sorted({n for r in sd for n in r["anomalies"]})
    naive_detected = sum(r < 1.0 for r in sd_naive)
    median_speedup = float(np.median([r["speedup"]["estimate"] for r in sd]))
    print(f"  kgate: slower with interval excluding 1.0 in {detected}/{args.runs} "
          f"(median speedup {median_speedup:.3f}); anomalies {anomalies}" + (f" {names}" if names else ""))
    print(f"  naive: p50 ratio < 1.0 in {naive_detected}/{args.runs}")
    kinds = {"interpreted" if r["interpreted"] else "compiled" for r in aa + sd}
    print(f"  (timings: {', '.join(sorted(kinds))}; on the CPU, capped at 6 s per run, compiles included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
