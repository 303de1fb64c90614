"""`kgate flags`: the four-leg fairness harness for a compiler flag.

A flag (an XLA flag, a libtpu argument, a jax setting read from the environment) is
process-global: one process cannot time a leg with it and another without it. So the harness
times the reference and the candidate co-measured (as `kgate measure` does, in verify's
measure leg) in fresh processes of two kinds, alternated ABBA: the default environment, and
the same with the flag. That gives the four legs: reference, reference + flag, candidate,
candidate + flag. From them:

- the candidate against the reference with the flag on both (co-measured in the flagged
  processes): the candidate's own win when its kernel needs the flag;
- the candidate against the reference without it (co-measured, default processes);
- the flag's effect on the reference, and on the candidate (across processes: each process
  is one sample, the interval a t interval on the log p50s of the two settings).

A flag that speeds the reference as much as the candidate is the flag's win, not the
candidate's: the report says which number is which, and for the `flag` class (the flag is
the intervention) the claim is the reference's default against the reference flagged.
Nothing here imports the problem or the array library: the legs do.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.gates.bar import Bar, bar_gate
from kgate.gates.common import Check, GateResult
from kgate.gates.stats import welch_ratio
from kgate.problem.module import kwargs_to_wire
from kgate.verify import spawn
from kgate.verify.outcome import NOT_TIMED_NOTE, Report

NAMES = re.compile(r"^(XLA_FLAGS|LIBTPU_INIT_ARGS|JAX_[A-Z0-9_]+)$")
APPENDED = ("XLA_FLAGS", "LIBTPU_INIT_ARGS")  # lists of --name=value: the flag is added to what is set
SETTINGS = ("default", "flagged")
LEVEL = 0.95


@dataclass(frozen=True)
class Flag:
    name: str  # the environment variable
    value: str

    def text(self) -> str:
        return f"{self.name}={self.value}"


def parse_flags(items: Sequence[str]) -> tuple[Flag, ...]:
    """`--flag NAME=VALUE`: NAME is XLA_FLAGS or LIBTPU_INIT_ARGS (VALUE: `--flag_name=value`
    items, added to what the environment sets) or a JAX_* setting (VALUE replaces it)."""
    if not items:
        raise KgateError("no --flag given.", "name the flag, e.g. --flag XLA_FLAGS=--xla_backend_optimization_level=0.")
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not NAMES.match(name) or not value.strip():
            raise KgateError(f"--flag {item!r} is not NAME=VALUE with NAME one of XLA_FLAGS, LIBTPU_INIT_ARGS, JAX_*.",
                             "e.g. --flag XLA_FLAGS=--xla_backend_optimization_level=0 or "
                             "--flag JAX_DEFAULT_MATMUL_PRECISION=highest.")
        if name in APPENDED and not all(part.startswith("--") for part in value.split()):
            raise KgateError(f"--flag {item!r}: {name} holds --name=value items.", f"write {name}=--xla_name=value.")
        out.append(Flag(name, value.strip()))
    return tuple(out)


def flagged_env(flags: Sequence[Flag], base: Mapping[str, str]) -> dict[str, str]:
    """The variables a flagged process gets on top of `base` (the environment as it is)."""
    env: dict[str, str] = {}
    for flag in flags:
        if flag.name in APPENDED:
            env[flag.name] = " ".join(part for part in (env.get(flag.name, base.get(flag.name, "")), flag.value) if part)
        else:
            env[flag.name] = flag.value
    return env


@dataclass(frozen=True)
class FlagsRequest:
    reference: Path
    candidate: Path
    flags: tuple[Flag, ...]
    klass: str = "kernel-authored"
    entry: str = "workload"
    reference_entry: str = "workload"
    seed: int = 42
    dtype: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    weights: str = "shared"  # a Model reference's weights: shared | random:SEED (`--weights`)
    repeats: int = 3  # processes of each setting
    budget_s: float = 6.0  # each process's timing budget
    sessions: int = 2
    time_interpreted: bool = False
    phase_budget_s: float | None = None
    bar: Bar | None = None  # graded on the headline: the flag's effect (class flag), else the flagged pair

    def __post_init__(self) -> None:
        if self.repeats < 2:
            raise KgateError(f"--repeats {self.repeats}: each setting needs at least 2 processes for a spread.",
                             "use --repeats 2 or more.")
        if self.budget_s <= 0:
            raise KgateError(f"--budget {self.budget_s:g} is not a time budget.", "give seconds per process.")


def order(repeats: int) -> list[str]:
    """ABBA...: each setting as often first as second, so a machine that drifts favours neither."""
    out: list[str] = []
    for i in range(repeats):
        out += list(SETTINGS if i % 2 == 0 else reversed(SETTINGS))
    return out


def run_flags(request: FlagsRequest, say: Callable[[str], None] = lambda _: None) -> Report:
    from kgate.backends import require_jax

    require_jax(request.reference, "kgate flags tries XLA compiler flags, which only JAX programs read")
    payload = {
        "reference": str(Path(request.reference).resolve()), "candidate": str(Path(request.candidate).resolve()),
        "entry": request.entry, "reference_entry": request.reference_entry, "seeds": [request.seed],
        "dtype": request.dtype, "overrides": dict(request.overrides), "kwargs": kwargs_to_wire(request.kwargs),
        "weights": request.weights, "bar": None, "budget_s": request.budget_s, "sessions": request.sessions,
        "time_interpreted": request.time_interpreted,
    }
    env = {"default": {}, "flagged": flagged_env(request.flags, os.environ)}
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in SETTINGS}
    plan = order(request.repeats)
    with tempfile.TemporaryDirectory(prefix="kgate-flags-") as scratch:
        for n, setting in enumerate(plan, 1):
            say(f"flags: process {n}/{len(plan)}: reference and candidate co-measured, {setting}")
            runs[setting].append(spawn.run("measure", payload, Path(scratch) / f"{n}-{setting}", env=env[setting],
                                           beats=True, phase_budget_s=request.phase_budget_s))
    return evaluate(request, runs, env["flagged"])


# -- the numbers -----------------------------------------------------------------------------


def _p50s(run: Mapping[str, Any]) -> tuple[float, float, Mapping[str, float]] | None:
    timing = (run.get("gates") or {}).get("timing") or {}
    try:
        ref, cand = float(timing["reference"]["p50_ms"]), float(timing["candidate"]["p50_ms"])
        speedup = {k: float(timing["speedup"][k]) for k in ("estimate", "low", "high")}
    except (KeyError, TypeError, ValueError):
        return None
    return (ref, cand, speedup) if ref > 0 and cand > 0 else None


def across(slow: Sequence[float], fast: Sequence[float], level: float = LEVEL) -> dict[str, float]:
    """How many times faster `fast` is than `slow`, from per-process p50s of two settings: the
    ratio of geometric means, with a Welch t interval on the log p50s."""
    ratio = welch_ratio([math.log(x) for x in slow], [math.log(x) for x in fast], level)
    return {"estimate": ratio.estimate, "low": ratio.low, "high": ratio.high, "level": level}


def within(speedups: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The co-measured speedups of several processes of one setting: the geometric mean of their
    estimates, and the hull of their intervals (each interval already holds its own sessions'
    spread; the hull also holds the spread between processes)."""
    return {"estimate": math.exp(statistics.fmean(math.log(s["estimate"]) for s in speedups)),
            "low": min(s["low"] for s in speedups), "high": max(s["high"] for s in speedups), "level": LEVEL}


