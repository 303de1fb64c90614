"""`kgate sweep`: every point of a grid of the candidate's keyword arguments through the
early-kill gate, and each point that passes co-measured against the reference.

This process never imports the candidate: each point's gate runs in the gate's own legs (a
process for the reference, one for the candidate), and each point that passes is verified
as `kgate verify --mode screen` verifies (the checks again at the op-point that is timed,
then the timing in its own process, its answer held against the checked one), so no
point's code runs where any point is judged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.gates import fit
from kgate.gates import sweep as sweep_gate
from kgate.gates.common import Check, GateResult
from kgate.verify.early import CheckRequest, run_gate
from kgate.verify.outcome import Report


INTERPRETED = "a kernel runs in an interpreter here, whose timings back nothing (--time-interpreted times it)"


@dataclass(frozen=True)
class PointRecord:
    """One point's evidence, for `kgate sweep --record`: the sealed verify receipt of a point that
    was timed, else its gate report (the -o document), else None (the point could not be evaluated)."""

    outcome: sweep_gate.PointOutcome
    receipt: Mapping[str, Any] | None = None  # sealed, from verify
    report: str | None = None  # the gate report's JSON document


@dataclass(frozen=True)
class SweepTiming:
    """How the points that pass their gate are verified and timed (`kgate verify`'s options)."""

    budget_s: float = 10.0
    time_interpreted: bool = False


def failures(report: Report) -> str:
    """Each failing gate in short: how many of its checks failed, and the first one's words."""
    by_gate: dict[str, list[Any]] = {}
    for name, check in report.failed_checks:
        by_gate.setdefault(name, []).append(check)
    return "; ".join(
        f"{name} ({len(checks)} check{'s' if len(checks) > 1 else ''} FAIL): {checks[0].name}: "
        f"{fit.short(checks[0].detail, 140)}" for name, checks in by_gate.items())


def verify_point(request: CheckRequest, kwargs: Mapping[str, Any], timing: SweepTiming,
                 say: Callable[[str], None], label: str = "sweep", mode: str = "screen",
                 artifacts: Path | None = None) -> tuple[Report, dict[str, float] | None, str, dict[str, Any]]:
    """One point through `kgate verify` at the op-point (`--mode screen` unless `mode` says full,
    its profiler capture into `artifacts`): the checks again on the inputs that are timed, then
    the co-measured timing in its own process. The report, the speedup interval (None when there
    is none), why there is none, and the sealed receipt."""
    from kgate.verify.screen import VerifyRequest, run_verify

    report, sealed = run_verify(VerifyRequest(
        reference=request.reference, candidate=request.candidate, entry=request.entry, klass=request.klass,
        seeds=request.seeds, reference_entry=request.reference_entry, phase_budget_s=request.phase_budget_s,
        dtype=request.dtype, overrides={**request.registered, **request.overrides}, parity=request.parity_spec.describe(),
        firing=request.firing_spec, budget_s=timing.budget_s, time_interpreted=timing.time_interpreted, kwargs=kwargs,
        weights=request.weights, backend=request.backend, mode=mode, artifacts=artifacts,
    ), say=lambda line: say(f"{label}:   {line}"))
    speedup = report.gates["timing"].details.get("speedup") if "timing" in report.gates else None
    if report.status != "PASS":
        return report, None, failures(report), sealed
    if not isinstance(speedup, Mapping):
        return report, None, INTERPRETED if report.context.get("interpreted") else "verify timed nothing", sealed
    return report, {k: float(speedup[k]) for k in ("estimate", "low", "high")}, "", sealed


def run_sweep(
    request: CheckRequest, grid: Mapping[str, Sequence[Any]], timing: SweepTiming,
    say: Callable[[str], None] = lambda _: None, keep: list[PointRecord] | None = None,
) -> Report:
    """Gate every point of `grid` (each bound over `request.kwargs`); time those that pass. `keep`
    (for --record) gets each point's outcome with its receipt or gate report, in grid order."""
    from kgate.jsonio import document

    started = time.perf_counter()
    both = sorted(set(grid) & set(request.kwargs))
    if both:
        raise KgateError(f"{', '.join(both)} {'is' if len(both) == 1 else 'are'} given by --grid and by --kwarg.",
                         "vary a keyword with --grid, or fix it with --kwarg: not both.")
    points = fit.points(grid)
    outcomes: list[sweep_gate.PointOutcome] = []
    gated: Any = None  # the op-point the gate ran at, and the one verify timed at
    timed: Any = None
    refused: list[KgateError] = []
    for n, point in enumerate(points, 1):
        kwargs = {**request.kwargs, **point}
        where = f"sweep: point {n}/{len(points)} ({fit.label(point)})"
        say(f"{where}: the early-kill gate")
        try:
            report = run_gate(replace(request, kwargs=kwargs))
        except KgateError as exc:  # this point could not be evaluated: a row; every point refused: bad input
            refused.append(exc)
            outcomes.append(sweep_gate.PointOutcome(point, "FAIL", f"could not be evaluated: {exc.problem}"))
            say(f"{where}: could not be evaluated")
            if keep is not None:
                keep.append(PointRecord(outcomes[-1]))
            continue
        gated = gated or report.context.get("op_point")
        gate_doc = document(report.to_json(), "report") if keep is not None else None
        if report.status != "PASS":
            outcomes.append(sweep_gate.PointOutcome(point, report.status, failures(report)))
            say(f"{where}: gate {report.status}, not timed")
        elif report.context.get("interpreted") and not timing.time_interpreted:
            outcomes.append(sweep_gate.PointOutcome(point, "PASS", not_timed=INTERPRETED))
            say(f"{where}: gate PASS; not timed (a kernel runs in an interpreter here)")
        else:
            say(f"{where}: gate PASS; kgate verify at the op-point")
            verified, speedup, why, sealed = verify_point(request, kwargs, timing, say)
            timed = timed or verified.context.get("op_point")
            if verified.status != "PASS":
                outcomes.append(sweep_gate.PointOutcome(point, verified.status, why, stage="verify"))
            else:
                outcomes.append(sweep_gate.PointOutcome(point, "PASS", speedup=speedup, not_timed=why,
                                                        interpreted=bool(verified.context.get("interpreted"))))
            if keep is not None:
                keep.append(PointRecord(outcomes[-1], receipt=sealed))
            continue
        if keep is not None:
            keep.append(PointRecord(outcomes[-1], report=gate_doc))
    if refused and len(refused) == len(points) and len({e.problem for e in refused}) == 1:
        raise refused[0]  # the same refusal at every point: the sweep's input is what is wrong
    gates: dict[str, GateResult] = {"sweep": sweep_gate.evaluate(outcomes)}
    anomalies = [o for o in outcomes if o.gate_status == "ANOMALY"]
    if anomalies:  # the module tampered with a run (or timed another answer): no point of it is to be trusted
        gates = {"integrity": GateResult("integrity", tuple(
            Check(f"{o.label}.untampered", "FAIL", f"at this point the {o.stage} was an ANOMALY: {o.reason}",
                  "the candidate module interfered with the checks or the timing at this point; nothing it reported "
                  "at any point can be trusted: remove what it does besides computing the result.")
            for o in anomalies)), **gates}
    context = {
        "class": request.klass,
        "reference": {"path": str(request.reference)},
        "candidate": {"path": str(request.candidate), "entry": request.entry,
                      **({"kwargs": dict(request.kwargs)} if request.kwargs else {})},
        "op_point": gated or {},
        "timed_op_point": timed or {},
        "grid": {k: list(v) for k, v in grid.items()},
        "timing_budget_s": timing.budget_s,
        "wall_s": round(time.perf_counter() - started, 3),
    }
    return Report("sweep", gates, context)
