"""Running a suite: each candidate through the early-kill gate, and what passes through
`kgate verify` (`--mode screen`, or `full`), each in processes of its own (a crash or a hang is that
candidate's row). Each finished row is written to the results folder at once, keyed by what
decides it, so a re-run skips what is done and an interruption loses nothing finished."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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
    mode: str = "screen"  # verify's mode for a row whose gate passed: screen | full

    def __post_init__(self) -> None:
        check_mode(self.mode)


def check_mode(mode: str) -> None:
    if mode not in ("screen", "full"):
        raise KgateError(f"--mode {mode!r} is not a verify mode.", "use --mode screen or --mode full.")


def key_of(entry: Entry, request: SuiteRequest) -> str:
    """What decides a row: both files' contents, the op-point, the terms, and kgate's version."""
    decided = {"reference": file_sha256(entry.reference), "candidate": file_sha256(entry.candidate),
               "overrides": {k: entry.overrides[k] for k in sorted(entry.overrides)}, "class": entry.klass,
               "weights": entry.weights, "entry": entry.entry, "reference_entry": entry.reference_entry,
               "parity": request.parity, "seeds": list(request.seeds), "budget_s": request.budget_s,
               "time_interpreted": request.time_interpreted, "kgate": __version__,
               **({"mode": request.mode} if request.mode != "screen" else {})}  # a screen row's key as it always was
    return hashlib.sha256(dumps(decided).encode()).hexdigest()


def run_suite(request: SuiteRequest, say: Callable[[str], None] = lambda _: None,
              executor: Executor | None = None) -> list[Row]:
    """Every entry's row, in order: read from the results folder when a finished one is there,
    else run by `executor` (one at a time in this process by default). Only this process writes
    the results folder: each row, with its receipt, as soon as it comes back."""
    from kgate.suite.executors import InProcess

    request.results.mkdir(parents=True, exist_ok=True)
    executor = executor or InProcess()
    rows: dict[int, Row] = {}
    pending: list[Job] = []
    for i, entry in enumerate(request.entries, 1):
        key = key_of(entry, request)
        label = f"[{i}/{len(request.entries)}] {entry.problem}/{entry.name}"
        row = _finished(request.results / f"{key}.json")
        if row is not None:
            say(f"{label}: done before ({row.status}), skipped")
            rows[i] = row
        else:
            pending.append(Job(i, label, entry, key))
    for job, outcome in executor.run(pending, request, say):
        row = rows[job.index] = _keep(outcome, request)
        say(f"{job.label}: {row.status}" + (f" ({row.reason})" if row.reason else ""))
    return [rows[i] for i in sorted(rows)]


@dataclass(frozen=True)
class Job:
    """One row to run: its place in the suite, how progress names it, its entry and its key."""

    index: int
    label: str
    entry: Entry
    key: str


@dataclass(frozen=True)
class Outcome:
    """What running a row gives back to the process that keeps the results: the row, and the
    sealed receipt's text when it was verified."""

    row: dict[str, Any]
    receipt: str | None = None
    keep: bool = True  # False: the row did not finish for a reason outside it (a lost worker): a re-run runs it

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "receipt": self.receipt}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        if not isinstance(data.get("row"), dict) or not isinstance(data.get("receipt"), (str, type(None))):
            raise ValueError("not a row's outcome")
        Row.from_json(data["row"])  # raises on a malformed row
        return cls(dict(data["row"]), data["receipt"])


class Executor(Protocol):
    """Runs the rows it is given and yields each with its outcome as it finishes (any order)."""

    def run(self, jobs: Sequence[Job], request: SuiteRequest,
            say: Callable[[str], None]) -> Iterator[tuple[Job, Outcome]]: ...


def _keep(outcome: Outcome, request: SuiteRequest) -> Row:
    """Write a row's receipt, then the row (each whole, or not at all), and return the row; a row
    that did not finish (`keep` False) is shown and never written, so a re-run runs it."""
    from kgate.report import write_atomic

    row = Row.from_json(outcome.row)
    if not outcome.keep:
        return row
    if outcome.receipt is not None:
        write_atomic(request.results / f"{row.key}.receipt.json", outcome.receipt)
    write_atomic(request.results / f"{row.key}.json", dumps(row.to_json()) + "\n")
    return row


def _finished(path: Path) -> Row | None:
    if not path.is_file():
        return None
    try:
        return Row.from_json(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError):
        return None  # not one kgate wrote whole: run it again


def run_row(entry: Entry, key: str, request: SuiteRequest, say: Callable[[str], None],
            where: Mapping[str, Any] | None = None) -> Outcome:
    """One candidate through the gate and, when it passes, verify: its row and receipt, written
    nowhere (the process that keeps the results writes them). `where`: what the executor says of
    the place it ran (a node, the chips a scheduler gave it), kept in the row."""
    failed = gate_step(entry, key, request, where)
    if failed is not None:
        return failed
    say("gate PASS, verifying")
    return verify_step(entry, key, request, say, where)