def _said(x: Mapping[str, float]) -> str:
    return f"{x['estimate']:.3g}x [{x['low']:.3g}, {x['high']:.3g}]"


def _apart(x: Mapping[str, float]) -> str:
    return "faster" if x["low"] > 1 else "slower" if x["high"] < 1 else "not told apart"


def evaluate(request: FlagsRequest, runs: Mapping[str, Sequence[Mapping[str, Any]]], flagged: Mapping[str, str]) -> Report:
    process_checks, tampered = [], []
    for setting in SETTINGS:
        for i, run in enumerate(runs[setting], 1):
            status = str(run.get("status"))
            name = f"{setting}_{i}"
            if status == "PASS":
                process_checks.append(Check(name, "PASS", "co-measured: " + (
                    "reference {:.4g} ms, candidate {:.4g} ms, speedup {}".format(p[0], p[1], _said(p[2]))
                    if (p := _p50s(run)) else "not timed")))
                continue
            failed = next((f"{g}.{c.get('name')}: {c.get('detail')}" for g, gate in (run.get("gates") or {}).items()
                           if isinstance(gate, dict) for c in gate.get("checks", []) if c.get("status") == "FAIL"),
                          (run.get("error") or {}).get("problem", "no result"))
            check = Check(name, "FAIL", f"the {setting} process: {status}: {failed}",
                          "run `kgate measure` alone on this pair (with the flag in the environment for the flagged "
                          "setting) and fix what it reports.")
            (tampered if status == "ANOMALY" else process_checks).append(check)
    first = next((r for s in SETTINGS for r in runs[s] if isinstance(r.get("candidate"), dict)), {})
    timed = [r for s in SETTINGS for r in runs[s]]
    context = {
        "class": request.klass, "flags": [f.text() for f in request.flags], "flagged_env": dict(flagged),
        "base_env": {name: os.environ[name] for name in sorted(flagged) if name in os.environ},
        # the modules as the legs hashed them (kgate cand checks a report against the files)
        "reference": first.get("reference") or {"path": str(request.reference)},
        "candidate": first.get("candidate") or {"path": str(request.candidate), "entry": request.entry},
        "op_point": first.get("op_point", dict(request.overrides)),
        "dtype": first.get("dtype", request.dtype), "input_dtypes": first.get("input_dtypes", []),
        "interpreted": any(r.get("interpreted", True) for r in timed),
        "repeats": request.repeats, "order": order(request.repeats),
        "method": "co-measured pairs (kgate measure's legs) in fresh processes, default and flagged alternated "
                  "ABBA; within a setting the hull of the processes' intervals, across settings a Welch t "
                  "interval on per-process log p50s",
    }
    for side in ("reference", "candidate"):
        hashes = {h for r in timed if (h := (r.get(side) or {}).get("sha256"))}  # a crashed process hashed nothing
        if len(hashes) > 1:  # a file changed between processes: the legs timed different code
            tampered.append(Check(f"same_{side}_in_every_process", "FAIL",
                                  f"the processes timed {len(hashes)} different {side} files (sha256 "
                                  f"{', '.join(sorted(h[:12] for h in hashes))})",
                                  f"leave the {side} unchanged while kgate flags runs, and run it again."))
    gates: dict[str, GateResult] = {}
    if tampered:
        gates["integrity"] = GateResult("integrity", tuple(tampered))
    gates["processes"] = GateResult("processes", tuple(process_checks) or (
        Check("processes_ran", "FAIL", "no process reported", "report this as a kgate bug"),))
    numbers = {s: [p for p in map(_p50s, runs[s]) if p is not None] for s in SETTINGS}
    if any(len(numbers[s]) < len(runs[s]) for s in SETTINGS) or tampered or gates["processes"].status == "FAIL":
        interpreted = any((r.get("gates") or {}).get("timing", {}).get("status") == "SKIPPED"
                          for s in SETTINGS for r in runs[s])
        why = ("a kernel runs in an interpreter here, whose timings say nothing of a flag's effect on the device "
               "(--time-interpreted times it anyway)") if interpreted else "not every process was timed"
        if interpreted and not tampered:  # as measure: SKIPPED with the reason, and an advisory (exit 1)
            gates["flags"] = GateResult("flags", (), {}, why)
            return Report("flags", gates, context, (NOT_TIMED_NOTE,))
        gates["flags"] = GateResult("flags", (Check("four_legs_timed", "FAIL", why, "see the processes gate"),))
        return Report("flags", gates, context)
    legs = {
        "reference": [p[0] for p in numbers["default"]], "candidate": [p[1] for p in numbers["default"]],
        "reference+flag": [p[0] for p in numbers["flagged"]], "candidate+flag": [p[1] for p in numbers["flagged"]],
    }
    effects = {
        "candidate_vs_reference": within([p[2] for p in numbers["default"]]),
        "candidate_vs_reference_both_flagged": within([p[2] for p in numbers["flagged"]]),
        "flag_on_reference": across(legs["reference"], legs["reference+flag"]),
        "flag_on_candidate": across(legs["candidate"], legs["candidate+flag"]),
        "candidate_flagged_vs_reference_default": across(legs["reference"], legs["candidate+flag"]),
    }
    head = headline(request.klass, legs, effects)
    details = {"legs_p50_ms": {k: [round(v, 6) for v in vs] for k, vs in legs.items()},
               "legs_median_p50_ms": {k: statistics.median(vs) for k, vs in legs.items()}, "effects": effects,
               "headline": head}
    gates["flags"] = GateResult("flags", (_attribution(request.klass, effects, head),), details)
    if request.bar is not None:
        h = details["headline"]
        gates["bar"] = bar_gate(request.bar, speedup=h["speedup"]["estimate"], low=h["speedup"]["low"],
                                high=h["speedup"]["high"], p50_difference_ms=h["p50_difference_ms"],
                                sigma_ms=h["sigma_ms"], interpreted=bool(context["interpreted"]))
    return Report("flags", gates, context)


