"""Receipts: canonical JSON with a self-hash, and the rules that re-derive every status
from the recorded numbers. Pure functions: no framework, no device.

Integrity, not authentication: anyone can recompute the hash, so a forger can re-hash an
edited receipt. What a forger cannot do is make edited numbers agree with the recorded
statuses, the raw samples and the module sources -- which is what `verify-receipt`
re-derives.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ml_dtypes  # noqa: F401  (numpy knows bfloat16 and the float8 types by name once it is loaded)
import numpy as np

from kgate.errors import KgateError
from kgate.gates import stats
from kgate.gates.bar import evaluate_bar, ordering_status, parse_bar
from kgate.gates.parity import (EDGE_PREFIX, SMALLEST_SHARE, VANISHED_SHARE, ParitySpec, at_another_shape,
                                graded_relative, half_ulp, rounding_allowed, rounding_graded, too_many_vanished)
from kgate.jsonio import check_schema, clean, write_atomic

SCHEMA = "kgate.receipt"
SCHEMA_VERSION = 1
HASH_FIELD = "receipt_sha256"
REQUIRED = (
    "schema",
    "schema_version",
    "kind",
    "mode",
    "kgate",
    "timestamp",
    "argv",
    "device",
    "interpreted",
    "modules",
    "op_point",
    "seeds",
    "inputs",
    "gates",
    "status",
    HASH_FIELD,
)
REL_TOL = 1e-9


def canonical(obj: Any) -> bytes:
    """Sorted keys, compact separators, non-finite floats spelled as strings."""
    return json.dumps(clean(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def digest(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical({k: v for k, v in body.items() if k != HASH_FIELD})).hexdigest()


def seal(body: Mapping[str, Any]) -> dict[str, Any]:
    cleaned = json.loads(canonical(body))
    cleaned.pop(HASH_FIELD, None)
    return {**cleaned, HASH_FIELD: digest(cleaned)}


def write(path: Path, receipt: Mapping[str, Any]) -> None:
    text = canonical(receipt).decode()
    check_schema(json.loads(text), "receipt")  # only under KGATE_SCHEMA_CHECK (the test suite)
    write_atomic(path, text + "\n")


def _close(a: Any, b: Any) -> bool:
    """Equal within REL_TOL; JSON spells non-finite floats "inf", "-inf" and "nan"."""
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    if not (math.isfinite(x) and math.isfinite(y)):
        return x == y or (math.isnan(x) and math.isnan(y))
    return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=1e-12)



def _floor_source_problems(
    where: str, name: str, out: Mapping[str, Any], records: Mapping[tuple[str, str], tuple[Mapping[str, Any], Mapping[str, Any]]]
) -> list[str]:
    """The floor graded against must be the probe's own, or the largest of its own and, scaled
    to its own largest output, the relative floors of the seed probes of the same shape (for a
    probe at another shape, the same rank) and dtype it names whose floor goes beyond the
    output's rounding (`computes`); half an ulp only where all of those are exactly zero. The
    mean-abs unit follows the same way."""
    floor, path = out["floor"], out["path"]
    names = list(floor.get("shared_with") or [name])
    if name not in names:
        return [f"{where}: a shared floor that does not include the probe's own"]
    missing = [n for n in names if (n, path) not in records]
    if missing:
        return [f"{where}: the floor is shared with probes the receipt does not hold: {missing}"]
    own = records[(name, path)][0]  # held: the probe is among the names, none missing
    label = str(own.get("label") or "")
    # a probe at another shape (the odd and drawn shapes) receives the floor of seed probes of the
    # same rank; an edge probe, of seed probes of its very shape
    shaped = at_another_shape(label)
    if len(names) > 1 and label and not label.startswith(EDGE_PREFIX) and not shaped:
        return [f"{where}: a probe that is neither a seed probe, an edge probe nor a probe at another shape "
                "shares a floor"]

    def same_shape(o: Mapping[str, Any]) -> bool:
        theirs, mine = o.get("shape"), out.get("shape")
        if shaped:
            return isinstance(theirs, list) and isinstance(mine, list) and len(theirs) == len(mine)
        return theirs == mine

    others = [records[(n, path)] for n in names if n != name]
    if any(p.get("label") or not same_shape(o) or o.get("dtype") != out.get("dtype")
           or p.get("against") != own.get("against") for p, o in others):
        return [f"{where}: the floor is shared with a probe that is not a seed probe of this output's "
                f"{'rank' if shaped else 'shape'}, dtype and oracle"]
    size = float(floor.get("scale", 0.0)) if len(names) > 1 else 0.0
    largest, largest_mean = float(floor["max_abs"]), float(floor["mean_abs"])
    for _, other in [records[(n, path)] for n in names]:
        theirs = other["floor"]
        if theirs.get("computes") is True and float(theirs.get("scale", 0.0)) > 0:
            largest = max(largest, float(theirs["max_abs"]) / float(theirs["scale"]) * size)
            largest_mean = max(largest_mean, float(theirs["mean_abs"]) / float(theirs["scale"]) * size)
    if floor.get("source") == "ulp-guard":
        return [] if largest == 0.0 else [f"{where}: half an ulp used as the floor where the floor is not zero"]
    if not _close(float(floor["max_abs_used"]), largest):
        return [f"{where}: the floor used ({float(floor['max_abs_used']):.6g}) is not the largest of the floors "
                f"it names ({largest:.6g})"]
    if "resolution_mean" in floor and largest_mean > 0 and not _close(
            float(floor["mean_abs_used"]), max(largest_mean, float(floor["resolution_mean"]))):
        return [f"{where}: the mean-abs unit used ({float(floor['mean_abs_used']):.6g}) does not follow from the "
                "floors it names and the output's resolution"]
    return []


def rederive_parity(gate: Mapping[str, Any], made_by: str = "") -> list[str]:
    """Inconsistencies between the parity gate's numbers and its statuses, for every spec kind.
    `made_by`: the version of the kgate that wrote it, where it says (a receipt of `RELATIVE_SINCE`
    on, or one whose parity says it graded `relative_error`, must carry the check's record on
    every output it applies to)."""
    problems: list[str] = []
    relative_required = _version(made_by) >= RELATIVE_SINCE or bool(gate.get("relative_graded"))
    try:
        spec = ParitySpec.parse(str(gate.get("spec", "")))
    except KgateError:
        return [f"parity: spec {gate.get('spec')!r} is not a parity spec"] if gate.get("status") != "SKIPPED" else []
    checks = {c["name"]: c for c in gate.get("checks", [])}
    records = {  # each probe's own floor per output: a shared floor is the largest of those it names
        (probe.get("name") or f"seed{probe.get('seed')}", out.get("path")): (probe, out)
        for probe in gate.get("probes", []) for out in probe.get("outputs", []) if isinstance(out.get("floor"), dict)
    }
    for probe in gate.get("probes", []):
        seed = probe.get("seed")
        name = probe.get("name") or f"seed{seed}"
        if name != (probe.get("label") or f"seed{seed}"):  # a seed probe is named by its seed, any other by its label
            problems.append(f"parity {name}: a probe named neither by its label nor by its seed")
        for out in probe.get("outputs", []):
            cand = out.get("candidate")
            if cand is None:
                continue
            where = f"parity {name} {out['path']}"
            if spec.kind == "floor":
                if "floor" not in out:
                    continue
                floor, limit, mult = out["floor"], out["limit"], spec.multiplier
                problems.extend(_floor_source_problems(where, name, out, records))
                if not _close(limit["max_abs"], mult * float(floor["max_abs_used"])) or not _close(
                    limit["mean_abs"], mult * float(floor["mean_abs_used"])
                ):
                    problems.append(f"{where}: limit is not {mult:g} x the recorded floor")
                ratio = float(out["max_abs_over_floor"])
                at = out.get("worst_ratio_at") or {}
                unit_max = float(limit.get("unit_max", floor["max_abs_used"]))
                # The ratio is the worst element's error over its allowance unit (the floor, or half
                # an ulp there): it is what the recorded element gives, and no less than the largest
                # error over the coarsest unit.
                if at and float(at["unit"]) > 0:
                    implied = float(at["diff"]) / float(at["unit"])
                    consistent = _close(ratio, implied) if math.isfinite(implied) else not math.isfinite(ratio)
                    if not consistent:
                        problems.append(f"{where}: the ratio to the floor does not follow from its worst element")
                if unit_max > 0 and ratio * (1 + REL_TOL) < float(cand["max_abs"]) / unit_max:
                    problems.append(f"{where}: the ratio to the floor is below what the largest error allows")
                if at and float(at["unit"]) < float(floor["max_abs_used"]) * (1 - REL_TOL):
                    problems.append(f"{where}: an allowance unit finer than the recorded floor")
                passes = ratio <= mult and float(cand["mean_abs"]) <= float(limit["mean_abs"])
                problems.extend(_relative_problems(where, name, out, checks, mult, relative_required))
                problems.extend(_rounding_problems(where, name, out, checks, mult,
                                                   _version(made_by) >= ROUNDING_SINCE))
                problems.extend(_vanished_problems(where, name, out, checks, _version(made_by) >= VANISHED_SINCE,
                                                   probe.get("outputs", [])))
            elif spec.kind == "tolerance":
                violations = int(out.get("violations", -1))
                passes = violations == 0
                # the worst element is recorded: it alone must be within atol + rtol*|expected| when nothing violates
                allowed = spec.atol + spec.rtol * abs(float(cand["expected"]))
                if passes and float(cand["max_abs"]) > allowed * (1 + REL_TOL):
                    problems.append(f"{where}: 0 violations recorded, but the worst element's error "
                                    f"{float(cand['max_abs']):.6g} exceeds atol + rtol*|expected| = {allowed:.6g}")
            else:
                passes = float(cand["max_abs"]) == 0.0  # bit-identical outputs have no error at all
            check = checks.get(f"{name}.error")
            if check is not None and passes != (check["status"] == "PASS") and not checks.get(f"{name}.finite"):
                problems.append(
                    f"{where}: recorded {check['status']} but the numbers say {'PASS' if passes else 'FAIL'}"
                )
    problems.extend(_gate_status_problems("parity", gate))
    return problems


def _rounding_problems(where: str, name: str, out: Mapping[str, Any], checks: Mapping[str, Any],
                       mult: float, required: bool) -> list[str]:
    """The rounding grade from its record: the share allowed is the multiplier times the larger of
    the reference's and its reordered sums' shares, never below `ROUNDING_SHARE`; the check is
    there, FAILed, exactly when the candidate's share is over it (unless a non-finite output
    failed first). A receipt from `ROUNDING_SINCE` on carries the record on every output it
    applies to (`required`: `rounding_graded`)."""
    rounding = out.get("rounding")
    if rounding is None:
        applies = rounding_graded(str(out.get("dtype", "")), math.prod(int(n) for n in out.get("shape", [])))
        return [f"{where}: the rounding grade's record is missing"] if required and applies else []
    reordered = rounding.get("reordered")
    allowed = rounding_allowed(mult, float(rounding["reference"]), None if reordered is None else float(reordered))
    problems = []
    if not _close(float(rounding["allowed"]), allowed):
        problems.append(f"{where}: the rounding grade's allowed share is not {mult:g} x the reference's own")
    failed = float(rounding["candidate"]) > float(rounding["allowed"])
    check = checks.get(f"{name}.rounding")
    if failed != (check is not None and check["status"] == "FAIL") and not checks.get(f"{name}.finite"):
        problems.append(f"{where}: the rounding grade's check does not follow from its shares")
    return problems


def _vanished_failed(out: Mapping[str, Any]) -> bool:
    vanished = out.get("vanished") or {}
    return too_many_vanished(int(vanished.get("lost", 0)), int(vanished.get("resolved", 0)))


def _vanished_problems(where: str, name: str, out: Mapping[str, Any], checks: Mapping[str, Any],
                       required: bool, outputs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The vanishing grade from its record: the share allowed is `VANISHED_SHARE`; an output that
    lost more than that share of its resolved elements has the probe's check there, FAILed, and the
    check FAILs only where one of the probe's `outputs` did (unless a non-finite output failed
    first). A receipt from `VANISHED_SINCE` on carries the record on every real floating output
    that is finite."""
    vanished = out.get("vanished")
    if vanished is None:
        applies = graded_relative(str(out.get("dtype", ""))) and not checks.get(f"{name}.finite")
        return [f"{where}: the vanishing grade's record is missing"] if required and applies else []
    problems = []
    if not _close(float(vanished["allowed_share"]), VANISHED_SHARE):
        problems.append(f"{where}: the vanishing grade's allowed share is not {VANISHED_SHARE:.0%}")
    check = checks.get(f"{name}.vanished")
    failed_check = check is not None and check["status"] == "FAIL"
    if checks.get(f"{name}.finite"):
        return problems
    if _vanished_failed(out) and not failed_check:
        problems.append(f"{where}: the vanishing grade's check does not follow from its counts")
    elif failed_check and not any(_vanished_failed(o) for o in outputs):
        problems.append(f"{where}: the vanishing grade's check does not follow from its counts")
    return problems


