"""Running a suite: each candidate through the early-kill gate, and what passes through
`kgate verify --mode screen`, each in processes of its own (a crash or a hang is that
candidate's row). Each finished row is written to the results folder at once, keyed by what
decides it, so a re-run skips what is done and an interruption loses nothing finished."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kgate import __version__
from kgate.errors import KgateError
from kgate.jsonio import dumps
from kgate.problem.module import file_sha256
from kgate.suite.discover import Entry
from kgate.suite.summary import ERROR, FAIL, GATE_FAIL, PASS, Row


@dataclass(frozen=True)
class SuiteRequest:
    entries: tuple[Entry, ...]
    results: Path
    budget_s: float = 10.0  # verify's timing budget per candidate
    phase_budget_s: float = 300.0  # the longest any leg may spend in one phase: a hang ends there
    seeds: tuple[int, ...] = (42, 43)
    parity: str = "floor"
    time_interpreted: bool = False


def key_of(entry: Entry, request: SuiteRequest) -> str:
    """What decides a row: both files' contents, the op-point, the terms, and kgate's version."""
    decided = {"reference": file_sha256(entry.reference), "candidate": file_sha256(entry.candidate),
               "overrides": {k: entry.overrides[k] for k in sorted(entry.overrides)}, "class": entry.klass,
               "weights": entry.weights, "entry": entry.entry, "reference_entry": entry.reference_entry,
               "parity": request.parity, "seeds": list(request.seeds), "budget_s": request.budget_s,
               "time_interpreted": request.time_interpreted, "kgate": __version__}
    return hashlib.sha256(dumps(decided).encode()).hexdigest()


def run_suite(request: SuiteRequest, say: Callable[[str], None] = lambda _: None) -> list[Row]:
    """Every entry's row, in order: read from the results folder when a finished one is there."""
    from kgate.report import write_atomic

    request.results.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    for i, entry in enumerate(request.entries, 1):
        key = key_of(entry, request)
        done = request.results / f"{key}.json"
        label = f"[{i}/{len(request.entries)}] {entry.problem}/{entry.name}"
        row = _finished(done)
        if row is not None:
            say(f"{label}: done before ({row.status}), skipped")
        else:
            say(f"{label}: gating")
            row = _run_one(entry, key, request, lambda line: say(f"{label}: {line}"))
            write_atomic(done, dumps(row.to_json()) + "\n")
            say(f"{label}: {row.status}" + (f" ({row.reason})" if row.reason else ""))
        rows.append(row)
    return rows


def _finished(path: Path) -> Row | None:
    if not path.is_file():
        return None
    try:
        return Row.from_json(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError):
        return None  # not one kgate wrote whole: run it again


def _run_one(entry: Entry, key: str, request: SuiteRequest, say: Callable[[str], None]) -> Row:
    from kgate.gates.parity import ParitySpec
    from kgate.report import write_atomic
    from kgate.verify.early import CheckRequest, run_gate
    from kgate.verify.sweep import SweepTiming, failures, verify_point

    def row(status: str, reason: str = "", speedup: dict[str, float] | None = None, interpreted: bool = False,
            **extra: object) -> Row:
        return Row(entry.problem, entry.name, status, reason, speedup, interpreted, key,
                   {"reference_path": str(entry.reference), "candidate_path": str(entry.candidate),
                    "class": entry.klass, "overrides": dict(entry.overrides), **extra})

    try:
        check = CheckRequest(reference=entry.reference, candidate=entry.candidate, entry=entry.entry,
                             reference_entry=entry.reference_entry, klass=entry.klass, seeds=request.seeds,
                             overrides=dict(entry.overrides), parity_spec=ParitySpec.parse(request.parity),
                             phase_budget_s=request.phase_budget_s, weights=entry.weights)
        gate = run_gate(check)
    except KgateError as exc:
        return row(ERROR, exc.problem)
    if gate.status != "PASS":
        return row(GATE_FAIL, f"{gate.status}: {failures(gate)}", gate_status=gate.status)
    say("gate PASS, verifying")
    try:
        report, speedup, why, sealed = verify_point(
            check, check.kwargs, SweepTiming(request.budget_s, request.time_interpreted), say, label="verify")
    except KgateError as exc:
        return row(ERROR, f"verify: {exc.problem}", gate_status=gate.status)
    receipt = request.results / f"{key}.receipt.json"
    write_atomic(receipt, dumps(sealed) + "\n")
    return row(PASS if report.status == "PASS" else FAIL, why, speedup, bool(report.context.get("interpreted", True)),
               gate_status=gate.status, verify_status=report.status, receipt=str(receipt))