def headline(klass: str, legs: Mapping[str, Sequence[float]], effects: Mapping[str, Mapping[str, float]],
             ) -> dict[str, Any]:
    """The number a claim cites, and the bar is graded on. For the flag class: the reference
    against itself flagged (across processes). Otherwise the candidate flagged against the
    reference in its own best setting: with the flag too (co-measured) when the flag speeds the
    reference, without it when the flag slows the reference (a flag that handicaps the reference
    is no win of the candidate's), and where the two cannot be told apart, whichever comparison
    credits the candidate less. Its p50 difference and that difference's spread between processes
    stand in for measure's p50 difference and run-to-run sigma (the `3σ` clause)."""
    def apart(slow: Sequence[float], fast: Sequence[float], effect: str) -> dict[str, Any]:
        return {"effect": effect, "speedup": dict(effects[effect]), "p50_ms": statistics.median(fast),
                "p50_difference_ms": statistics.median(slow) - statistics.median(fast),
                "sigma_ms": math.sqrt(statistics.variance(slow) + statistics.variance(fast))}

    if klass == "flag":
        return apart(legs["reference"], legs["reference+flag"], "flag_on_reference")
    diffs = [r - c for r, c in zip(legs["reference+flag"], legs["candidate+flag"])]
    paired = {"effect": "candidate_vs_reference_both_flagged",
              "speedup": dict(effects["candidate_vs_reference_both_flagged"]),
              "p50_ms": statistics.median(legs["candidate+flag"]), "p50_difference_ms": statistics.median(diffs),
              "sigma_ms": statistics.stdev(diffs)}
    unflagged = apart(legs["reference"], legs["candidate+flag"], "candidate_flagged_vs_reference_default")
    on_ref = effects["flag_on_reference"]
    if on_ref["low"] > 1:
        return paired
    if on_ref["high"] < 1:
        return unflagged
    return min(paired, unflagged, key=lambda h: h["speedup"]["estimate"])