def _relative_problems(where: str, name: str, out: Mapping[str, Any], checks: Mapping[str, Any],
                       mult: float, required: bool) -> list[str]:
    """The `relative_error` check from its recorded worst element: its ratio is that element's
    error over its unit, and no less than the largest error over the coarsest unit; the unit lies
    between the floor scaled to the element's magnitude (or half an ulp there) and the `error`
    check's unit; the check is there, FAILed, exactly when the ratio is over the multiplier. A
    receipt of a kgate before the check has no `relative`; one after it has it on every floating
    output whose reference has an error (`required`)."""
    relative = out.get("relative")
    if relative is None:
        graded = float(out["floor"].get("max_abs", 0.0)) > 0 and graded_relative(out.get("dtype", ""))
        if required and graded:
            return [f"{where}: the relative error's record is missing"]
        return []
    problems = []
    unit_max = float((out.get("limit") or {}).get("unit_max", 0.0))
    if unit_max > 0 and float(relative["ratio"]) * (1 + REL_TOL) < float(out["candidate"]["max_abs"]) / unit_max:
        problems.append(f"{where}: the relative error's ratio is below what the largest error allows")
    ratio, at, floor = float(relative["ratio"]), relative.get("at") or {}, out["floor"]
    if at:
        unit, diff, expected = float(at["unit"]), float(at["diff"]), float(at["expected"])
        implied = diff / unit if unit > 0 else (math.inf if diff > 0 else 0.0)
        if not (_close(ratio, implied) if math.isfinite(implied) else not math.isfinite(ratio)):
            problems.append(f"{where}: the relative error's ratio does not follow from its worst element")
        resolution = float(half_ulp(np.asarray(expected), np.dtype(str(out.get("dtype") or "float32"))))
        size = float(floor.get("scale", 0.0))
        used = float(floor["max_abs_used"])
        finest = max(resolution, used * min(1.0, max(SMALLEST_SHARE, 2 * abs(expected) / size)) if size > 0 else used)
        if unit < finest * (1 - REL_TOL) or unit > max(used, resolution) * (1 + REL_TOL):
            problems.append(f"{where}: the relative error's allowance unit is not the floor scaled to its element")
    failed = checks.get(f"{name}.relative_error", {}).get("status") == "FAIL"
    if failed != (ratio > mult) and not checks.get(f"{name}.finite"):
        problems.append(f"{where}: relative error {ratio:.6g}x its unit recorded as {'FAIL' if failed else 'PASS'}")
    return problems


