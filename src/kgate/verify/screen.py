"""`kgate verify`: every device leg in a fresh process, one report, one receipt.

--mode screen: the checks leg and the measure leg. --mode full adds a second measure leg
from a cold process in the other ordering (the reference compiled and run first), the
reproduction check against the author's claimed p50, the coverage battery when a spec is
given, and a capture run under the profiler whose timing is discarded.

This module never imports a framework. It validates the request, takes the chip lock,
runs each leg (`python -m kgate.verify.leg`) with no persistent compilation cache and
only the chosen chip visible, combines the legs' gates, and writes a sealed receipt
atomically at the very end (an interrupted verify leaves no receipt).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kgate import __version__
from kgate.backends import backend_for
from kgate.errors import KgateError
from kgate.gates import coverage
from kgate.gates.bar import parse_bar
from kgate.gates.common import Check, GateResult
from kgate.gates.firing import FiringSpec, parse_classes
from kgate.gates.integrity import clock_bound
from kgate.gates.parity import ParitySpec
from kgate.problem.module import file_sha256, kwargs_to_wire
from kgate.verify.measure import TIMED_AGREEMENT_FACTOR
from kgate.verify import lock as chip_lock
from kgate.verify import receipt as receipts
from kgate.verify import seals, spawn
from kgate.verify.early import PHASE_BUDGET_S, check_phase_budget
from kgate.verify.outcome import EAGER_NOTE, NOT_TIMED_NOTE, Report, not_timed_gates



@dataclass(frozen=True)
class VerifyRequest:
    reference: Path
    candidate: Path
    entry: str = "workload"
    klass: str = "kernel-authored"
    seeds: tuple[int, ...] = (42, 43)
    reference_entry: str = "workload"
    phase_budget_s: float = PHASE_BUDGET_S
    dtype: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    parity: str = "floor"
    firing: FiringSpec = FiringSpec()
    bar: str | None = None
    budget_s: float = 20.0
    sessions: int = 3
    chip: int = 0
    lock_dir: Path | None = None
    receipt: Path | None = None
    argv: tuple[str, ...] = ()
    mode: str = "screen"
    author_claim_p50: float | None = None
    spec: str | None = None
    artifacts: Path | None = None
    time_interpreted: bool = False  # time a kernel that runs in an interpreter (capped, labelled); default: skip
    kwargs: Mapping[str, Any] = field(default_factory=dict)  # the candidate's entry bound with these (--kwarg)
    weights: str = "shared"  # a Model reference's weights: shared | random:SEED (`--weights`)
    backend: str | None = None  # `--backend`: the framework to run the problem with; None: from its imports
    # start the measure leg's process while the checks run (see _start_ahead); None: where the
    # machine has cores to spare beside the two checks legs
    start_ahead: bool | None = None

    def __post_init__(self) -> None:
        # the backend, chosen once for the whole run (every leg and the receipt take this one): read
        # again later, the reference file could have changed under a running candidate
        object.__setattr__(self, "backend", backend_for(self.reference, self.backend))
        check_phase_budget(self.phase_budget_s)
        if self.sessions < 2:
            raise KgateError("--sessions must be >= 2: the interval counts sessions, and one has no spread.",
                             "use e.g. --sessions 3.")
        if self.mode not in ("screen", "full"):
            raise KgateError(f"--mode {self.mode!r} is not a verify mode.", "use --mode screen or --mode full.")
        if self.mode == "screen" and (self.author_claim_p50 is not None or self.spec):
            raise KgateError(
                "--author-claim-p50 and --spec are checked only in --mode full.", "add --mode full, or drop them."
            )
        if self.author_claim_p50 is not None and not self.author_claim_p50 > 0:
            raise KgateError("--author-claim-p50 must be a positive number of milliseconds.", "e.g. 0.42.")
        if self.spec:
            coverage.parse_spec(self.spec)
        for role, path in (("reference", self.reference), ("candidate", self.candidate)):
            if not Path(path).is_file():
                raise KgateError(f"{role} module {path} does not exist.", f"pass an existing .py file as --{role}.")
        parse_classes(self.klass)
        ParitySpec.parse(self.parity)
        if self.bar is not None:
            parse_bar(self.bar)
        if self.receipt is not None and not Path(self.receipt).parent.is_dir():
            raise KgateError(f"the folder of the receipt -o {self.receipt} does not exist.", "create it first or choose another path.")
        if self.receipt is not None and Path(self.receipt).is_dir():
            raise KgateError(f"the receipt -o {self.receipt} is a folder.", "name a file, e.g. -o receipt.json.")
        chip_lock.lock_path(self.chip, self.lock_dir)  # validates chip and lock folder


def _git(path: Path) -> dict[str, Any]:
    """HEAD and dirtiness of the git repository holding `path`, if any."""
    from kgate.record import git

    folder = path if path.is_dir() else path.parent
    try:
        sha = git.call(["-C", str(folder), "rev-parse", "HEAD"])
        status = git.call(["-C", str(folder), "status", "--porcelain"])
    except KgateError:  # no git, or one that hangs: the receipt says it does not know
        return {"git_sha": None, "dirty": None}
    if sha.returncode != 0 or status.returncode != 0:
        return {"git_sha": None, "dirty": None}
    return {"git_sha": sha.stdout.strip(), "dirty": bool(status.stdout.strip())}


def _leg_env(request: VerifyRequest) -> dict[str, str]:
    return {
        **chip_lock.visibility_env(request.chip),
        **({chip_lock.LOCK_DIR_ENV: str(request.lock_dir)} if request.lock_dir else {}),
    }


def _run_leg(
    kind: str, payload: Mapping[str, Any], request: VerifyRequest, say: Callable[[str], None], workdir: Path,
    held: spawn.LegProcess | None = None,
) -> dict[str, Any]:
    """Run one leg under the chip lock; `held`: the process started ahead for it (see `_start_ahead`)."""
    path = chip_lock.lock_path(request.chip, request.lock_dir)
    with chip_lock.hold(path, say=say, what=f"kgate verify {kind} leg"):
        say(f"running the {kind} leg in a fresh process")
        budget = request.phase_budget_s if kind == "measure" else None  # only it beats phases
        on_phase = phase_lines(f"the {kind} leg", say) if kind == "measure" else None
        if held is not None:
            held.release(payload)
            held.timing_until = spawn.timing_until(payload, budget)
            result = held.wait_phased(budget, on_phase)
        else:
            result = spawn.run(kind, payload, workdir / kind, env=_leg_env(request), beats=kind == "measure",
                               phase_budget_s=budget, on_phase=on_phase)
        result.pop("not_timed", None)  # only this process says a leg was not run (`_not_timed_leg`), never a leg
        return result


PHASE_LINE_EVERY_S = 5.0  # a CI log gets a line this often at most while a leg runs


def phase_lines(leg: str, say: Callable[[str], None], every_s: float = PHASE_LINE_EVERY_S) -> Callable[[str], None]:
    """Tell `say` the phase a leg is in, at most every `every_s` seconds (a long timing is not a
    silent one, nor a line per session). Called with the leg's current phase as often as the
    caller likes: a phase is said once, and one entered too soon after the last line is said
    when the interval has passed, if the leg is still in it. The name comes from the leg's
    process: only its printable characters are shown, cut short."""
    started = time.monotonic()
    last = [-math.inf]
    told = [""]

    def tell(phase: str) -> None:
        now = time.monotonic()
        if phase and phase != told[0] and now - last[0] >= every_s:
            last[0], told[0] = now, phase
            shown = "".join(ch for ch in phase if ch.isprintable())[:80]
            say(f"{leg}: {shown} ({now - started:.0f} s)")

    return tell


def _start_ahead(request: VerifyRequest, workdir: Path) -> spawn.LegProcess:
    """The measure leg's process, started while the checks run: its interpreter and array library
    load meanwhile, and it waits, running nothing of the problem's, until it is handed its
    request (or discarded when the run stops before timing). It opens no device until then."""
    return spawn.start("measure", None, workdir / "measure", env=_leg_env(request), beats=True, held=True,
                       held_backend=request.backend)


SPARE_CORES = 4  # the two checks legs keep about two cores busy; a third process needs more to gain
START_AHEAD_ENV = "KGATE_START_AHEAD"  # 1: always, 0: never; unset: by the machine's cores


def _starts_ahead(request: VerifyRequest) -> bool:
    """Whether to start the measure leg ahead: as the request or KGATE_START_AHEAD asks, or where
    the machine has at least SPARE_CORES cores (on two, the early start slows the checks about as
    much as it saves: benchmarks/verify_profile.py measures both side by side)."""
    if request.start_ahead is not None:
        return request.start_ahead
    if os.environ.get(START_AHEAD_ENV) in ("0", "1"):
        return os.environ[START_AHEAD_ENV] == "1"
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores >= SPARE_CORES


def _checks(request: VerifyRequest, say: Callable[[str], None], workdir: Path) -> dict[str, Any]:
    """Integrity, parity and firing: the reference and the candidate each in their own fresh
    process, graded here."""
    from kgate.verify.early import CheckRequest, run_screen_checks

    checks = CheckRequest(
        reference=Path(request.reference),
        candidate=Path(request.candidate),
        entry=request.entry,
        reference_entry=request.reference_entry,
        phase_budget_s=request.phase_budget_s,
        klass=request.klass,
        seeds=request.seeds,
        dtype=request.dtype,
        overrides=request.overrides,
        parity_spec=ParitySpec.parse(request.parity),
        firing_spec=request.firing,
        kwargs=request.kwargs,
        weights=request.weights,
        backend=request.backend,
    )
    path = chip_lock.lock_path(request.chip, request.lock_dir)
    with chip_lock.hold(path, say=say, what="kgate verify checks legs"):
        say("running the checks: the reference and the candidate, each in a fresh process")
        return run_screen_checks(checks, _leg_env(request), workdir).to_json()


CHECK_STATUSES = ("PASS", "FAIL", "ADVISORY", "SKIPPED")


def gate_from_json(name: str, data: Mapping[str, Any]) -> GateResult:
    """A gate as a leg reported it; a shape no kgate writes (a leg's process ran candidate code,
    which could have written anything) raises ValueError."""
    if not isinstance(data, Mapping) or not isinstance(data.get("checks", []), list):
        raise ValueError(f"the {name} gate is not an object with a list of checks")
    checks = []
    for c in data.get("checks", []):
        if not (isinstance(c, Mapping) and isinstance(c.get("name"), str) and c.get("status") in CHECK_STATUSES
                and isinstance(c.get("detail"), str) and isinstance(c.get("fix", ""), str)
                and isinstance(c.get("gotcha", ""), str)):
            raise ValueError(f"a check of the {name} gate is not a check kgate writes")
        checks.append(Check(c["name"], c["status"], c["detail"], c.get("fix", ""), c.get("gotcha", "")))
    details = {k: v for k, v in data.items() if k not in ("status", "checks", "reason")}
    return GateResult(name, tuple(checks), details, str(data.get("reason", "")) if data.get("status") == "SKIPPED" else "")


def _crashed(name: str, leg: Mapping[str, Any]) -> GateResult:
    error = leg.get("error", {})
    return GateResult(
        name,
        (
            Check(
                "evaluated",
                "FAIL",
                f"the {name} leg did not produce a result: {error.get('problem', leg.get('status'))}",
                error.get("fix", "run the leg's command by hand (`kgate gate` / `kgate measure`) to see the error."),
            ),
        ),
    )


def run_verify(request: VerifyRequest, say: Callable[[str], None] = lambda _: None) -> tuple[Report, dict[str, Any]]:
    """Run the screen legs; return the combined report and the sealed receipt."""
    common = {
        "reference": str(Path(request.reference).resolve()),
        "candidate": str(Path(request.candidate).resolve()),
        "entry": request.entry,
        "reference_entry": request.reference_entry,
        "class": request.klass,
        "seeds": list(request.seeds),
        "dtype": request.dtype,
        "overrides": dict(request.overrides),
        "kwargs": kwargs_to_wire(request.kwargs),
        "weights": request.weights,
        "backend": request.backend,
    }
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kgate-verify-") as scratch:
        workdir = Path(scratch)
        ahead = _start_ahead(request, workdir) if _starts_ahead(request) else None
        try:
            return _screen(request, common, say, workdir, started, ahead)
        finally:
            if ahead is not None:
                ahead.discard()  # ended when it was not needed; reaped either way


def _screen(request: VerifyRequest, common: dict[str, Any], say: Callable[[str], None], workdir: Path,
            started: float, ahead: spawn.LegProcess | None) -> tuple[Report, dict[str, Any]]:
    """The checks, then the timing in the process started ahead, when the candidate got through
    them and its kernels are not interpreted (or --time-interpreted)."""
    checks_leg = _checks(request, say, workdir)
    handoff = checks_leg.pop("handoff")
    timing: dict[str, Any] = {"bar": request.bar, "budget_s": request.budget_s, "sessions": request.sessions,
                              "time_interpreted": request.time_interpreted,
                              "deadline": started + request.budget_s}  # --budget counts every phase, the checks too
    timing.update(
        inputs_in=handoff["path"], inputs_sha256=handoff["input_sha256"], inputs_file_sha256=handoff["file_sha256"]
    )
    if not _got_through(checks_leg):  # the candidate did not get through the checks: the run FAILs on them
        say("not timing: the candidate did not get through the checks")
        measure_leg = _not_timed_leg(request, "not run", bool(checks_leg.get("interpreted", True)))
    elif checks_leg.get("interpreted", True) and not request.time_interpreted:
        say("not timing: a kernel runs in an interpreter here (--time-interpreted times it anyway)")
        measure_leg = _not_timed_leg(request)
    else:
        measure_leg = _run_leg("measure", {**common, **timing}, request, say, workdir, held=ahead)
    return _finish(request, common, checks_leg, measure_leg, timing, say, workdir, started)


def _got_through(checks_leg: Mapping[str, Any]) -> bool:
    """Whether the candidate ran through the checks leg (its process finished, every probe ran)."""
    gates = checks_leg.get("gates")
    return isinstance(gates, Mapping) and not any(
        str(c.get("name", "")).endswith("candidate_ran") and c.get("status") == "FAIL"
        for g in gates.values() for c in g.get("checks", []))


def _not_timed_leg(request: VerifyRequest, why: str = "interpreted", interpreted: bool = True) -> dict[str, Any]:
    """What stands for a measure leg that was not run: the checks found an interpreter, or the
    candidate did not get through them (then `interpreted` is what the checks leg said of the
    machine)."""
    gates = not_timed_gates(request.bar, why)
    return {"not_timed": why, "interpreted": interpreted, "gates": {name: g.to_json() for name, g in gates.items()}}


def _finish(
    request: VerifyRequest,
    common: dict[str, Any],
    checks_leg: dict[str, Any],
    measure_leg: dict[str, Any],
    timing: dict[str, Any],
    say: Callable[[str], None],
    workdir: Path,
    started: float,
) -> tuple[Report, dict[str, Any]]:
    legs = [("checks", checks_leg), ("measure", measure_leg)]
    extra: dict[str, Any] = {}
    if request.mode == "full":
        reverse = measure_leg if measure_leg.get("not_timed") else _run_leg(
            "measure", {**common, **timing, "reference_first": True}, request, say, workdir / "reversed")
        legs.append(("reversed", reverse))
        if request.spec:
            legs.append(("coverage", _run_leg("coverage", {**common, "spec": request.spec}, request, say, workdir)))
        artifacts = Path(request.artifacts or Path.cwd() / "kgate-artifacts")
        make_folder(artifacts)
        extra["capture"] = _run_leg("capture", {**common, "artifacts": str(artifacts)}, request, say, workdir)
    gates: dict[str, GateResult] = {}
    integrity: list[Check] = []
    for leg_name, leg in legs:
        if "gates" not in leg:
            gates[leg_name] = _crashed(leg_name, leg)
            continue
        for name, data in leg["gates"].items():
            if name == "integrity":
                integrity += [replace(c, name=f"{leg_name}.{c.name}") for c in gate_from_json(name, data).checks]
            elif leg_name == "reversed":
                continue  # its timing is compared below, not reported as a second timing gate
            else:
                gates[name] = gate_from_json(name, data)
    for leg_name, leg in legs:
        if leg_name in ("measure", "reversed") and "gates" in leg and not leg.get("not_timed"):
            integrity.append(parent_clock_check(leg_name, leg))
            integrity.append(processes_check(leg_name, leg))
            integrity.append(scheduling_check(leg_name, leg))
            integrity.append(sealed_changes_check(leg_name, leg))
            integrity.append(same_answer_check(leg_name, checks_leg, leg))
            integrity.append(program_as_checked_check(leg_name, checks_leg, leg))
    if request.mode == "full":
        integrity += _full_checks(request, measure_leg, dict(legs)["reversed"])
        gates["capture"] = _capture_gate(extra["capture"])
    crashed = [name for name, leg in legs if "gates" not in leg] + [
        name for name, gate in gates.items() if any(c.name == "candidate_ran" for c in gate.failures)]
    if not integrity and crashed:  # nothing got far enough to check: said, and the run FAILs on the crash itself
        unchecked = GateResult("integrity", (), skipped_reason="not evaluated: no leg got far enough to check it (the "
                               "candidate's process did not finish; see the failing checks)")
        gates = {"integrity": unchecked, **gates}
    else:
        gates = {"integrity": GateResult("integrity", tuple(integrity)), **gates}
    source = checks_leg if "gates" in checks_leg else measure_leg
    context = {
        "mode": request.mode,
        "class": request.klass,
        "reference": source.get("reference", {"path": common["reference"]}),
        "candidate": source.get("candidate", {"path": common["candidate"]}),
        "op_point": source.get("op_point", {}),
        "seeds": list(checks_leg.get("seeds", request.seeds)),
        "random_seed": checks_leg.get("random_seed"),
        # the shape probes' sizes, moved from TINY (`kgate parity`): what a rerun needs besides the seeds
        "odd_op_point": checks_leg.get("odd_op_point"),
        "drawn_op_points": checks_leg.get("drawn_op_points", []),
        "past_op_point": checks_leg.get("past_op_point"),
        "input_dtypes": checks_leg.get("input_dtypes", measure_leg.get("input_dtypes", [])),
        "backend": request.backend,
        "static_inputs": checks_leg.get("static_inputs", measure_leg.get("static_inputs", [])),
        "device": source.get("device", {}),
        "interpreted": bool(measure_leg.get("interpreted", True)),  # it qualifies the timings
        "chip": request.chip,
        "seconds": _seconds(checks_leg, [*legs[1:], ("capture", extra.get("capture", {}))], time.monotonic() - started),
    }
    notes = ((NOT_TIMED_NOTE,) if measure_leg.get("not_timed") == "interpreted" else ()) + (
        (EAGER_NOTE,) if context["reference"].get("eager") else ())
    report = Report("verify", gates, context, notes)
    receipt = receipts.seal(_receipt_body(request, report, checks_leg, measure_leg))
    return report, receipt


def _seconds(checks_leg: Mapping[str, Any], legs: list[tuple[str, Mapping[str, Any]]], wall_s: float) -> dict[str, Any]:
    """Where verify's wall time went: the checks' two legs (run at once) and their grading, then
    each later leg's phases, on this process's clock; a leg that was not run is absent."""
    checks = checks_leg.get("seconds", {})
    out: dict[str, Any] = {"legs": {f"checks: {role}": phases for role, phases in checks.get("legs", {}).items()}}
    out["grading_s"] = checks.get("grading_s", 0.0)
    if "reference_programs" in checks:
        out["reference_programs"] = checks["reference_programs"]
    for name, leg in legs:
        if isinstance(leg.get("parent_clock"), Mapping):
            out["legs"][f"{name} leg"] = spawn.phase_seconds(leg["parent_clock"])
    out["wall_s"] = round(wall_s, 3)
    return out


def same_answer_check(leg_name: str, checks_leg: Mapping[str, Any], leg: Mapping[str, Any]) -> Check:
    """On the first seed's inputs (handed over, hash-checked), the timed candidate's error
    against the reference must be no more than what the checks graded: their candidate-vs-oracle
    error plus the reference's own (the floor), times TIMED_AGREEMENT_FACTOR, or the output's
    resolution. A candidate right while checked and wrong while timed (it can tell the two
    processes apart) FAILs here."""
    name = f"{leg_name}.same_answer_as_checked"
    timed = (leg.get("gates", {}).get("timing", {}).get("agreement") or [None])[0]
    seeds = checks_leg.get("seeds") or []
    probe = next((p for p in checks_leg.get("gates", {}).get("parity", {}).get("probes", [])
                  if seeds and p.get("name") == f"seed{seeds[0]}" and p.get("outputs")), None)
    if not isinstance(timed, Mapping) or probe is None:
        return Check(name, "FAIL", "the timed answer could not be compared with the checked one (no first-seed "
                     "record on one side)", "run verify again; if it persists, report a kgate bug.")
    sums = [float(o["candidate"]["max_abs"]) + float(o.get("floor", {}).get("max_abs", 0.0)) for o in probe["outputs"]]
    if not all(math.isfinite(x) for x in sums):  # nothing to hold the timed answer to: parity FAILs on it already
        return Check(name, "SKIPPED", f"the checked answer on seed {seeds[0]}'s inputs is not finite (parity fails "
                     "on it), so there is no right answer to hold the timed one to")
    checked = max(sums)
    allowance = TIMED_AGREEMENT_FACTOR * max(checked, float(timed.get("resolution", 0.0)))
    got = float(timed.get("max_abs", math.inf))
    if not got <= allowance:
        return Check(name, "FAIL", f"on seed {seeds[0]}'s inputs the timed candidate is {got:.3g} from the reference, "
                     f"the checked one at most {checked:.3g} (allowance {allowance:.3g}): it computed another answer "
                     "while timed", "compute the same result whenever called: a kernel that tells checking from "
                     "timing is never a speedup.")
    return Check(name, "PASS", f"on seed {seeds[0]}'s inputs the timed candidate is {got:.3g} from the reference, "
                 f"within {allowance:.3g} of what the checks graded")


def program_as_checked_check(leg_name: str, checks_leg: Mapping[str, Any], leg: Mapping[str, Any]) -> Check:
    """The candidate's program the timing process timed (session 0, on the first probe's inputs,
    handed over) must be the one the checks' process digested on those inputs (`timed_program`:
    JAX's lowered program; torch's functions in call order). A candidate that tells the timing
    process from a checking one (its command line, its environment, what else is imported) and
    runs something else there is timed on a program no check graded."""
    name = f"{leg_name}.program_as_checked"
    checked = checks_leg.get("timed_program")
    timed = leg.get("gates", {}).get("timing", {}).get("candidate_program")
    if not checked or not timed or checked.startswith("no program"):
        return Check(name, "FAIL", f"the timed program could not be held to the checked one (the checks: "
                     f"{checked or 'nothing recorded'}; the timing process: {'a digest' if timed else 'no digest'})",
                     "a candidate must run under what kgate digests its program with (jax's lowering; a torch "
                     "function mode); if it does, report a kgate bug.")
    if timed != checked:
        return Check(name, "FAIL", f"the timing process ran the candidate as another program (sha256 {timed[:12]}) "
                     f"than the checks graded on the same inputs ({checked[:12]}): it told the processes apart",
                     "run one program whatever process calls it: a kernel that tells checking from timing is "
                     "never a speedup.")
    return Check(name, "PASS", f"the timing process ran the program the checks graded on the same inputs "
                 f"(sha256 {timed[:12]})")


def parent_clock_check(leg_name: str, leg: Mapping[str, Any]) -> Check:
    """The measure leg's reported samples must fit the windows this process timed around its rounds."""
    timing = leg["gates"].get("timing", {})
    samples = timing.get("samples_ms")
    if not samples:
        if timing.get("speedup") is not None:  # a number with nothing under it cannot be bounded, nor believed
            return Check(f"{leg_name}.parent_clock", "FAIL", "the timing process reported a speedup without the "
                         "samples it came from: nothing it reports can be bounded by this process's clock",
                         "re-run; a candidate that rewrites kgate's report makes the run's timings worthless.")
        return Check(f"{leg_name}.parent_clock", "SKIPPED", "no timed rounds to bound")
    reported = [sum(r) + sum(c) for r, c in zip(samples["reference"], samples["candidate"])]
    clock = leg.get("parent_clock", {})
    return clock_bound(f"{leg_name}.parent_clock", reported, clock.get("beats", []), clock.get("ticks", []))


