"""The sweep gate: a grid of the candidate's keyword arguments, each point through the
early-kill gate first, and only the points that pass it timed.

Pure logic over what each point's gate and timing reported: one check per point, whether any
point passed, and the best timed point with its interval and whether it is told apart from
the runner-up. A point that fails its gate, or crashes, is a row with its reason: it is never
timed and never the best.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgate.gates.common import Check, GateResult
from kgate.gates.fit import label


@dataclass(frozen=True)
class PointOutcome:
    """What one point's gate and timing said."""

    point: Mapping[str, Any]
    gate_status: str  # the gate report's status: PASS, FAIL or ANOMALY
    reason: str = ""  # the gate's failures, in short (empty when it passed)
    speedup: Mapping[str, float] | None = None  # {"estimate", "low", "high"}: the candidate over the reference
    not_timed: str = ""  # why a point that passed its gate has no speedup
    interpreted: bool = False  # its timings are an interpreter's (--time-interpreted): they steer nothing
    stage: str = "gate"  # what failed it: its early-kill gate, or verify at the op-point

    @property
    def passed(self) -> bool:
        return self.gate_status == "PASS"

    @property
    def label(self) -> str:
        return label(self.point)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"point": dict(self.point), "label": self.label, "gate": self.gate_status}
        if self.stage != "gate":
            out["failed_at"] = self.stage
        if self.reason:
            out["reason"] = self.reason
        if self.speedup is not None:
            out["speedup"] = dict(self.speedup)
        if self.not_timed:
            out["not_timed"] = self.not_timed
        if self.interpreted:
            out["interpreted"] = True
        return out


def interval_text(speedup: Mapping[str, float]) -> str:
    return f"{speedup['estimate']:.3g}x [{speedup['low']:.3g}, {speedup['high']:.3g}]"


def _point_check(outcome: PointOutcome) -> Check:
    if not outcome.passed:
        return Check(outcome.label, "ADVISORY", f"{outcome.stage} {outcome.gate_status}: {outcome.reason}; not timed")
    if outcome.speedup is not None:
        what = "interpreter timings, " if outcome.interpreted else ""
        return Check(outcome.label, "PASS", f"gate PASS; speedup {interval_text(outcome.speedup)} ({what}95% interval)")
    return Check(outcome.label, "PASS", f"gate PASS; not timed: {outcome.not_timed}")


def _timed(outcomes: Sequence[PointOutcome]) -> list[PointOutcome]:
    """The points that passed and were timed, the largest speedup estimate first."""
    return sorted((o for o in outcomes if o.passed and o.speedup is not None),
                  key=lambda o: o.speedup["estimate"], reverse=True)  # type: ignore[index]


def best_point(outcomes: Sequence[PointOutcome]) -> PointOutcome | None:
    """The best timed point, or None when none was timed or the timings were an interpreter's."""
    timed = _timed(outcomes)
    return None if not timed or any(o.interpreted for o in timed) else timed[0]


def best_check(outcomes: Sequence[PointOutcome]) -> Check | None:
    """The best timed point (the largest speedup estimate) and whether its interval clears the
    runner-up's; None when no point was timed."""
    timed = _timed(outcomes)
    if not timed:
        return None
    best = timed[0]
    said = f"best point {best.label}: {interval_text(best.speedup)}"  # type: ignore[arg-type]
    if any(o.interpreted for o in timed):
        return Check("best", "ADVISORY", f"{said}, on interpreter timings: they say nothing about the device, so no "
                     "point is the best here; time the points that pass on the device")
    if len(timed) == 1:
        return Check("best", "PASS", f"{said}; the only point timed")
    runner = timed[1]
    against = f"the runner-up {runner.label}: {interval_text(runner.speedup)}"  # type: ignore[arg-type]
    if best.speedup["low"] > runner.speedup["high"]:  # type: ignore[index]
        return Check("best", "PASS", f"{said}; told apart from {against} (the intervals do not overlap)")
    return Check("best", "ADVISORY", f"{said}; not told apart from {against}: the intervals overlap, so either may be "
                 "the faster; time both longer (--budget) before choosing on speed")


def evaluate(outcomes: Sequence[PointOutcome]) -> GateResult:
    """One check per point; `some_point_passes` FAILs when no point passes its gate; `best`
    names the best timed point, or says why none was timed."""
    checks = [_point_check(o) for o in outcomes]
    passing = [o for o in outcomes if o.passed]
    if passing:
        checks.append(Check("some_point_passes", "PASS", f"{len(passing)} of {len(outcomes)} points pass: "
                            + ", ".join(o.label for o in passing)))
    else:
        checks.append(Check("some_point_passes", "FAIL", f"none of the {len(outcomes)} points passes",
                            "read each point's reason; change the grid or the kernel, and check one point alone with "
                            "`kgate gate --kwarg NAME=VALUE`."))
    best = best_check(outcomes)
    if best is not None:
        checks.append(best)
    elif passing:
        reasons = sorted({o.not_timed for o in passing if o.not_timed})
        checks.append(Check("best", "ADVISORY", "no point was timed, so none is the best: " + "; ".join(reasons)))
    return GateResult("sweep", tuple(checks), {"points": [o.to_json() for o in outcomes]})
