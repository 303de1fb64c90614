"""`kgate measure` in a fresh process: the command's own process never imports the
candidate, so nothing the candidate does (an exit, a crash, a rebound function) can set its
exit code or write its report.

The timing runs in one `measure` leg (kgate.verify.leg), as verify's does; this process
stamps the leg's phases and rounds on its own clock and grades what the leg reports against
them: samples that do not fit the windows it timed, or processes that worked beside the timed
one, are integrity failures. A leg that ends without a result (it exited, crashed, ran past a
phase's budget) is a FAIL that says how it ended.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.gates.common import Check, GateResult
from kgate.problem.module import file_sha256, kwargs_to_wire
from kgate.verify import receipt as receipts, spawn
from kgate.verify.measure import MeasureRequest
from kgate.verify.outcome import NOT_TIMED_NOTE, Report, not_timed_gates
from kgate.verify.screen import (gate_from_json, parent_clock_check, phase_lines, processes_check, scheduling_check,
                                 sealed_changes_check)

PHASE_BUDGET_S = 300.0  # per phase of the leg (importing, making inputs, compiling ...); the timing answers to --budget
# what a leg's report holds besides its context: recomputed here from its gates, never taken from it
_NOT_CONTEXT = ("schema", "kgate_version", "command", "status", "exit_code", "gates", "advisories", "next_step",
                "parent_clock", "seconds")


def leg_payload(request: MeasureRequest) -> dict[str, Any]:
    """The leg's request (kgate.verify.leg reads it): every field of `request` on the wire."""
    return {
        "reference": str(Path(request.reference).resolve()),
        "candidate": str(Path(request.candidate).resolve()),
        "entry": request.entry,
        "reference_entry": request.reference_entry,
        "seeds": [request.seed],
        "dtype": request.dtype,
        "overrides": dict(request.overrides),
        "kwargs": kwargs_to_wire(request.kwargs),
        "weights": request.weights,
        "backend": request.backend,
        "bar": request.bar.text if request.bar is not None else None,
        "budget_s": request.budget_s,
        "sessions": request.sessions,
        "time_interpreted": request.time_interpreted,
        "deadline": request.deadline,
        "target_ci": request.target_ci,
        "min_rounds": request.min_rounds,
        "max_rounds": request.max_rounds,
        "per_round": request.per_round,
        "order_seed": request.order_seed,
    }