def _gate_status_problems(name: str, gate: Mapping[str, Any]) -> list[str]:
    if gate.get("status") == "SKIPPED":
        return []
    derived = "FAIL" if any(c.get("status") == "FAIL" for c in gate.get("checks", [])) else "PASS"
    if gate.get("status") != derived:
        return [f"{name}: recorded status {gate.get('status')} but its checks give {derived}"]
    return []


def environment() -> dict[str, str | None]:
    """The versions the receipt's numbers were computed with (the bootstrap's stream does not
    depend on them: its generator is named by id in the timing)."""
    import importlib.metadata
    import platform

    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {"python": platform.python_version(), **{d: version(d) for d in ("numpy", "scipy", "jax", "jaxlib")}}


RELATIVE_SINCE = (0, 3, 1)  # the first kgate version whose parity grades and records relative_error
ROUNDING_SINCE = (0, 3, 3)  # the first whose parity grades and records the rounding of narrow outputs
VANISHED_SINCE = (0, 3, 4)  # the first whose parity grades and records the answers returned as zero
SEQUENTIAL_SINCE = (0, 2, 0)  # the first kgate version whose runs stop sequentially and record the method
ORDERING_SINCE = (0, 3, 0)  # the first whose timings record the ordering intervals and their bootstrap's id
ORDERING_BAR_SINCE = (0, 3, 2)  # the first whose ordering check is an advisory when the bar is decided alike


