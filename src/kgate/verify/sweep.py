"""`kgate sweep`: every point of a grid of the candidate's keyword arguments through the
early-kill gate, and each point that passes co-measured against the reference.

This process never imports the candidate: each point's gate runs in the gate's own legs (a
process for the reference, one for the candidate), and each point's timing in a fresh
`kgate measure` process, so no point's code runs where another point is judged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kgate.gates import fit
from kgate.gates import sweep as sweep_gate
from kgate.gates.common import GateResult
from kgate.problem.module import kwargs_to_wire
from kgate.verify.early import CheckRequest, run_gate
from kgate.verify.outcome import Report


@dataclass(frozen=True)
class SweepTiming:
    """How the points that pass their gate are timed (`kgate measure`'s own options)."""

    budget_s: float = 10.0
    time_interpreted: bool = False
    seed: int = 42


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def _gate_reason(report: Report) -> str:
    """Each failing gate in short: how many of its checks failed, and the first one's words."""
    by_gate: dict[str, list[Any]] = {}
    for name, check in report.failed_checks:
        by_gate.setdefault(name, []).append(check)
    return "; ".join(
        f"{name} ({len(checks)} check{'s' if len(checks) > 1 else ''} FAIL): {checks[0].name}: "
        f"{_short(checks[0].detail, 140)}" for name, checks in by_gate.items())


def measure_args(request: CheckRequest, kwargs: Mapping[str, Any], timing: SweepTiming) -> list[str]:
    """The `kgate measure` command line that times one point."""
    args = [sys.executable, "-m", "kgate", "measure", "-r", str(Path(request.reference).resolve()),
            "-c", str(Path(request.candidate).resolve()), "--entry", request.entry,
            "--reference-entry", request.reference_entry, "--seed", str(timing.seed),
            "--budget", f"{timing.budget_s:g}", "--json"]
    for key, value in request.overrides.items():
        args += ["--set", f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}"]
    for key, text in kwargs_to_wire(kwargs).items():
        args += ["--kwarg", f"{key}={text}"]
    if request.dtype:
        args += ["--dtype", request.dtype]
    if timing.time_interpreted:
        args.append("--time-interpreted")
    return args


def _timed(
    request: CheckRequest, kwargs: Mapping[str, Any], timing: SweepTiming
) -> tuple[dict[str, float] | None, str, bool]:
    """One point's speedup interval from a fresh `kgate measure` (None and why, when there is
    none), and whether those were interpreter timings."""
    limit = 300 + 10 * timing.budget_s  # compiles and the checks around the timed rounds, generously
    try:
        proc = subprocess.run(measure_args(request, kwargs, timing), capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None, f"the timing process did not finish in {limit:g} s", False
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return None, f"the timing process printed no report ({_short(tail[0])})", False
    if report.get("status") == "ERROR":
        problem = str(report.get("error", {}).get("problem", ""))
        return None, f"the timing could not run: {_short(problem)}", False
    timing_gate = report.get("gates", {}).get("timing", {})
    speedup = timing_gate.get("speedup")
    if report.get("timing") == "not timed (interpreted)" or timing_gate.get("status") == "SKIPPED":
        return None, "a kernel runs in an interpreter here, whose timings back nothing (--time-interpreted times it)", True
    if report.get("status") != "PASS" or not isinstance(speedup, dict):
        failed = [f"{g}.{c['name']}" for g, gate in report.get("gates", {}).items()
                  for c in gate.get("checks", []) if c.get("status") == "FAIL"]
        return None, f"the timing run {report.get('status')}: {', '.join(failed) or 'no speedup'}", False
    return {k: float(speedup[k]) for k in ("estimate", "low", "high")}, "", bool(report.get("interpreted"))


def run_sweep(
    request: CheckRequest, grid: Mapping[str, Sequence[Any]], timing: SweepTiming,
    say: Callable[[str], None] = lambda _: None,
) -> Report:
    """Gate every point of `grid` (each bound over `request.kwargs`); time those that pass."""
    started = time.perf_counter()
    points = fit.points(grid)
    outcomes: list[sweep_gate.PointOutcome] = []
    op_point: Any = None
    for n, point in enumerate(points, 1):
        kwargs = {**request.kwargs, **point}
        say(f"sweep: point {n}/{len(points)} ({fit.label(point)}): the early-kill gate")
        report = run_gate(replace(request, kwargs=kwargs))
        op_point = op_point or report.context.get("op_point")
        if report.status != "PASS":
            outcomes.append(sweep_gate.PointOutcome(point, report.status, _gate_reason(report)))
            say(f"sweep: point {n}/{len(points)} ({fit.label(point)}): gate {report.status}, not timed")
            continue
        say(f"sweep: point {n}/{len(points)} ({fit.label(point)}): gate PASS, timing")
        speedup, why, interpreted = _timed(request, kwargs, timing)
        outcomes.append(sweep_gate.PointOutcome(point, "PASS", speedup=speedup, not_timed=why, interpreted=interpreted))
    gates: dict[str, GateResult] = {"sweep": sweep_gate.evaluate(outcomes)}
    context = {
        "class": request.klass,
        "reference": {"path": str(request.reference)},
        "candidate": {"path": str(request.candidate), "entry": request.entry,
                      **({"kwargs": dict(request.kwargs)} if request.kwargs else {})},
        "op_point": op_point or {},
        "grid": {k: list(v) for k, v in grid.items()},
        "timing_budget_s": timing.budget_s,
        "wall_s": round(time.perf_counter() - started, 3),
    }
    return Report("sweep", gates, context)
