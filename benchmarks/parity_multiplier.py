"""Where should the floor's default multiplier sit? The error-to-floor ratio of every honest
kernel kgate ships (bundled Pallas examples, rewrites, jax's own Pallas ops) against that of
precision-downgraded variants, side by side. Run by hand:

    .venv/bin/python benchmarks/parity_multiplier.py [--repeat N]

For each pair, `kgate parity --parity floor:1000000000` (so nothing fails on the ratio) reports every
probe's max-abs error over its allowance unit (the floor, or half an ulp of the output where
that is coarser), its mean-abs error over the mean unit, and its worst element's error over that
floor scaled to the element's magnitude (the `relative_error` check's ratio); the table shows the
worst of each over the seed probes and over the edge probes, across `--repeat` runs (each run
draws its own random seed). The default multiplier must sit above every honest kernel's ratio and
below each downgrade's worst.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"

HONEST = [
    ("rmsnorm/reference.py", "rmsnorm/pallas.py", ["batch=1", "seq_len=64", "emb_dim=1024"]),
    ("rmsnorm/reference.py", "rmsnorm/xla_rewrite.py", ["batch=1", "seq_len=64", "emb_dim=1024"]),
    ("softmax/reference.py", "softmax/pallas.py", ["rows=64", "cols=1024"]),
    ("softmax/reference.py", "softmax/xla_rewrite.py", ["rows=64", "cols=1024"]),
    ("cumsum/reference.py", "cumsum/pallas.py", []),
    ("cumsum/reference.py", "cumsum/xla_rewrite.py", []),
    ("jax_ops/matmul_reference.py", "jax_ops/matmul_pallas.py", []),
    ("jax_ops/attention_reference.py", "jax_ops/flash_attention_pallas.py", ["seq_len=256"]),
]
DOWNGRADED = [
    ("rmsnorm/reference.py", "rmsnorm/bad_bf16_sum_of_squares.py", ["batch=1", "seq_len=64", "emb_dim=1024"]),
    ("softmax/reference.py", "softmax/bad_low_precision.py", ["rows=64", "cols=1024"]),
    ("cumsum/reference.py", "cumsum/bad_bf16_accumulate.py", []),
    # an absolute error under the floor at the largest outputs: only the relative grade sees it
    ("rmsnorm/reference.py", "rmsnorm/bad_flush_small.py", ["batch=1", "seq_len=64", "emb_dim=1024"]),
    ("rmsnorm/reference.py", "rmsnorm/bad_quantized_output.py", ["batch=1", "seq_len=64", "emb_dim=1024"]),
    ("rmsnorm/reference.py", "rmsnorm/bad_fixed_grid_output.py", ["batch=1", "seq_len=64", "emb_dim=1024"]),
]


def ratios(reference: str, candidate: str, overrides: list[str]) -> dict[str, float]:
    args = [sys.executable, "-m", "kgate", "parity", "-r", str(EX / reference), "-c", str(EX / candidate),
            "--parity", "floor:1000000000", "--json"]
    for item in overrides:
        args += ["--set", item]
    report = json.loads(subprocess.run(args, capture_output=True, text=True, cwd=ROOT).stdout)
    worst = {f"{kind} {what}": 0.0 for kind in ("seeds", "edges") for what in ("max", "mean", "rel")}
    for probe in report["gates"]["parity"]["probes"]:
        kind = "edges" if probe.get("label") else "seeds"
        for out in probe["outputs"]:
            mean_ratio = float(out["candidate"]["mean_abs"]) / max(float(out["floor"]["mean_abs_used"]), 1e-300)
            worst[f"{kind} max"] = max(worst[f"{kind} max"], float(out["max_abs_over_floor"]))
            worst[f"{kind} mean"] = max(worst[f"{kind} mean"], mean_ratio)
            worst[f"{kind} rel"] = max(worst[f"{kind} rel"], float(out["relative"]["ratio"]))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per pair (each with a fresh random seed)")
    repeat = parser.parse_args().repeat
    rows = []
    for group, pairs in (("honest", HONEST), ("downgraded", DOWNGRADED)):
        for reference, candidate, overrides in pairs:
            runs = [ratios(reference, candidate, overrides) for _ in range(repeat)]
            rows.append((group, candidate, {k: max(r[k] for r in runs) for k in runs[0]}))
    columns = list(rows[0][2])
    print(f"{'':11}{'candidate':42}" + "".join(f"{c:>11}" for c in columns))
    for group, candidate, r in rows:
        print(f"{group:11}{candidate:42}" + "".join(f"{r[c]:11.2f}" for c in columns))
    honest = [r for g, _, r in rows if g == "honest"]
    downgraded = [r for g, _, r in rows if g == "downgraded"]
    top = max(max(r.values()) for r in honest)
    caught = [max(r.values()) for r in downgraded]
    print(f"\nworst honest ratio (any probe, max, mean or relative): {top:.2f}")
    print(f"each downgrade's worst ratio: {', '.join(f'{c:.2f}' for c in caught)}")
    print(f"a default multiplier M separates them when {top:.2f} < M < {min(caught):.2f}")


if __name__ == "__main__":
    main()