def sealed_changes_check(leg_name: str, leg: Mapping[str, Any]) -> Check:
    """The changes the timed leg's process watch sealed on its channel as it found them
    (`kgate.verify.seals`) against the report the leg made in the candidate's process: a report
    that says the process was untouched over a sealed change was rewritten there."""
    name = f"{leg_name}.changes_reported"
    found, wrong = seals.sealed(line for _, line in leg.get("parent_clock", {}).get("beats", []))
    changes = [shown or key for key, (_, shown) in found.items() if key.startswith("change ")]
    checks = leg.get("gates", {}).get("integrity", {}).get("checks", [])
    untouched = next((c for c in checks if c.get("name") == "process_untouched"), {})
    if changes and untouched.get("status") != "FAIL":
        wrong.append(f"the timed process's watch sealed {len(changes)} change(s) as it found them ("
                     f"{'; '.join(changes[:4])}) and its report says nothing of them: code in that process rewrote "
                     "kgate's record")
    if wrong:
        return Check(name, "FAIL", "; ".join(wrong), "the candidate must not patch kgate or its array libraries, nor "
                     "touch kgate's record of the run or its channel to its parent.")
    return Check(name, "PASS", f"every change the timed process's watch sealed is in its report ({len(changes)})"
                 if changes else "the timed process's watch sealed no change")