def run_measure_apart(request: MeasureRequest, say: Callable[[str], None] = lambda _: None,
                      phase_budget_s: float = PHASE_BUDGET_S) -> Report:
    """Run `request` in a fresh `measure` leg and grade its report here; `say` is told the
    leg's phase now and then (at most every few seconds)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kgate-measure-") as scratch:
        leg = spawn.run("measure", leg_payload(request), Path(scratch), beats=True, phase_budget_s=phase_budget_s,
                        on_phase=phase_lines("the measure process", say))
        _relay(Path(scratch) / "measure-stderr.txt")
    report = report_from_leg(leg, request)
    report.context["wall_s"] = round(time.monotonic() - started, 3)  # this process's: the leg's start included
    return report


RELAY_BYTES = 64 * 1024  # the most of the measure process's output passed on (its end: where a crash speaks)


def _relay(path: Path) -> None:
    """What the measure process printed (the candidate's prints, a traceback) goes to this
    process's stderr, its last RELAY_BYTES; stdout holds only kgate's report."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    if data:
        sys.stderr.write(data[-RELAY_BYTES:].decode(errors="replace"))
        sys.stderr.flush()


def report_from_leg(leg: Mapping[str, Any], request: MeasureRequest) -> Report:
    """The measure report from the leg's result: its gates, with this process's checks of the
    leg's samples and processes added to integrity; its status and advisories recomputed. The
    leg ran candidate code, so nothing in its result is taken on its word: a gate left out, a
    shape kgate never writes, a claim that nothing was timed after rounds were asked for, or
    numbers that do not follow from its own samples is said, never passed. Bad input the leg
    refused (a KgateError there) is bad input here: raised, exit 2 with the error document."""
    clock = leg.get("parent_clock")
    seconds = {"legs": {"measure leg": spawn.phase_seconds(clock)}} if isinstance(clock, Mapping) else {}
    error = leg.get("error")
    if leg.get("status") == "ERROR" and "gates" not in leg and isinstance(error, Mapping):
        raise KgateError(str(error.get("problem", "the measure process refused the request")), str(error.get("fix", "")))
    if not isinstance(leg.get("gates"), Mapping):
        return _unfinished(*_ended(leg), request, seconds)
    try:
        return _graded(leg, request, seconds)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        return _unfinished(f"its result is not a report kgate writes ({exc})",
                           "run the candidate alone and see what it changes in the process: a result kgate did not "
                           "write means candidate code rewrote it.", request, seconds)


def _graded(leg: Mapping[str, Any], request: MeasureRequest, seconds: dict[str, Any]) -> Report:
    gates_in = leg["gates"]
    missing = [name for name in ("integrity", "timing", *(("bar",) if request.bar is not None else ())) if name not in gates_in]
    if missing:
        raise ValueError(f"it has no {' or '.join(missing)} gate")
    gates = {str(name): gate_from_json(str(name), data) for name, data in gates_in.items()}
    integrity = gates.pop("integrity")
    ticks = (leg.get("parent_clock") or {}).get("ticks") or []
    notes: list[str] = []
    why = gates["timing"].details.get("not_timed")
    if why:  # nothing timed: the timing and bar gates are this process's own, whatever the leg wrote
        why = why if why in ("interpreted", "not run") else "interpreted"
        gates.update(not_timed_gates(request.bar.text if request.bar is not None else None, why))
        notes += [NOT_TIMED_NOTE] if why == "interpreted" else []
        outside = [Check("measure.parent_clock", "FAIL", f"the timing process said it timed nothing, yet it asked this "
                         f"process for {len(ticks)} timed rounds", "re-run; a candidate that rewrites kgate's report "
                         "makes the run worthless.")] if ticks else []
    else:
        outside = [parent_clock_check("measure", leg), processes_check("measure", leg), scheduling_check("measure", leg)]
        timing_json = gates_in["timing"]
        if timing_json.get("speedup") is not None:
            outside.append(_rederived(timing_json, gates_in.get("bar")))
        elif "bar" in gates and gates["bar"].details.get("outcome") not in (None, "UNDECIDED"):
            raise ValueError("its bar is decided without a speedup")
    outside.append(sealed_changes_check("measure", leg))
    gates = {"integrity": GateResult("integrity", (*integrity.checks, *outside), integrity.details), **gates}
    advisories = leg.get("advisories", [])
    if not isinstance(advisories, list) or not all(isinstance(a, str) for a in advisories):
        raise ValueError("its advisories are not a list of lines")
    # the leg's advisories are its notes and its gates' advisory checks (`gate.check: ...`): the report
    # recomputes those from the gates above, so only the notes are kept
    notes += [a for a in advisories if a not in notes and not any(a.startswith(f"{name}.") for name in gates_in)]
    context = {key: value for key, value in leg.items() if key not in _NOT_CONTEXT}
    for key in ("reference", "candidate"):
        if not isinstance(context.get(key), Mapping):
            raise ValueError(f"its {key} is not an object")
    context["seconds"] = seconds
    return Report("measure", gates, context, tuple(notes))


def _rederived(timing: Mapping[str, Any], bar: Mapping[str, Any] | None) -> Check:
    """The timing process's numbers recomputed here from its raw samples (as `verify-receipt` does)."""
    problems = receipts.rederive_timing(timing, bar)
    if problems:
        return Check("measure.rederived", "FAIL", "the timing process's numbers do not follow from its own samples: "
                     + "; ".join(problems[:3]), "re-run; a candidate that rewrites kgate's report makes the run's "
                     "timings worthless.")
    return Check("measure.rederived", "PASS", "the p50s, the speedup, its interval, sigma and the bar follow from the "
                 "raw samples, recomputed here")


def _ended(leg: Mapping[str, Any]) -> tuple[str, str]:
    """How a measure process that left no report ended, and the fix: its own words where it had any."""
    error = leg.get("error") if isinstance(leg.get("error"), Mapping) else {}
    return (str(error.get("problem", leg.get("status", "no result"))),
            str(error.get("fix", "run the candidate on the op-point's inputs by hand (`kgate gate` first) and fix "
                                 "what ends its process; a candidate that does not run to the end cannot be timed.")))


def _unfinished(problem: str, fix: str, request: MeasureRequest, seconds: dict[str, Any]) -> Report:
    """The report of a measure process that gave no report this process can grade: a FAIL that
    says how, with what a record needs to file it (both modules' hashes, the terms)."""
    measured = Check("measured", "FAIL", f"the measure process did not finish: {problem}", fix)
    gates = {
        "integrity": GateResult("integrity", (), skipped_reason="not evaluated: the measure process did not finish "
                                "(see the timing gate)"),
        "timing": GateResult("timing", (measured,)),
    }
    context: dict[str, Any] = {"reference": _module(request.reference), "candidate": _module(request.candidate),
                               "op_point": {"overrides": dict(request.overrides)}, "dtype": request.dtype,
                               "seconds": seconds}
    return Report("measure", gates, context)


def _module(path: Path) -> dict[str, Any]:
    try:
        return {"path": str(path), "sha256": file_sha256(Path(path))}
    except OSError:
        return {"path": str(path)}
