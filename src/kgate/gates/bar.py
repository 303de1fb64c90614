"""The falsification bar: a small grammar, evaluated against a measured speedup.

    bar     := clause ( "AND" clause )*
    clause  := "speedup" (">" | ">=") NUMBER ["x"]
             | "p50 beats naive by" (">" | ">=") NUMBER "%"
             | NUMBER ("σ" | "sigma")

`speedup > 1.5x` and `p50 beats naive by >2%` are thresholds on the pooled p50 speedup
(naive = the reference): MET when the whole confidence interval clears the threshold,
MISSED when the whole interval is below it, UNDECIDED when it straddles. `3σ` is MET when
the pooled p50 difference exceeds 3 x the run-to-run standard deviation of the per-round
difference, MISSED when the candidate is slower by more than that, UNDECIDED otherwise.
A bar is MET when every clause is MET, MISSED when any clause is MISSED.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kgate.errors import KgateError
from kgate.gates import stats
from kgate.gates.common import Check, GateResult

Outcome = Literal["MET", "MISSED", "UNDECIDED"]
GRAMMAR = (
    "clauses joined by AND: `speedup > 1.5x`, `p50 beats naive by >2%`, `3σ` (or `3sigma`); "
    'e.g. "p50 beats naive by >2% AND 3σ"'
)

_NUMBER = r"([0-9]*\.?[0-9]+)"
_SPEEDUP = re.compile(rf"^speedup\s*(>=|>)\s*{_NUMBER}\s*x?$")
_BEATS = re.compile(rf"^p50\s+beats\s+naive\s+by\s*(>=|>)\s*{_NUMBER}\s*%$")
_SIGMA = re.compile(rf"^{_NUMBER}\s*(?:σ|sigma)$")


@dataclass(frozen=True)
class Clause:
    kind: Literal["threshold", "sigma"]
    value: float  # the speedup threshold, or k
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "text": self.text}


@dataclass(frozen=True)
class Bar:
    text: str
    clauses: tuple[Clause, ...]

    @property
    def sigma_k(self) -> float | None:
        ks = [c.value for c in self.clauses if c.kind == "sigma"]
        return max(ks) if ks else None

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "clauses": [c.to_json() for c in self.clauses]}


def parse_bar(text: str) -> Bar:
    raw = " ".join(text.strip().split())
    if not raw:
        raise KgateError("the bar is empty.", f"write a bar in the grammar: {GRAMMAR}.")
    clauses = []
    for part in re.split(r"\s+AND\s+", raw, flags=re.IGNORECASE):
        low = part.strip().lower()
        if m := _SPEEDUP.match(low):
            value = float(m.group(2))
            if value <= 0:
                raise KgateError(f"bar clause {part!r} has a non-positive speedup.", "use a threshold such as 1.1x.")
            clauses.append(Clause("threshold", value, part))
        elif m := _BEATS.match(low):
            clauses.append(Clause("threshold", 1.0 + float(m.group(2)) / 100.0, part))
        elif m := _SIGMA.match(part.strip()) or _SIGMA.match(low):
            k = float(m.group(1))
            if k <= 0:
                raise KgateError(f"bar clause {part!r} needs k > 0.", "use e.g. 3σ.")
            clauses.append(Clause("sigma", k, part))
        else:
            raise KgateError(f"bar clause {part!r} is not understood.", f"write the bar as {GRAMMAR}.")
    return Bar(raw, tuple(clauses))


@dataclass(frozen=True)
class ClauseResult:
    clause: Clause
    outcome: Outcome
    arithmetic: str

    def to_json(self) -> dict[str, Any]:
        return {**self.clause.to_json(), "outcome": self.outcome, "arithmetic": self.arithmetic}


@dataclass(frozen=True)
class BarResult:
    bar: Bar
    outcome: Outcome
    clauses: tuple[ClauseResult, ...]

    def to_json(self) -> dict[str, Any]:
        return {"bar": self.bar.text, "outcome": self.outcome, "clauses": [c.to_json() for c in self.clauses]}


def evaluate_bar(
    bar: Bar,
    *,
    speedup: float,
    low: float,
    high: float,
    p50_difference_ms: float,
    sigma_ms: float,
) -> BarResult:
    """Grade the bar against a speedup interval and the run-to-run sigma (pure)."""
    results = []
    for clause in bar.clauses:
        if clause.kind == "threshold":
            t = clause.value
            outcome: Outcome = threshold_outcome(t, low, high)
            arithmetic = f"speedup {speedup:.4f} [95% CI {low:.4f}, {high:.4f}] vs threshold {t:.4f}: " + {
                "MET": "the whole interval is above",
                "MISSED": "the whole interval is below",
                "UNDECIDED": "the interval straddles it",
            }[outcome]
        else:
            k = clause.value
            margin = k * sigma_ms
            if not math.isfinite(sigma_ms):
                outcome, arithmetic = "UNDECIDED", "run-to-run sigma unavailable (fewer than 2 rounds)"
            else:
                if p50_difference_ms > margin:
                    outcome = "MET"
                elif p50_difference_ms < -margin:
                    outcome = "MISSED"
                else:
                    outcome = "UNDECIDED"
                arithmetic = (
                    f"p50 difference {p50_difference_ms:.6g} ms vs {k:g} x sigma {sigma_ms:.6g} ms = {margin:.6g} ms"
                )
        results.append(ClauseResult(clause, outcome, arithmetic))
    return BarResult(bar, combined([r.outcome for r in results]), tuple(results))


def threshold_outcome(threshold: float, low: float, high: float) -> Outcome:
    """A speedup threshold against an interval: MET when the whole interval lies above it,
    MISSED when below, UNDECIDED while the interval straddles it."""
    return "MET" if low > threshold else "MISSED" if high < threshold else "UNDECIDED"


def combined(outcomes: Sequence[Outcome]) -> Outcome:
    """A bar's outcome from its clauses': MISSED when any is, MET when all are, else UNDECIDED."""
    return "MISSED" if "MISSED" in outcomes else "MET" if outcomes and all(o == "MET" for o in outcomes) else "UNDECIDED"


def decided_alike(bar: Bar | None, first: tuple[float, float], second: tuple[float, float]) -> Outcome | None:
    """What the bar's speedup thresholds say of two intervals (the speedup measured in each
    ordering), when they say the same decided thing of both (MET, or MISSED); None when the bar
    has no threshold, or an interval leaves it undecided, or the two disagree. An order effect
    that leaves this decided is real but does not decide the bar."""
    if bar is None:
        return None
    outcomes = {interval_decision(bar, *first), interval_decision(bar, *second)}
    if len(outcomes) != 1 or None in outcomes or not any(c.kind == "threshold" for c in bar.clauses):
        return None
    return outcomes.pop()


def ordering_status(bar: Bar | None, record: Mapping[str, Any] | None, *, bar_aware: bool = True) -> str:
    """The `ordering_independent` check's status from the ordering intervals: SKIPPED without
    them, PASS when they overlap. Disjoint intervals are an order effect; it FAILs when it could
    decide the bar (no threshold to decide, or the two orderings decide it differently or not at
    all) and is an ADVISORY when the bar's thresholds are MET (or MISSED) in either ordering: a
    heavy leg that evicts the caches of the call after it is real, and honest. A receipt of a
    kgate before `bar_aware` FAILed on every disjoint pair."""
    if record is None:
        return "SKIPPED"
    if not stats.ordering_disjoint(record):
        return "PASS"
    a, b = record["both_first"], record["both_second"]
    alike = decided_alike(bar, (a["low"], a["high"]), (b["low"], b["high"])) if bar_aware else None
    return "FAIL" if alike is None else "ADVISORY"


def interval_decision(bar: Bar, low: float, high: float) -> Outcome | None:
    """What the bar's speedup thresholds say of an interval, for stopping early: MISSED when the
    interval lies below one of them, MET when above all of them, None while any straddles (or
    the bar has no threshold: sigma clauses are graded once, at the end)."""
    thresholds = [c.value for c in bar.clauses if c.kind == "threshold"]
    outcome = combined([threshold_outcome(t, low, high) for t in thresholds])
    return None if outcome == "UNDECIDED" else outcome


def bar_gate(bar: Bar, *, speedup: float, low: float, high: float, p50_difference_ms: float, sigma_ms: float,
             interpreted: bool = False) -> GateResult:
    """The `bar` gate of a report: one check per clause (MET passes), the arithmetic in words, and
    an advisory when the timings were an interpreter's (they can never back a verdict)."""
    result = evaluate_bar(bar, speedup=speedup, low=low, high=high, p50_difference_ms=p50_difference_ms,
                          sigma_ms=sigma_ms)
    fixes = {
        "MET": "",
        "MISSED": "on interpreter timings this says nothing about the device: time the candidate on the device "
        "before drawing any conclusion." if interpreted else
        "the candidate is confidently below this clause: the hypothesis behind the bar is refuted here.",
        "UNDECIDED": "the interval straddles the bar: measure longer (--budget) or on a quieter machine; "
        "`kgate calibrate` says whether this bar is measurable here at all.",
    }
    checks = [Check(f"clause{i + 1}", "PASS" if c.outcome == "MET" else "FAIL",
                    f"{c.clause.text}: {c.outcome} — {c.arithmetic}", fixes[c.outcome])
              for i, c in enumerate(result.clauses)]
    if interpreted:
        checks.append(Check("interpreted", "ADVISORY", f"the bar was graded on interpreter timings: {result.outcome} "
                            "here can never back a `supported` verdict"))
    details = result.to_json()
    details["interpreted"] = interpreted
    return GateResult("bar", tuple(checks), details)