def processes_check(leg_name: str, leg: Mapping[str, Any]) -> Check:
    """What this process saw below the timed leg, and come to it as orphans, while the leg's rounds
    ran (the leg's own count of its processes is one it could be made to misreport)."""
    name = f"{leg_name}.parent_processes"
    records = leg.get("parent_clock", {}).get("processes")
    if records is None:
        return Check(name, "SKIPPED", "no /proc here: kgate did not watch the leg's processes")
    busy = [r for r in records if float(r.get("cpu_in_rounds_s", 0.0)) >= 0.01]
    if busy:
        text = ", ".join(f"pid {r['pid']} ({r['name']}) {float(r['cpu_in_rounds_s']):.2f} s" for r in busy[:4])
        return Check(name, "FAIL", f"{len(busy)} process(es) besides the timed leg used CPU while its rounds ran, as "
                     f"kgate saw them from outside it: {text}: work outside the timed process escapes (or disturbs) the "
                     "timed window", "start no processes (no fork, subprocess, multiprocessing or daemon).")
    if records:
        return Check(name, "ADVISORY", f"{len(records)} process(es) besides the timed leg were seen while it ran "
                     "(none used CPU in its rounds)")
    return Check(name, "PASS", "no process besides the timed leg ran below it or came to kgate as an orphan")


