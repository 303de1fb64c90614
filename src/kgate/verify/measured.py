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

import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kgate.gates.common import Check, GateResult
from kgate.problem.module import kwargs_to_wire
from kgate.verify import spawn
from kgate.verify.measure import MeasureRequest
from kgate.verify.outcome import Report
from kgate.verify.screen import gate_from_json, parent_clock_check, phase_lines, processes_check

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
    report = report_from_leg(leg, request)
    report.context["wall_s"] = round(time.monotonic() - started, 3)  # this process's: the leg's start included
    return report


def report_from_leg(leg: Mapping[str, Any], request: MeasureRequest) -> Report:
    """The measure report from the leg's result: its gates, with this process's checks of the
    leg's samples and processes added to integrity; its status and advisories recomputed."""
    clock = leg.get("parent_clock")
    seconds = {"legs": {"measure leg": spawn.phase_seconds(clock)}} if isinstance(clock, Mapping) else {}
    gates_in = leg.get("gates")
    if not isinstance(gates_in, Mapping):
        return _unfinished(leg, request, seconds)
    gates = {str(name): gate_from_json(str(name), data) for name, data in gates_in.items()}
    timing = gates.get("timing")
    if timing is not None and not timing.details.get("not_timed"):
        outside = (parent_clock_check("measure", leg), processes_check("measure", leg))
        integrity = gates.get("integrity")
        gates["integrity"] = GateResult("integrity", (*(integrity.checks if integrity else ()), *outside),
                                        integrity.details if integrity else {})
        gates = {"integrity": gates.pop("integrity"), **gates}
    from_gates = {f"{name}.{c.name}: {c.detail}" for name, gate in gates.items() for c in gate.advisories}
    notes = tuple(str(a) for a in leg.get("advisories", []) if a not in from_gates)
    context = {key: value for key, value in leg.items() if key not in _NOT_CONTEXT}
    context["seconds"] = seconds
    return Report("measure", gates, context, notes)


def _unfinished(leg: Mapping[str, Any], request: MeasureRequest, seconds: dict[str, Any]) -> Report:
    error = leg.get("error") if isinstance(leg.get("error"), Mapping) else {}
    problem = error.get("problem", leg.get("status", "no result"))
    measured = Check("measured", "FAIL", f"the measure process did not finish: {problem}",
                     error.get("fix", "run the candidate on the op-point's inputs by hand (`kgate gate` first) and fix "
                               "what ends its process; a candidate that does not run to the end cannot be timed."))
    gates = {
        "integrity": GateResult("integrity", (), skipped_reason="not evaluated: the measure process did not finish "
                                "(see the timing gate)"),
        "timing": GateResult("timing", (measured,)),
    }
    context = {"reference": {"path": str(request.reference)}, "candidate": {"path": str(request.candidate)},
               "seconds": seconds}
    return Report("measure", gates, context)