def _version(text: Any) -> tuple[int, ...]:
    """(0, 3, 0) from "0.3.0", "0.3.0+local" or "0.3.0.dev1"; (0,) for what is not a version."""
    parts = []
    for part in str(text).split(".")[:3]:
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        parts.append(int(digits.group(0)))
        if digits.group(0) != part:
            break
    return tuple(parts) or (0,)


def rederive_timing(timing: Mapping[str, Any], bar: Mapping[str, Any] | None,
                    made_by_sequential_kgate: str = "") -> list[str]:
    """Recompute the per-leg p50s, the speedup, its interval, sigma and the bar from the raw samples.
    `made_by_sequential_kgate`: the version of the kgate that wrote the receipt, when it is one that
    always records its interval method (so a receipt without one was edited)."""
    problems: list[str] = []
    samples = timing.get("samples_ms")
    if not samples:
        return ["timing: raw samples missing"]
    ref, cand = np.array(samples["reference"], dtype=float), np.array(samples["candidate"], dtype=float)
    for leg, arr in (("reference", ref), ("candidate", cand)):
        if not _close(timing[leg]["p50_ms"], float(np.median(arr))):
            problems.append(f"timing: {leg} p50 {timing[leg]['p50_ms']} is not the median of its samples")
    method = (timing.get("method") or {}).get("interval_method")
    if method == stats.CS_METHOD:
        labels = [int(x) for x in (samples.get("session") or [])]
        if len(labels) != len(ref) or not labels or labels[0] != 0 or any(
                b not in (a, a + 1) for a, b in zip(labels, labels[1:])):
            return problems + ["timing: the rounds' session labels are not 0, 1, 2, ... in the order the sessions ran"]
        interval = stats.sequential_interval(ref, cand, labels)
        problems += _rederive_looks(timing, ref, cand, labels, bar)
    elif method is None:  # receipts from before the sequential interval: the session bootstrap
        if made_by_sequential_kgate:
            return problems + [f"timing: kgate {made_by_sequential_kgate} records its interval method, and this "
                               "receipt has none (a sequential run cannot be re-graded by the old bootstrap)"]
        interval = stats.speedup_interval(ref, cand, sessions=samples.get("session"), method=stats.LEGACY_BOOTSTRAP)
    else:
        raise CannotRederive(f"the timing's interval method {method!r} is not one this kgate knows "
                             f"(it knows {stats.CS_METHOD!r} and the bootstrap before it)")
    sp = timing["speedup"]
    for key, value in (("estimate", interval.estimate), ("low", interval.low), ("high", interval.high)):
        if not _close(sp[key], value):
            problems.append(f"timing: speedup {key} {sp[key]} does not follow from the samples ({value:.6g})")
    sigma = stats.run_to_run_sigma(ref, cand)
    if not _close(timing["sigma_ms"], sigma):
        problems.append(f"timing: sigma {timing['sigma_ms']} does not follow from the samples ({sigma:.6g})")
    if bar is not None and "bar" in bar:
        result = evaluate_bar(
            parse_bar(bar["bar"]),
            speedup=interval.estimate,
            low=interval.low,
            high=interval.high,
            p50_difference_ms=float(np.median(ref) - np.median(cand)),
            sigma_ms=sigma,
        )
        if result.outcome != bar.get("outcome"):
            problems.append(f"bar: recorded {bar.get('outcome')} but the samples give {result.outcome}")
    return problems