def _attribution(klass: str, e: Mapping[str, Mapping[str, float]], head: Mapping[str, Any]) -> Check:
    ref, fair, plain = e["flag_on_reference"], e["candidate_vs_reference_both_flagged"], e["candidate_vs_reference"]
    unfair = e["candidate_flagged_vs_reference_default"]
    flag_says = f"the flag alone makes the reference {_said(ref)} ({_apart(ref)})"
    if klass == "flag":
        return Check("attribution", "PASS" if ref["low"] > 1 or ref["high"] < 1 else "ADVISORY",
                     f"the flag is the intervention: {flag_says}, the naive reference in its default setting "
                     f"against the same reference flagged; across processes, {len(e)} effects in the details")
    said = (f"with the flag on both legs the candidate is {_said(fair)}; without it {_said(plain)}; {flag_says}; "
            f"the candidate flagged against the reference unflagged is {_said(unfair)}. ")
    if ref["high"] < 1:
        return Check("attribution", "ADVISORY", said + "The flag slows the reference: the headline compares the "
                     "flagged candidate with the reference without the flag, its faster setting (the reference "
                     "handicapped by the flag would credit the candidate with the flag's harm)")
    if ref["low"] > 1:
        return Check("attribution", "ADVISORY", said + "The flag speeds the reference: the headline has the flag on "
                     "both legs (against the unflagged reference the candidate would be credited with the flag's effect)")
    return Check("attribution", "PASS", said + f"The flag's effect on the reference is not told apart from none: the "
                 f"headline is the comparison that credits the candidate less ({head['effect']})")
