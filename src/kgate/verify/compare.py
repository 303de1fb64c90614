"""`kgate compare A B`: two receipts of the same problem side by side.

Each receipt's speedup was co-measured in its own run (reference and candidate interleaved),
so the ratio of the two speedups compares the candidates while what the machines did
differently cancels within each run. The ratio's interval is Welch's, over the two runs'
per-session log speedups (each session a fresh compile with fresh input values, the unit the
runs' own intervals are built on). The per-leg p50s are shown with their own intervals, and
the reference legs of the two runs are compared as a check of the machines: the same program
on the same inputs should take the same time.

Only receipts that verify (`verify-receipt` OK on their numbers) of the same reference, at
the same op-point, on the same inputs and the same device kind are compared; anything else
is refused with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kgate.errors import KgateError
from kgate.gates import stats
from kgate.verify import check_receipt
from kgate.verify import receipt as receipts

LEVEL = 0.95
METHOD = ("Welch's t interval on the difference of the two runs' mean per-session log speedups (each session "
          "a fresh compile with fresh input values; nominal coverage: each run stopped when its own bar was "
          "decided); per-leg p50 intervals: bootstrap of the median over rounds, sessions resampled first ("
          + stats.BOOTSTRAP_METHOD + "); reference_ratio: B's reference p50 over A's, bounded by the two intervals' "
          "ends (wider than 95%)")


@dataclass(frozen=True)
class Side:
    """One receipt, read and checked."""

    label: str  # "A" or "B"
    path: Path
    receipt: dict[str, Any]
    note: str  # "" or how it was found (a report's receipt)

    @property
    def timing(self) -> Mapping[str, Any]:
        return self.receipt["gates"]["timing"]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        samples = self.timing["samples_ms"]
        return (np.array(samples["reference"], dtype=float), np.array(samples["candidate"], dtype=float),
                [int(s) for s in samples["session"]])


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    ratio: stats.Interval  # A's speedup / B's speedup
    legs: dict[str, dict[str, stats.Interval]]  # side -> leg -> p50 interval (ms)
    reference_ratio: stats.Interval  # B's reference p50 / A's: 1 when the machines agree
    advisories: tuple[str, ...]

    @property
    def faster(self) -> str | None:
        if self.ratio.low > 1.0:
            return "A"
        if self.ratio.high < 1.0:
            return "B"
        return None

    @property
    def verdict(self) -> str:
        r = self.ratio
        span = f"{r.estimate:.3f}x [{r.low:.3f}, {r.high:.3f}] ({r.level:.0%})"
        if self.faster == "A":
            return f"A's candidate is faster than B's: A's speedup / B's = {span}"
        if self.faster == "B":
            inverse = f"{1 / r.estimate:.3f}x [{1 / r.high:.3f}, {1 / r.low:.3f}] ({r.level:.0%})"
            return f"B's candidate is faster than A's: B's speedup / A's = {inverse}"
        return f"not distinguishable: A's speedup / B's = {span} includes 1"

    @property
    def exit_code(self) -> int:
        return 1 if self.advisories else 0

    def to_json(self) -> dict[str, Any]:
        def side(s: Side) -> dict[str, Any]:
            return {
                "path": str(s.path),
                **({"note": s.note} if s.note else {}),
                "candidate": s.receipt["modules"]["candidate"]["path"],
                "candidate_sha256": s.receipt["modules"]["candidate"]["sha256"],
                "status": s.receipt["status"],
                "speedup": dict(s.timing["speedup"]),
                "sessions": len(set(s.arrays()[2])),
                "reference_p50_ms": self.legs[s.label]["reference"].to_json(),
                "candidate_p50_ms": self.legs[s.label]["candidate"].to_json(),
            }

        first = self.a.receipt
        return {
            "command": "compare",
            "status": "COMPARED",
            "exit_code": self.exit_code,
            "problem": {"reference": first["modules"]["reference"]["path"],
                        "reference_sha256": first["modules"]["reference"]["sha256"],
                        "op_point": first.get("op_point", {}), "device": first.get("device", {})},
            "a": side(self.a),
            "b": side(self.b),
            "ratio": self.ratio.to_json(),
            "faster": self.faster,
            "verdict": self.verdict,
            "reference_ratio": self.reference_ratio.to_json(),
            "method": METHOD,
            "advisories": list(self.advisories),
        }


def read(path: Path, label: str) -> Side:
    """A receipt that verifies on its numbers; a verify report is followed to its receipt."""
    data = check_receipt.load(path)
    note = ""
    if data.get("schema") != receipts.SCHEMA and isinstance(data.get("receipt"), dict) and "command" in data:
        named = Path(str(data["receipt"].get("path", "")))
        if not named.is_file():
            raise KgateError(f"{label}: {path} is a `kgate {data['command']}` report whose receipt {named} is not there.",
                             "pass the receipt itself (verify -o FILE).")
        note, path, data = f"the receipt of the report {path}", named, check_receipt.load(named)
    if data.get("schema") != receipts.SCHEMA:
        raise KgateError(f"{label}: {path} is not a kgate receipt (a report is not sealed; only `kgate verify -o FILE` "
                         "writes receipts).", "pass two receipts written by kgate verify.")
    checked = check_receipt.check_data(data, path, regenerate=False, sources=False)
    if checked.status != "OK":
        raise KgateError(f"{label}: {path} is {checked.status}: {'; '.join(checked.findings[:3])}.",
                         f"compare receipts that `kgate verify-receipt` calls OK; see `kgate verify-receipt {path}`.")
    integrity = data["gates"].get("integrity", {})
    failed = [str(c.get("name")) for c in integrity.get("checks", []) if c.get("status") == "FAIL"]
    if data.get("status") == "ANOMALY" or failed:  # e.g. work leaking into the next call: its speedup is not one
        raise KgateError(f"{label}: {path} is a run whose integrity FAILed ({', '.join(failed) or 'ANOMALY'}): its "
                         "timings do not measure the candidate alone.",
                         "fix what the integrity check names and verify again; compare runs that passed integrity.")
    timing = data["gates"].get("timing", {})
    if "samples_ms" not in timing or "speedup" not in timing or timing.get("status") != "PASS":
        why = timing.get("reason") or f"its timing is {timing.get('status')}"
        raise KgateError(f"{label}: {path} holds no timings to compare ({why}).",
                         "compare receipts of timed runs (verify on the device, or --time-interpreted for a labelled "
                         "interpreter timing).")
    if not timing["samples_ms"].get("session"):
        raise KgateError(f"{label}: {path} records no sessions (a receipt of a kgate before sessions).",
                         "verify the candidate again with this kgate.")
    return Side(label, path, data, note)


def _same_problem(a: Side, b: Side) -> None:
    ra, rb = a.receipt, b.receipt
    differences = []
    sha_a, sha_b = ra["modules"]["reference"]["sha256"], rb["modules"]["reference"]["sha256"]
    if sha_a != sha_b:
        raise KgateError(
            f"A and B are receipts of different problems: their references differ ({ra['modules']['reference']['path']} "
            f"sha256 {sha_a[:12]}..., {rb['modules']['reference']['path']} sha256 {sha_b[:12]}...).",
            "compare two candidates of one reference (the same reference file, unchanged).")
    for what, key in (("op-point", "op_point"), ("graded dtype", "dtype")):
        if ra.get(key) != rb.get(key):
            differences.append(f"the {what} differs ({ra.get(key)} vs {rb.get(key)})")
    dev_a, dev_b = ra.get("device", {}), rb.get("device", {})
    if (dev_a.get("platform"), dev_a.get("kind")) != (dev_b.get("platform"), dev_b.get("kind")):
        differences.append(f"the device differs ({dev_a.get('platform')} {dev_a.get('kind')} vs "
                           f"{dev_b.get('platform')} {dev_b.get('kind')})")
    if bool(ra.get("interpreted")) != bool(rb.get("interpreted")):
        differences.append("one ran in an interpreter and the other did not")
    inputs_a, inputs_b = ra.get("inputs") or {}, rb.get("inputs") or {}
    shared = sorted(set(inputs_a) & set(inputs_b))  # each run adds a random seed of its own to the fixed ones
    if ra.get("timed_inputs") != rb.get("timed_inputs") or not shared or any(
            inputs_a[seed] != inputs_b[seed] for seed in shared):
        differences.append("the inputs differ (the timed inputs' or a shared seed's hash: another create_inputs, "
                           "or other seeds)")
    if differences:
        raise KgateError("A and B were not measured alike: " + "; ".join(differences) + ".",
                         "verify both candidates with the same reference, --set, seeds and device, then compare.")


def compare(path_a: Path, path_b: Path) -> Comparison:
    a, b = read(path_a, "A"), read(path_b, "B")
    _same_problem(a, b)
    logs: dict[str, np.ndarray] = {}
    legs: dict[str, dict[str, stats.Interval]] = {}
    for side in (a, b):
        ref, cand, sessions = side.arrays()
        logs[side.label] = stats.session_log_ratios(ref, cand, sessions)
        if len(logs[side.label]) < 2 or not np.all(np.isfinite(logs[side.label])):
            raise KgateError(f"{side.label}: {side.path} has {len(logs[side.label])} session(s) with a finite speedup: "
                             "too few to compare.", "verify with at least two sessions (--sessions 2 or more).")
        legs[side.label] = {"reference": stats.p50_interval(ref, sessions), "candidate": stats.p50_interval(cand, sessions)}
    ratio = stats.welch_ratio(logs["A"], logs["B"], LEVEL)
    ref_a, ref_b = legs["A"]["reference"], legs["B"]["reference"]
    reference_ratio = stats.Interval(ref_b.estimate / ref_a.estimate, ref_b.low / ref_a.high, ref_b.high / ref_a.low,
                                     LEVEL)
    advisories = []
    if ref_a.disjoint(ref_b):
        advisories.append(
            f"the reference took {reference_ratio.estimate:.3f}x as long in B as in A (intervals apart): the machines or "
            "their load differed between the runs; the speedups are co-measured within each run, but a difference in "
            "them may be the machine's")
    return Comparison(a, b, ratio, legs, reference_ratio, tuple(advisories))