def _not_timed_problems(receipt: Mapping[str, Any]) -> list[str]:
    """Timing is skipped only for an interpreter, or for a candidate that did not get through the
    checks (then the run FAILed on them); and then nothing may claim a timed outcome."""
    gates = receipt.get("gates", {})
    problems = []
    not_run = gates["timing"].get("not_timed") == "not run"
    if not_run and receipt.get("status") != "FAIL":
        problems.append(f"timing: SKIPPED because the candidate did not get through the checks, yet the run is "
                        f"{receipt.get('status')} (only FAIL follows)")
    if not not_run and not receipt.get("interpreted", False):
        problems.append("timing: SKIPPED, but the receipt says nothing ran in an interpreter (only interpreted "
                        "runs go untimed)")
    if "samples_ms" in gates["timing"] or "speedup" in gates["timing"]:
        problems.append("timing: SKIPPED, yet it carries samples or a speedup")
    bar = gates.get("bar")
    if isinstance(bar, Mapping) and (bar.get("status") != "SKIPPED" or bar.get("outcome") != "UNDECIDED"):
        problems.append(f"bar: recorded {bar.get('status')} {bar.get('outcome')} with no timings (only SKIPPED "
                        "UNDECIDED follows)")
    return problems


class CannotRederive(Exception):
    """The receipt was made by a method this kgate does not know: not tampering, just not checkable here."""