def gate_step(entry: Entry, key: str, request: SuiteRequest, where: Mapping[str, Any] | None = None) -> Outcome | None:
    """The early-kill gate of one row: its finished row when the gate did not pass (or could not
    run), None when it passed. Files that are not the ones the key was made from (another node's
    copy) are an ERROR row."""
    from kgate.verify.early import run_gate
    from kgate.verify.sweep import failures

    try:
        if key_of(entry, request) != key:
            return _done(entry, key, where, ERROR, "the reference or the candidate here is not the file the suite was "
                         "keyed by, or this node's kgate is another version: every node must see the suite's files at "
                         "the same paths (a shared file system) and run the driver's kgate")
    except OSError as exc:
        return _done(entry, key, where, ERROR, f"the suite's files cannot be read where this row ran ({exc}): every "
                     "node must see them at the same paths")
    try:
        gate = run_gate(_check_request(entry, request))
    except KgateError as exc:
        return _done(entry, key, where, ERROR, exc.problem)
    if gate.status != "PASS":
        return _done(entry, key, where, GATE_FAIL, f"{gate.status}: {failures(gate)}", gate_status=gate.status)
    return None


def verify_step(entry: Entry, key: str, request: SuiteRequest, say: Callable[[str], None],
                where: Mapping[str, Any] | None = None) -> Outcome:
    """`kgate verify` of a row whose gate passed (`--mode screen`, or full: its artifacts beside
    the row's receipt): its finished row and receipt."""
    from kgate.verify.sweep import SweepTiming, verify_point

    check = _check_request(entry, request)
    try:
        report, speedup, why, sealed = verify_point(
            check, check.kwargs, SweepTiming(request.budget_s, request.time_interpreted), say, label="verify",
            mode=request.mode, artifacts=request.results / f"{key}.artifacts" if request.mode == "full" else None)
    except KgateError as exc:
        return _done(entry, key, where, ERROR, f"verify: {exc.problem}", gate_status="PASS")
    receipt = request.results / f"{key}.receipt.json"
    return _done(entry, key, where, PASS if report.status == "PASS" else FAIL, why, speedup,
                 bool(report.context.get("interpreted", True)), receipt_text=dumps(sealed) + "\n",
                 gate_status="PASS", verify_status=report.status, receipt=str(receipt), checked=checked(report))


def checked(report: Any) -> str:
    """What verify checked, in short, for a row: parity (its probes, and the worst error against
    its floor) and firing, each with its status."""
    parts = []
    parity = report.gates.get("parity")
    if parity is not None:
        probes = parity.details.get("probes") or []
        ratios = [float(o["max_abs_over_floor"]) for p in probes for o in p.get("outputs", [])
                  if isinstance(o.get("max_abs_over_floor"), (int, float))]
        worst = f", worst {max(ratios):.3g}x the floor ({parity.details.get('spec', 'floor')})" if ratios else ""
        parts.append(f"parity {parity.status}: {len(probes)} probe{'' if len(probes) == 1 else 's'}{worst}")
    firing = report.gates.get("firing")
    if firing is not None:
        sites = firing.details.get("kernel_sites") or []
        parts.append(f"firing {firing.status}" + (f": {len(sites)} kernel site{'' if len(sites) == 1 else 's'}"
                                                   if sites else f" ({len(firing.checks)} checks)"))
    return "; ".join(parts)


def _check_request(entry: Entry, request: SuiteRequest) -> Any:
    from kgate.gates.parity import ParitySpec
    from kgate.verify.early import CheckRequest

    return CheckRequest(reference=entry.reference, candidate=entry.candidate, entry=entry.entry,
                        reference_entry=entry.reference_entry, klass=entry.klass, seeds=request.seeds,
                        overrides=dict(entry.overrides), parity_spec=ParitySpec.parse(request.parity),
                        phase_budget_s=request.phase_budget_s, weights=entry.weights)


def _done(entry: Entry, key: str, where: Mapping[str, Any] | None, status: str, reason: str = "",
          speedup: Mapping[str, float] | None = None, interpreted: bool = False, receipt_text: str | None = None,
          **extra: object) -> Outcome:
    row = Row(entry.problem, entry.name, status, reason, speedup, interpreted, key,
              {"reference_path": str(entry.reference), "candidate_path": str(entry.candidate), "class": entry.klass,
               "overrides": dict(entry.overrides), **({"ran_on": dict(where)} if where else {}), **extra})
    return Outcome(row.to_json(), receipt_text)


# -- what crosses to a process that runs rows elsewhere (a pool's worker, a Ray task) ----------

def entry_to_json(entry: Entry) -> dict[str, Any]:
    return {"problem": entry.problem, "reference": str(entry.reference), "candidate": str(entry.candidate),
            "overrides": dict(entry.overrides), "klass": entry.klass, "weights": entry.weights, "entry": entry.entry,
            "reference_entry": entry.reference_entry, "label": entry.label}


def entry_from_json(data: Mapping[str, Any]) -> Entry:
    return Entry(str(data["problem"]), Path(data["reference"]), Path(data["candidate"]), dict(data["overrides"]),
                 str(data["klass"]), str(data["weights"]), str(data["entry"]), str(data["reference_entry"]),
                 str(data["label"]))


def request_to_json(request: SuiteRequest) -> dict[str, Any]:
    """The terms of a suite without its entries (a worker is given one row at a time)."""
    return {"results": str(request.results), "budget_s": request.budget_s, "phase_budget_s": request.phase_budget_s,
            "seeds": list(request.seeds), "parity": request.parity, "time_interpreted": request.time_interpreted,
            "mode": request.mode}


def request_from_json(data: Mapping[str, Any]) -> SuiteRequest:
    return SuiteRequest((), Path(data["results"]), float(data["budget_s"]), float(data["phase_budget_s"]),
                        tuple(int(s) for s in data["seeds"]), str(data["parity"]), bool(data["time_interpreted"]),
                        str(data.get("mode", "screen")))