def scheduling_check(leg_name: str, leg: Mapping[str, Any]) -> Check:
    """How the OS scheduled the timed leg's threads once the candidate was imported, read from here
    every tenth of a second: a CPU set, policy, real-time priority or nice value no thread had
    before the import (nor this process, whose values a leg starts with) was set by candidate code.
    The leg's own watch reads its threads between calls; a change made inside the candidate's calls
    and put back before they return (real-time priority for its own work, the reference left as it
    was) is seen only from here."""
    name = f"{leg_name}.parent_scheduling"
    record = leg.get("parent_clock", {}).get("scheduling")
    if record is None:
        return Check(name, "SKIPPED", "no /proc here: kgate did not watch how the leg's threads were scheduled")
    before = {tuple(v) for v in record.get("before_import", [])}
    after = [tuple(v) for v in record.get("after_import", [])]
    if not after:
        return Check(name, "SKIPPED", "no look at the leg's threads fell after the candidate's import")
    new = [v for v in after if v not in before]
    if new:
        shown = "; ".join(f"CPUs {v[0]}, policy {_POLICIES.get(int(v[1]), v[1])}, real-time priority {v[2]}, nice {v[3]}"
                          for v in new[:3])
        return Check(name, "FAIL", f"after the candidate was imported, a thread of the leg was scheduled as none was "
                     f"before, as kgate saw it from outside the leg: {shown}: the candidate changes how its process is "
                     "scheduled (inside its own calls, where the leg's own watch does not look)",
                     "leave the process's CPU affinity, scheduling policy, priority and nice value as they are.")
    return Check(name, "PASS", f"the leg's threads were scheduled as before the candidate's import at every look after "
                 f"it ({len(after)} distinct setting(s))")