def _rederive_looks(timing: Mapping[str, Any], ref: np.ndarray, cand: np.ndarray, labels: list[int],
                    bar: Mapping[str, Any] | None) -> list[str]:
    """Every look the run made follows from the samples, and the run stopped at the first look
    where the bar was decided (never ran on past it, never claimed a decision it did not have).
    A run looks after every session from the second: the sessions are numbered 0, 1, 2, ... in
    the order they ran, and there is one look per session count, none left out."""
    from kgate.gates.bar import interval_decision

    method = timing.get("method") or {}
    looks = method.get("looks")
    sessions = labels[-1] + 1
    if not isinstance(looks, list) or [int(look["sessions"]) for look in looks] != list(range(2, sessions + 1)):
        return [f"timing: the run looks after every session from the second; {sessions} sessions need looks at "
                f"2..{sessions}, the receipt records {[look.get('sessions') for look in looks] if isinstance(looks, list) else looks}"]
    parsed = parse_bar(bar["bar"]) if isinstance(bar, Mapping) and "bar" in bar else None
    min_sessions, min_rounds = int(method["min_sessions"]), int(method["min_rounds"])
    if min_sessions < 2 or min_rounds < 2:
        return [f"timing: min_sessions {min_sessions} and min_rounds {min_rounds} must be at least 2"]
    problems = []
    logs = stats.session_log_ratios(ref, cand, labels)  # one per session, in order: a look at k sees the first k
    rounds_before = np.searchsorted(np.asarray(labels), np.arange(1, len(logs) + 1))  # rounds in the first k sessions
    for i, look in enumerate(looks):
        k = i + 2
        interval = stats.confidence_sequence(logs[:k])
        for key, value in (("estimate", interval.estimate), ("low", interval.low), ("high", interval.high)):
            if not _close(look.get(key), value):
                problems.append(f"timing: look {i + 1}'s {key} {look.get(key)} does not follow from the samples")
        may_stop = k >= min_sessions and int(rounds_before[k - 1]) >= min_rounds
        decided = interval_decision(parsed, interval.low, interval.high) if parsed is not None and may_stop else None
        if (look.get("decided") or None) != decided:
            problems.append(f"timing: look {i + 1} records the bar {look.get('decided') or 'undecided'}, the samples "
                            f"give {decided or 'undecided'}")
        if decided and i != len(looks) - 1:
            problems.append(f"timing: the bar was decided at look {i + 1}, yet the run went on")
    said_decided = str(method.get("stop_reason", "")).startswith("the bar was decided")
    if said_decided != bool(looks and looks[-1].get("decided")):
        problems.append(f"timing: the stop reason {method.get('stop_reason')!r} does not match the last look")
    return problems


