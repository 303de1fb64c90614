"""The suite's summary across candidates, pure: the correct rate, fast_p counted on the lower
end of each speedup interval (never a point estimate), and the geometric-mean speedup over
correct candidates with a bootstrap interval that resamples problems."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgate.errors import KgateError

FAST_P = (1.0, 1.5, 2.0)
RESAMPLES = 4000

# A row's status: how far the candidate got.
ERROR = "ERROR"  # kgate could not evaluate it (a load error, bad input, a leg that crashed or ran out of time)
GATE_FAIL = "GATE_FAIL"  # the early-kill gate failed: never timed
FAIL = "FAIL"  # gated, then verify's checks failed at the op-point (or it was an anomaly)
PASS = "PASS"  # gated and verified


@dataclass(frozen=True)
class Row:
    """One candidate's outcome: its problem, status, why, and the speedup interval verify
    measured (None when it timed nothing)."""

    problem: str
    candidate: str
    status: str
    reason: str = ""
    speedup: Mapping[str, float] | None = None  # estimate, low, high
    interpreted: bool = False
    key: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def why(self) -> str:
        """What the row says beside its status: why it is not a PASS, or, for one, what verify checked."""
        return self.reason or str(self.extra.get("checked", ""))

    @property
    def correct(self) -> bool:
        return self.status == PASS

    @property
    def timed(self) -> bool:
        """A device number that can count: verified, timed, and not an interpreter's."""
        return self.correct and self.speedup is not None and not self.interpreted

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem, "candidate": self.candidate, "status": self.status, "reason": self.reason,
                "speedup": dict(self.speedup) if self.speedup is not None else None, "interpreted": self.interpreted,
                "key": self.key, **dict(self.extra)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Row:
        known = {"problem", "candidate", "status", "reason", "speedup", "interpreted", "key"}
        speedup = data.get("speedup")
        return cls(str(data["problem"]), str(data["candidate"]), str(data["status"]), str(data.get("reason", "")),
                   {k: float(speedup[k]) for k in ("estimate", "low", "high")} if speedup else None,
                   bool(data.get("interpreted", False)), str(data.get("key", "")),
                   {k: v for k, v in data.items() if k not in known})


@dataclass(frozen=True)
class Summary:
    candidates: int
    problems: int
    correct: int
    timed: int
    interpreted: int  # correct candidates whose kernel ran in an interpreter: never counted as speedups
    fast_p: Mapping[float, float]  # p -> share of all candidates correct with an interval above p
    geomean: Mapping[str, float] | None  # estimate, low, high over timed candidates; None without any

    @property
    def correct_rate(self) -> float:
        return self.correct / self.candidates if self.candidates else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"candidates": self.candidates, "problems": self.problems, "correct": self.correct,
                "correct_rate": self.correct_rate, "timed": self.timed, "interpreted": self.interpreted,
                "fast_p": {f"{p:g}": v for p, v in self.fast_p.items()},
                "geomean_speedup": dict(self.geomean) if self.geomean is not None else None,
                "method": "fast_p: a candidate counts when it is correct and the lower end of its speedup interval "
                          "exceeds p; geomean over timed correct candidates, its 95% interval a bootstrap over "
                          f"problems ({RESAMPLES} resamples, seed 0)"}


def fast_p(rows: Sequence[Row], p: float) -> float:
    """KernelBench's fast_p, counted honestly: correct AND the interval's lower end above p, over
    all candidates (an interpreted timing never counts)."""
    if not rows:
        return 0.0
    return sum(1 for r in rows if r.timed and r.speedup is not None and r.speedup["low"] > p) / len(rows)


def geomean_interval(rows: Sequence[Row], seed: int = 0) -> dict[str, float] | None:
    """The geometric mean of the timed candidates' speedup estimates, with a 95% percentile
    interval from resampling problems with replacement (a problem's candidates move together:
    they share its reference and its machine state)."""
    by_problem: dict[str, list[float]] = {}
    for r in rows:
        if r.timed and r.speedup is not None and r.speedup["estimate"] > 0:
            by_problem.setdefault(r.problem, []).append(math.log(r.speedup["estimate"]))
    if not by_problem:
        return None
    groups = list(by_problem.values())
    sums = np.array([sum(g) for g in groups])
    counts = np.array([len(g) for g in groups])
    estimate = float(np.exp(sums.sum() / counts.sum()))
    if len(groups) == 1:  # nothing to resample across: no interval, rather than a zero-width one
        return {"estimate": estimate, "problems": 1}
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(RESAMPLES, len(groups)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.exp(np.percentile(means, [2.5, 97.5]))
    return {"estimate": estimate, "low": float(low), "high": float(high), "problems": len(groups)}


def parse_fast_p(text: str) -> tuple[float, ...]:
    """`--fast-p 1.0,1.5,2.0`: the speedups fast_p is counted at, each a finite number above 0,
    in increasing order, none twice."""
    try:
        ps = tuple(float(part) for part in text.split(","))
    except ValueError:
        ps = ()
    if not ps or not all(math.isfinite(p) and p > 0 for p in ps) or len(set(ps)) != len(ps):
        raise KgateError(f"--fast-p {text!r} is not a list of speedups.",
                         "give finite speedups above 0, comma-separated, each once, e.g. --fast-p 1.0,1.5,2.0.")
    return tuple(sorted(ps))


def summarize(rows: Sequence[Row], ps: Sequence[float] = FAST_P) -> Summary:
    return Summary(
        candidates=len(rows),
        problems=len({r.problem for r in rows}),
        correct=sum(1 for r in rows if r.correct),
        timed=sum(1 for r in rows if r.timed),
        interpreted=sum(1 for r in rows if r.correct and r.interpreted),
        fast_p={p: fast_p(rows, p) for p in ps},
        geomean=geomean_interval(rows),
    )