_POLICIES = {0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH", 5: "SCHED_IDLE", 6: "SCHED_DEADLINE"}


def _speedup(leg: Mapping[str, Any]) -> dict[str, Any] | None:
    return leg.get("gates", {}).get("timing", {}).get("speedup")


# Two cold processes run minutes apart: on a shared machine their speedups differ by more than
# either interval says (seen: [2.37, 2.54] against [2.84, 3.02], 1.12x apart, on this project's
# 2-core CPU during the test suite). Intervals that far apart or less are an advisory; an
# order dependence is an anomaly when the intervals are more than this ratio apart.
COLD_ORDERING_MARGIN = 1.25


def _full_checks(request: VerifyRequest, first: Mapping[str, Any], reverse: Mapping[str, Any]) -> list[Check]:
    checks: list[Check] = []
    a, b = _speedup(first), _speedup(reverse)
    if first.get("not_timed"):
        checks.append(Check("full.cold_orderings", "SKIPPED", f"not timed ({first['not_timed']}): no cold orderings "
                            "to compare"))
    elif a is None or b is None:
        checks.append(Check("full.cold_orderings", "FAIL", "a cold-process measurement did not complete", "see the timing gate."))
    else:
        disjoint = float(a["high"]) < float(b["low"]) or float(b["high"]) < float(a["low"])
        text = (
            f"candidate-first process {float(a['estimate']):.4f} [{float(a['low']):.4f}, {float(a['high']):.4f}], "
            f"reference-first process {float(b['estimate']):.4f} [{float(b['low']):.4f}, {float(b['high']):.4f}]"
        )
        interpreted = bool(first.get("interpreted", True) or reverse.get("interpreted", True))
        apart = max(float(b["low"]) / float(a["high"]), float(a["low"]) / float(b["high"])) if disjoint else 1.0
        if disjoint and interpreted:
            # An interpreter's per-process overhead varies by tens of percent (seen: 0.070x vs 0.052x for a
            # Pallas kernel in interpret mode); such timings back no verdict, so this is not an anomaly.
            checks.append(Check("full.cold_orderings", "ADVISORY",
                                "the cold processes disagree, on interpreter timings (not an anomaly): " + text))
        elif disjoint and apart <= COLD_ORDERING_MARGIN:
            checks.append(Check("full.cold_orderings", "ADVISORY",
                                f"the cold processes disagree, their intervals {apart:.3f}x apart (within the "
                                f"{COLD_ORDERING_MARGIN:g}x a busy machine's process-to-process variance reaches; an "
                                "anomaly beyond it): " + text))
        else:
            checks.append(
                Check(
                    "full.cold_orderings",
                    "FAIL" if disjoint else "PASS",
                    ("order dependence across cold processes: " + text) if disjoint else text,
                    "which leg starts the process changes the result: investigate caches, lazy init or leaked work."
                    if disjoint
                    else "",
                )
            )
    measured = first.get("gates", {}).get("timing", {}).get("candidate", {}).get("p50_ms")
    if request.author_claim_p50 is None:
        checks.append(Check("full.reproduction", "SKIPPED", "not checked: no --author-claim-p50 was given"))
    elif first.get("not_timed"):
        checks.append(Check("full.reproduction", "SKIPPED", f"not checked: nothing was timed ({first['not_timed']})"
                            + (", and an interpreter's p50 would say nothing about the author's device number"
                               if first["not_timed"] == "interpreted" else "")))
    elif measured is None:
        checks.append(Check("full.reproduction", "FAIL", "no verified p50 to compare the claim with", "see the timing gate."))
    else:
        gap = max(float(measured) / request.author_claim_p50, request.author_claim_p50 / float(measured))
        checks.append(
            Check(
                "full.reproduction",
                "FAIL" if gap > 2.0 else "PASS",
                f"author claimed p50 {request.author_claim_p50:.4g} ms, verification measured {float(measured):.4g} ms "
                f"({gap:.2f}x apart; more than 2x is an anomaly)",
                "the author's number does not reproduce: re-measure both sides on the same chip." if gap > 2.0 else "",
            )
        )
    return checks


def _capture_gate(leg: Mapping[str, Any]) -> GateResult:
    if leg.get("status") == "CAPTURED":
        files = leg.get("files", [])
        perfetto = leg.get("perfetto")
        opened = (f"; the Perfetto trace {perfetto['path']} opens at ui.perfetto.dev" if perfetto else
                  "; the profiler wrote no Perfetto trace")
        return GateResult(
            "capture",
            (Check("profile", "PASS", f"{len(files)} profiler artifact(s) in {leg.get('folder')} (timing discarded)"
                   + opened),),
            {"folder": leg.get("folder"), "files": files, **({"perfetto": perfetto} if perfetto else {})},
        )
    reason = leg.get("reason") or leg.get("error", {}).get("problem") or "capture unavailable"
    return GateResult("capture", (), {}, skipped_reason=str(reason))


def _model(leg: Mapping[str, Any], role: str) -> dict[str, Any]:
    model = (leg.get(role) or {}).get("model")
    return {"model": model} if model else {}


def _receipt_body(
    request: VerifyRequest, report: Report, checks_leg: Mapping[str, Any], measure_leg: Mapping[str, Any]
) -> dict[str, Any]:
    data = report.to_json()
    ref, cand = Path(request.reference).resolve(), Path(request.candidate).resolve()
    kgate_src = Path(__file__).resolve()
    return {
        "schema": receipts.SCHEMA,
        "schema_version": receipts.SCHEMA_VERSION,
        "kind": "verify",
        "mode": request.mode,
        "author_claim_p50_ms": request.author_claim_p50,
        "coverage_spec": request.spec,
        "kgate": {"version": __version__, **_git(kgate_src)},
        "environment": receipts.environment(),
        "candidate_repo": _git(cand),
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": list(request.argv),
        "host": platform.node(),
        "chip": request.chip,
        "device": data.get("device", {}),
        "interpreted": data.get("interpreted", True),
        "seconds": data.get("seconds", {}),
        "modules": {  # a Model module's class and weights (names, digest, how shared) as its leg built them
            "reference": {"path": str(ref), "sha256": file_sha256(ref), **_model(checks_leg, "reference")},
            "candidate": {"path": str(cand), "sha256": file_sha256(cand), "entry": request.entry,
                          **({"kwargs": dict(request.kwargs)} if request.kwargs else {}), **_model(checks_leg, "candidate")},
        },
        "class": request.klass,
        "backend": request.backend,
        "dtype": request.dtype,
        "overrides": dict(request.overrides),
        "op_point": data.get("op_point", {}),
        "seeds": list(data.get("seeds", request.seeds)),
        "random_seed": data.get("random_seed"),
        "odd_op_point": data.get("odd_op_point"),
        "drawn_op_points": data.get("drawn_op_points", []),
        "past_op_point": data.get("past_op_point"),
        "inputs": checks_leg.get("input_sha256", {}),
        "outputs": checks_leg.get("output_sha256", {}),
        "timed_inputs": measure_leg.get("input_sha256"),
        "input_dtypes": data.get("input_dtypes", checks_leg.get("input_dtypes", [])),
        "parity_spec": request.parity,
        "bar": request.bar,
        "gates": data["gates"],
        "status": data["status"],
    }


RECEIPTS_DIR = Path(".kgate") / "receipts"


def default_receipt_path(candidate: Path, here: Path | None = None) -> Path:
    """`.kgate/receipts/kgate-receipt-<candidate>-<UTC time>.json` under the top of the git
    repository holding `here` (the current directory; itself outside a repository). The
    `.kgate` folder carries a `.gitignore` of `*`: a later `git add -A` (or `kgate cand`)
    never commits a receipt next to the kernel; `kgate cand --receipt` copies it into the
    experiment's `receipts/`."""
    from kgate.record import git

    here = (here or Path.cwd()).resolve()
    try:
        top = git.call(["rev-parse", "--show-toplevel"], cwd=here)
        root = Path(top.stdout.strip()) if top.returncode == 0 and top.stdout.strip() else here
    except KgateError:
        root = here
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return root / RECEIPTS_DIR / f"kgate-receipt-{Path(candidate).stem}-{stamp}-{os.getpid()}.json"


def make_folder(folder: Path) -> None:
    """Create `folder` (only once there is something to write there); inside a `.kgate`
    folder, first the `.gitignore` that keeps `.kgate/` out of every commit."""
    for parent in (folder, *folder.parents):
        if parent.name == ".kgate":
            parent.mkdir(parents=True, exist_ok=True)
            ignore = parent / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# kgate's own files (receipts without an explicit path): never committed\n*\n")
            break
    folder.mkdir(parents=True, exist_ok=True)