def rederive_ordering(timing: Mapping[str, Any], integrity: Mapping[str, Any], made_by_kgate: str = "",
                      bar: Mapping[str, Any] | None = None) -> list[str]:
    """The ordering intervals follow from the samples (by the recorded bootstrap generator, the same
    stream on any machine), and the `ordering_independent` check's status from them and the bar
    (`bar`, the receipt's bar gate; from `ORDERING_BAR_SINCE` on). A kgate that records them
    (`made_by_kgate`, 0.3.0 on) uses one generator and one level, always says the check, and
    records the intervals whenever the samples have pairs in both orders: each is re-derived from
    the samples, not taken from the receipt."""
    # the check of the process whose samples the timing holds (full mode's reversed process keeps its own)
    checks = [c for c in integrity.get("checks", []) if c.get("name") in ("measure.ordering_independent",
                                                                           "ordering_independent")]
    recorded = timing.get("ordering")
    samples = timing["samples_ms"]
    if recorded is not None and str(recorded.get("bootstrap")) not in (stats.BOOTSTRAP_METHOD, stats.LEGACY_BOOTSTRAP):
        raise CannotRederive(f"the bootstrap generator {recorded.get('bootstrap')!r} is not one this kgate knows "
                             f"(it knows {stats.BOOTSTRAP_METHOD!r} and {stats.LEGACY_BOOTSTRAP!r})")
    problems = []
    if made_by_kgate:
        if recorded is not None and (recorded.get("bootstrap") != stats.BOOTSTRAP_METHOD
                                     or float(recorded["level"]) != stats.ORDERING_LEVEL):
            problems.append(f"timing: kgate {made_by_kgate} draws the ordering bootstrap from {stats.BOOTSTRAP_METHOD} "
                            f"at level {stats.ORDERING_LEVEL}; the receipt says {recorded.get('bootstrap')} at "
                            f"{recorded.get('level')}")
        level, method = stats.ORDERING_LEVEL, stats.BOOTSTRAP_METHOD
    elif recorded is None:
        return []
    else:
        level, method = float(recorded["level"]), str(recorded["bootstrap"])
    derived = stats.ordering_record(samples["reference"], samples["candidate"], samples["candidate_first"],
                                    samples.get("session"), level, method)
    if derived is None and recorded is not None:
        problems.append("timing: the ordering intervals are recorded, but the samples have too few pairs in one ordering")
    elif derived is not None and recorded is None:
        problems.append(f"timing: kgate {made_by_kgate} records the ordering intervals the samples give, and this "
                        "receipt has none")
    elif derived is not None and recorded is not None:
        problems += [
            f"timing: ordering {side} {key} {recorded[side][key]} does not follow from the samples ({derived[side][key]:.6g})"
            for side in ("both_first", "both_second") for key in ("estimate", "low", "high")
            if not _close(recorded[side][key], derived[side][key])
        ]
    status = ordering_status(parse_bar(bar["bar"]) if bar is not None and "bar" in bar else None, derived,
                             bar_aware=_version(made_by_kgate) >= ORDERING_BAR_SINCE)
    if made_by_kgate and not checks:
        problems.append(f"integrity: kgate {made_by_kgate} always says the ordering_independent check, and this "
                        "receipt does not")
    problems += [f"integrity: {c.get('name')} recorded {c.get('status')} but the ordering intervals give {status}"
                 for c in checks if c.get("status") != status and (made_by_kgate or c.get("status") in ("PASS", "FAIL"))]
    return problems


def rederive_roofline(timing: Mapping[str, Any], integrity: Mapping[str, Any], made_by_kgate: str = "") -> list[str]:
    """The roofline's floor, each leg's rates and utilization, and the physically_possible
    status, from the recorded work, peaks and medians. A kgate that always says whether it
    checked the floor (`made_by_kgate`, 0.3.0 on) cannot have left the check out, nor graded it
    without its numbers."""
    from kgate.gates import roofline

    recorded = timing.get("roofline")
    if recorded is None:
        said = [c for c in integrity.get("checks", []) if str(c.get("name", "")).endswith("physically_possible")]
        if made_by_kgate and not said:
            return [f"integrity: kgate {made_by_kgate} says whether the physical floor was checked "
                    "(physically_possible), and this timed receipt does not"]
        graded = [c.get("status") for c in said if c.get("status") in ("PASS", "FAIL")]
        if graded:
            return [f"integrity: physically_possible recorded {graded[0]} without the roofline numbers it follows from"]
        return []
    work = roofline.Work(*(None if recorded["work"].get(k) is None else float(recorded["work"][k])
                           for k in ("flops", "bytes")))
    peaks = roofline.Peaks(float(recorded["peaks"]["flops_per_s"]), float(recorded["peaks"]["bytes_per_s"]),
                           str(recorded["peaks"].get("source", "")))
    seconds = {leg: float(timing[leg]["p50_ms"]) / 1e3 for leg in recorded["legs"]}
    check, numbers = roofline.evaluate(work, peaks, seconds)
    problems = []
    if not _close(recorded["floor_s"], numbers["floor_s"]):
        problems.append("timing: the roofline's floor does not follow from the declared work and the peaks")
    for leg, derived in numbers["legs"].items():
        if any(not _close(recorded["legs"][leg].get(key), value) for key, value in derived.items()):
            problems.append(f"timing: the {leg}'s roofline numbers do not follow from its median")
    said = [c.get("status") for c in integrity.get("checks", []) if str(c.get("name", "")).endswith("physically_possible")]
    if check.status not in said:  # (verify --mode full records one per measuring process)
        problems.append(f"integrity: physically_possible recorded {said or 'nowhere'}, the numbers give {check.status}")
    return problems


def rederive(receipt: Mapping[str, Any]) -> list[str]:
    """Every inconsistency between the receipt's numbers and its statuses."""
    gates = receipt.get("gates", {})
    problems: list[str] = []
    unknown: list[str] = []  # methods this kgate does not know: UNVERIFIABLE, unless something else is TAMPERED
    if "parity" in gates:
        problems += rederive_parity(gates["parity"], str((receipt.get("kgate") or {}).get("version", "")))
    if gates.get("timing", {}).get("status") == "SKIPPED":
        problems += _not_timed_problems(receipt)
    elif "timing" in gates and gates["timing"].get("status") != "FAIL":
        version = str((receipt.get("kgate") or {}).get("version", ""))
        # a receipt that carries what only 0.3.0 on writes is held to 0.3.0's rules, whatever version it states
        recent = _version(version) >= ORDERING_SINCE or "environment" in receipt or "ordering" in gates["timing"]
        made_by = (version or "0.3.0") if recent else ""
        for rederive_one in (
            lambda: rederive_timing(gates["timing"], gates.get("bar"),
                                    version if _version(version) >= SEQUENTIAL_SINCE or recent else ""),
            lambda: rederive_roofline(gates["timing"], gates.get("integrity", {}), made_by),
            lambda: rederive_ordering(gates["timing"], gates.get("integrity", {}), made_by, gates.get("bar")),
        ):
            try:
                problems += rederive_one()
            except CannotRederive as exc:  # kept: any tampering found elsewhere is still said
                unknown.append(str(exc))
            except (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
                problems.append(f"timing: malformed, its numbers cannot be re-derived ({type(exc).__name__}: {exc})")
    for name, gate in gates.items():
        if name != "parity":
            problems += _gate_status_problems(name, gate)
    timed, seeds = receipt.get("timed_inputs"), receipt.get("seeds") or []
    if timed and seeds and receipt.get("inputs", {}).get(str(seeds[0])) not in (None, timed):
        problems.append("timing ran on inputs that are not the ones parity checked for the first seed")
    watched = {c.get("name") for c in gates.get("integrity", {}).get("checks", [])}
    unfinished = any(c.get("name") == "candidate_ran" and c.get("status") == "FAIL"
                     for c in gates.get("parity", {}).get("checks", []))  # its process never reported: a FAIL
    if receipt.get("kind") == "verify" and "checks.process_untouched" not in watched and not (
            unfinished and receipt.get("status") == "FAIL"):
        problems.append("integrity: the check that candidate code patched nothing (checks.process_untouched) is missing")
    statuses = {name: g.get("status") for name, g in gates.items()}
    if statuses.get("integrity") == "FAIL":
        derived = "ANOMALY"
    elif "FAIL" in statuses.values():
        derived = "FAIL"
    else:
        derived = "PASS"
    if receipt.get("status") != derived:
        problems.append(f"status: recorded {receipt.get('status')} but the gates give {derived}")
    if unknown and not problems:
        raise CannotRederive("; ".join(unknown))
    return problems
