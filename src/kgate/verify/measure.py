"""`kgate measure` and `kgate calibrate`: co-measured, interleaved timing of two legs in
one process, with the integrity checks that keep the ratio honest.

Protocol: inputs made once and shared by both legs; the output's shapes poisoned (NaN
buffers allocated and freed); the candidate compiled and run first in the process; both
legs warmed up; then rounds of interleaved pairs in coin-flip order until the speedup's
confidence interval is narrow enough or the budget is spent. The clock is the one kgate
bound at import, before any candidate code existed.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from kgate import clock as kclock
from kgate.backends import HostTree, backend_for, get_backend, import_frameworks
from kgate.backends.base import ProgramPrint, floating_dtypes
from kgate.errors import KgateError, describe
from kgate.gates import integrity as integrity_gate, roofline, stats
from kgate.gates.bar import Bar, bar_gate, decided_alike, interval_decision, ordering_status
from kgate.gates.common import Check, GateResult, error_check
from kgate.gates.parity import timed_agreement
from kgate.problem import load_pair
from kgate.verify.lock import compile_slot
from kgate.verify import census
from kgate.verify.outcome import EAGER_NOTE, NOT_TIMED_NOTE, Report, not_timed_gates
from kgate.verify.spawn import beat, phase_seconds, phases_here, wait_tick
from kgate.verify.streams import stdout_to_stderr
from kgate.verify.watch import Watch

NOISY_IQR = 0.10  # IQR/median above this is called noisy, in plain words
CPU_BUDGET_S = 6.0
CPU_MAX_ROUNDS = 200  # rounds are short (3..6 per session): the 6 s budget is what bounds a CPU run
# a timed call's attributes that each call sets: the outputs it keeps alive, the draw its inputs came from (torch)
VOLATILE = ("_alive", "last_draw")
TIMED_AGREEMENT_FACTOR = 4.0  # a later session's error may be this many times the first's (or the resolution)


@dataclass(frozen=True)
class MeasureRequest:
    reference: Path
    candidate: Path
    entry: str = "workload"
    reference_entry: str = "workload"
    seed: int = 42
    dtype: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    bar: Bar | None = None
    budget_s: float = 20.0
    target_ci: float = 0.02  # stop when (high - low) / speedup <= this
    min_rounds: int = 10
    max_rounds: int = 200
    per_round: int = 0  # pairs per round; 0 = sized from the warm-up
    sessions: int = 3  # at least this many (fresh compiles and input values); the interval counts sessions
    reference_first: bool = False  # verify --mode full's second cold process: the other ordering
    inputs_file: Path | None = None  # verify: the checks leg's inputs, handed over (hash-checked)
    inputs_sha256: str | None = None
    inputs_file_sha256: str | None = None
    order_seed: int | None = None
    time_interpreted: bool = False  # time a kernel that runs in an interpreter (capped, labelled); default: skip
    kwargs: Mapping[str, Any] = field(default_factory=dict)  # the candidate's entry bound with these (--kwarg)
    weights: str = "shared"  # a Model reference's weights: shared | random:SEED (`--weights`)
    backend: str | None = None  # `--backend`: the framework to run the problem with; None: from its imports
    # when the whole run's --budget ends (time.monotonic(): the machine's clock, the same in every process), every
    # phase before the timing included; None: the budget counts the timing alone
    deadline: float | None = None

    def __post_init__(self) -> None:
        # the backend, chosen once for the whole run (every leg and the receipt take this one): read
        # again later, the reference file could have changed under a running candidate
        object.__setattr__(self, "backend", backend_for(self.reference, self.backend))
        if self.sessions < 2:
            raise KgateError("--sessions must be >= 2: the interval counts sessions, and one has no spread.",
                             "use e.g. --sessions 3.")
        if self.budget_s <= 0 or self.target_ci <= 0:
            raise KgateError("--budget and --target-ci must be positive.", "e.g. --budget 20 --target-ci 0.02.")
        if self.sessions > self.max_rounds:
            raise KgateError(f"--sessions {self.sessions} is more than --max-rounds {self.max_rounds}: every session "
                             "times at least one round.", "ask for fewer sessions or more rounds.")
        if self.min_rounds < 2 or self.max_rounds < self.min_rounds:
            raise KgateError(
                f"rounds must satisfy 2 <= min ({self.min_rounds}) <= max ({self.max_rounds}).",
                "a confidence interval needs at least 2 rounds; e.g. --min-rounds 5.",
            )
        if self.per_round < 0:
            raise KgateError("--per-round must be >= 0.", "use 0 to size rounds from the warm-up.")


@dataclass
class Samples:
    """Raw interleaved samples: rounds x pairs, in milliseconds, and who went first."""

    reference: list[list[float]] = field(default_factory=list)
    candidate: list[list[float]] = field(default_factory=list)
    candidate_first: list[list[bool]] = field(default_factory=list)
    session: list[int] = field(default_factory=list)  # the session each round ran in
    extra_threads: int = 0  # most Python threads seen alive right after a candidate call, over the baseline

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.array(self.reference), np.array(self.candidate), np.array(self.candidate_first)


LegsFactory = Callable[[int], tuple[Callable[[], int], Callable[[], int]]]


SESSION_TIMING_S = 0.1  # a session's timed rounds, about: many short sessions, each a fresh compile
SESSION_ROUNDS = (3, 6)  # rounds per session, at least and at most


def collect(
    make_legs: LegsFactory,
    *,
    sessions: int,
    per_round: int,
    min_rounds: int,
    max_rounds: int,
    budget_s: float,
    target_ci: float,
    rng: random.Random,
    decide: Callable[[stats.Interval], str | None] | None = None,
    threads: frozenset[int] = frozenset(),
    deadline: tuple[float, float] | None = None,
    progress: Callable[[int, float], None] | None = None,
    before_round: Callable[[int], None] | None = None,
    after_round: Callable[[int], None] | None = None,
) -> tuple[Samples, str, int, float, list[dict[str, Any]]]:
    """Collect rounds of interleaved pairs, session after session, and stop when the question
    is answered.

    Each session gets fresh compilations and fresh input values from `make_legs`, a warm-up,
    and the same number of rounds. After every session from the second on, the run looks at
    the anytime-valid interval over the sessions so far (stats.sequential_interval): from
    `sessions` sessions and `min_rounds` rounds on, it stops as soon as `decide` says the bar
    is MET or MISSED, or the interval's relative width is at most `target_ci`; otherwise when
    `max_rounds` or the time budget (compiles included) is spent, but never before `sessions`
    sessions: fewer cannot exclude anything. `deadline`: (when the whole run's budget ends on
    time.monotonic(), that budget), a second bound that counts every phase. Returns the samples, why it
    stopped, the pairs per round, the warm-up per-call seconds and every look.
    """
    samples = Samples()
    looks: list[dict[str, Any]] = []
    started = time.monotonic()
    per_call_s, rounds_each = 0.0, SESSION_ROUNDS[0]
    session = 0
    while True:
        beat(f"phase compiling session {session}")
        ref, cand = make_legs(session)
        beat(f"phase timing session {session}")  # bounded by the time budget and each round's tick
        n, warm = _per_round(ref, cand, per_round)
        if session == 0:
            per_round, per_call_s = n, warm
            round_s = max(2 * per_round * per_call_s, 1e-6)
            rounds_each = int(min(SESSION_ROUNDS[1], max(SESSION_ROUNDS[0], round(SESSION_TIMING_S / round_s))))
            rounds_each = max(1, min(rounds_each, max_rounds // max(2, sessions)))  # room for the sessions asked
        for _ in range(rounds_each):
            _round(samples, ref, cand, per_round, session, rng, threads, before_round, after_round)
            if progress:
                progress(len(samples.reference), looks[-1]["relative_width"] if looks else math.inf)
        session += 1
        rounds = len(samples.reference)
        if session >= 2:
            r, c, _ = samples.arrays()
            interval = stats.sequential_interval(r, c, samples.session)
            may_stop = session >= sessions and rounds >= min_rounds
            decided = decide(interval) if decide is not None and may_stop else None
            looks.append({"sessions": session, "rounds": rounds, "elapsed_s": round(time.monotonic() - started, 4),
                          **interval.to_json(),
                          "relative_width": interval.relative_width, "decided": decided or ""})
            if decided:
                return samples, (f"the bar was decided ({decided}) on its speedup thresholds after {session} sessions (a σ "
                                 "clause is graded once, at the end)"), per_round, per_call_s, looks
            if may_stop and interval.relative_width <= target_ci:
                return (samples, f"the interval reached the target width ({interval.relative_width:.4f} <= "
                        f"{target_ci})", per_round, per_call_s, looks)
            if rounds + rounds_each > max_rounds:
                return samples, f"max rounds reached ({rounds} of {max_rounds})", per_round, per_call_s, looks
            now = time.monotonic()
            whole = (now - (deadline[0] - deadline[1]), deadline[1]) if deadline is not None else None
            stop = budget_stop(now - started, session, sessions, budget_s, whole)
            if stop:
                return samples, stop, per_round, per_call_s, looks


def budget_stop(elapsed_s: float, session: int, sessions: int, budget_s: float,
                whole: tuple[float, float] | None = None) -> str:
    """Why the run stops on its time budget after `session` sessions, or "": it stops when one
    more session, at the mean cost of those so far (compiles included), would end past the
    timing's budget (`elapsed_s` of `budget_s`) or past the whole run's (`whole`: the seconds
    since the run began, every phase included, and its budget). The `sessions` asked for always
    run, so a budget they outgrow is passed, and the reason gives the real time spent."""
    if session < sessions:
        return ""
    per_session = elapsed_s / max(session, 1)
    if whole is not None and whole[0] + per_session > whole[1]:
        spent, budget, what = whole[0], whole[1], "every phase included"
    elif elapsed_s + per_session > budget_s:
        spent, budget, what = elapsed_s, budget_s, "compiles included"
    else:
        return ""
    over = f"; the {sessions} sessions asked for always run" if spent > budget else ""
    return (f"time budget spent: {spent:.1f} s of {budget:.1f} s ({what}; another session takes about "
            f"{per_session:.1f} s{over}): undecided")


def _round(samples: Samples, ref: Callable[[], int], cand: Callable[[], int], per_round: int, session: int,
           rng: random.Random, threads: frozenset[int], before_round: Callable[[int], None] | None,
           after_round: Callable[[int], None] | None) -> None:
    """One round: `per_round` interleaved pairs in coin-flip order."""
    r_row, c_row, f_row = [], [], []
    if before_round is not None:
        before_round(len(samples.reference))
    for _ in range(per_round):
        cand_first = rng.random() < 0.5
        if cand_first:
            c_ns = cand()
            samples.extra_threads = max(samples.extra_threads, _new_threads(threads))
            r_ns = ref()
        else:
            r_ns, c_ns = ref(), cand()
            samples.extra_threads = max(samples.extra_threads, _new_threads(threads))
        r_row.append(r_ns / 1e6)
        c_row.append(c_ns / 1e6)
        f_row.append(cand_first)
    samples.reference.append(r_row)
    samples.candidate.append(c_row)
    samples.candidate_first.append(f_row)
    samples.session.append(session)
    if after_round is not None:
        after_round(len(samples.reference) - 1)


def python_threads() -> frozenset[int]:
    return frozenset(t.ident for t in threading.enumerate() if t.ident is not None)


def _new_threads(baseline: frozenset[int]) -> int:
    """Python threads alive now that were not before the candidate's import. Threads
    created by native code (the framework's callback threads) show up as dummy threads
    and are not counted; native threads a candidate starts are not visible here."""
    return sum(
        1
        for t in threading.enumerate()
        if t.ident not in baseline and not isinstance(t, threading._DummyThread)  # type: ignore[attr-defined]
    )


def _per_round(ref: Callable[[], int], cand: Callable[[], int], requested: int) -> tuple[int, float]:
    """Warm both legs up; size a round to about 25 ms of timed work (3..50 pairs).

    Rounds, not pairs, are what the interval resamples: more, shorter rounds buy a better
    interval for the same time."""
    warm = [max(ref(), 1) for _ in range(3)] + [max(cand(), 1) for _ in range(3)]
    per_call_s = float(np.median(warm)) / 1e9
    if requested:
        return requested, per_call_s
    return int(min(50, max(3, round(0.025 / max(2 * per_call_s, 1e-9))))), per_call_s


@dataclass(frozen=True)
class LegPair:
    reference_name: str
    candidate_name: str


def timing_gate(
    samples: Samples,
    stop_reason: str,
    interpreted: bool,
    k: float,
    names: LegPair,
    per_call_s: float,
    flush_text: str,
    looks: list[dict[str, Any]],
    min_sessions: int,
    min_rounds: int,
    budget_s: float,
    max_rounds: int,
    clock_text: str = "",
) -> tuple[GateResult, dict[str, Any]]:
    ref, cand, first = samples.arrays()
    ref_stats, cand_stats = stats.summarize(ref), stats.summarize(cand)
    log_ratios = stats.session_log_ratios(ref, cand, samples.session)
    interval = stats.confidence_sequence(log_ratios)
    per_session = ref.shape[0] / max(1, len(log_ratios))  # rounds per session: the round cap bounds the sessions too
    power = stats.power_at_budget(log_ratios, looks[-1]["elapsed_s"] if looks else 0.0, budget_s,
                                  int(max_rounds // per_session) if per_session else None)
    sigma = stats.run_to_run_sigma(ref, cand)
    diff = ref_stats.p50 - cand_stats.p50
    mde = stats.minimum_detectable_speedup(ref_stats.p50, sigma, k)
    checks: list[Check] = []
    if interpreted:
        checks.append(
            Check(
                "interpreted",
                "ADVISORY",
                "these are interpreter timings (a kernel ran in interpret mode), not device timings: they steer "
                "nothing and can never back a `supported` verdict",
            )
        )
    for name, leg in ((names.reference_name, ref_stats), (names.candidate_name, cand_stats)):
        if leg.relative_iqr > NOISY_IQR:
            checks.append(
                Check(
                    "noise",
                    "ADVISORY",
                    f"noisy run: the {name}'s IQR is {leg.relative_iqr:.0%} of its median (over {NOISY_IQR:.0%}); "
                    "the machine is busy or the workload is too short to time reliably",
                    "close other work on the machine, or enlarge the op-point.",
                )
            )
    checks.append(
        Check(
            "measured",
            "PASS",
            f"{ref.shape[0]} rounds x {ref.shape[1]} interleaved pairs in {len(set(samples.session))} sessions; "
            f"stopped: {stop_reason}",
        )
    )
    details = {
        "legs": [names.reference_name, names.candidate_name],
        "method": {
            "clock": "time.perf_counter_ns bound at kgate import; " + (
                clock_text or "each call synchronized (block_until_ready)"),
            "order": "coin-flip per interleaved pair, same input buffers for both legs",
            "cache": flush_text,
            "rounds": int(ref.shape[0]),
            "sessions": len(set(samples.session)),
            "pairs_per_round": int(ref.shape[1]),
            "warmup_calls_per_leg": 3,
            "stop_reason": stop_reason,
            "interval_method": stats.CS_METHOD,
            "interval": "95% anytime-valid confidence sequence over sessions (each a fresh compile and fresh input "
            "values): per session log(reference p50 / candidate p50), a Gaussian-mean sequence with unknown "
            "scale (Bayes factor with a N(0, g) prior on the standardized effect, g in {1, 10, 100, 1000}, and "
            "the Haar prior on the scale; rejected where it reaches 20); looked at after every session, valid "
            "wherever the run stopped; estimate = the geometric mean of the sessions' speedups",
            "min_sessions": min_sessions,
            "min_rounds": min_rounds,
            "looks": looks,
        },
        "reference": ref_stats.to_json(),
        "candidate": cand_stats.to_json(),
        "speedup": interval.to_json(),
        "p50_difference_ms": diff,
        "sigma_ms": sigma,
        "sigma_k": k,
        "minimum_detectable_speedup": mde,
        "power": power,  # what a run of this budget detects with 90% power, from these sessions' scatter
        "samples_ms": {
            "reference": ref.tolist(),
            "candidate": cand.tolist(),
            "candidate_first": first.tolist(),
            "session": list(samples.session),
        },
        "warmup_per_call_ms": per_call_s * 1e3,
    }
    numbers = {"interval": interval, "sigma": sigma, "diff": diff}
    return GateResult("timing", tuple(checks), details), numbers


def _ordering_check(ordered: Mapping[str, Any] | None, bar: Bar | None) -> Check:
    status = ordering_status(bar, ordered)
    if ordered is None:
        return Check("ordering_independent", status, "too few pairs in one of the orderings to compare")
    a, b = ordered["both_first"], ordered["both_second"]
    text = (
        f"speedup with both legs first in their pair {a['estimate']:.4f} [{a['low']:.4f}, {a['high']:.4f}], both second "
        f"{b['estimate']:.4f} [{b['low']:.4f}, {b['high']:.4f}]"
    )
    if status == "ADVISORY":
        outcome = decided_alike(bar, (a["low"], a["high"]), (b["low"], b["high"]))
        return Check(
            "ordering_independent",
            status,
            f"order effect: {text} (disjoint intervals); the bar is {outcome} in either ordering, so the order "
            "does not decide it",
            "one leg runs slower after the other (a heavy leg evicting the caches of the call after it does this "
            "honestly); the speedup depends on the mix of orders, the bar does not.",
        )
    if status == "FAIL":
        return Check(
            "ordering_independent",
            "FAIL",
            f"order dependence: {text} (disjoint intervals)"
            + ("; the two orderings do not decide the bar alike" if bar is not None else ""),
            "one leg is slowed only when it follows the other (deferred or leaked work, or pollution): "
            "investigate before trusting any ratio.",
        )
    return Check("ordering_independent", "PASS", text)


def run_measure(request: MeasureRequest, progress: Callable[[int, float], None] | None = None) -> Report:
    """Co-measure reference and candidate; integrity + timing (+ bar) in one report."""
    backend = get_backend(request.backend)
    import_frameworks(request.reference, request.candidate)  # a framework's own import is not the candidate's doing
    backend.warm_up()  # the framework's own threads exist before the census below
    watch = Watch(backend)  # before any candidate code exists in this process
    try:
        with stdout_to_stderr(), phases_here() as clock:  # what the candidate prints never reaches kgate's stdout
            report = _measure(request, progress, backend, watch)
        report.context["seconds"] = {"legs": {"this process": phase_seconds(clock)}}
        return report
    finally:
        watch.restore()
        kclock.restore()


def _measure(
    request: MeasureRequest, progress: Callable[[int, float], None] | None, backend: Any, watch: Watch
) -> Report:
    started = time.perf_counter()
    beat("phase importing the reference and the candidate")
    clock = kclock.perf_counter_ns  # bound before the candidate is imported below
    threads_before_import = census.census()
    python_before_import = python_threads()  # a thread the candidate starts at its import counts too
    processes_before_import = _ProcessBaseline.take()
    expected: dict[str, ProgramPrint] = {}  # the reference's program, compiled before the candidate exists

    flush, flush_text = backend.cache_flusher()
    baseline: list[int] = []  # the page faults of the reference's timed calls before the candidate existed
    reference_faults: list[int] = []  # and of each in the rounds

    def fingerprint(reference: Any) -> None:
        beat("phase compiling the reference before the candidate is imported")
        expected["print"] = backend.program_fingerprint(reference, request.dtype)
        beat("phase timing the reference before the candidate is imported")
        baseline.extend(_reference_baseline(backend, reference, request, clock, flush, expected["print"]))
        beat("phase importing the candidate")  # from here the parent holds the threads' scheduling to what it was

    with load_pair(
        request.reference, request.candidate, entry=request.entry, overrides=request.overrides, watch=[stats, kclock],
        reference_entry=request.reference_entry, kwargs=request.kwargs, weights=request.weights,
        before_candidate=fingerprint,
    ) as pair:
        watch.check("at import")
        watch.guard(pair.reference)  # a patch at the candidate's first call would slow the reference
        beat("phase making inputs")
        timer_changes_at_import = kclock.tampered()
        if request.inputs_file is None:
            backend.refuse_ineffective(pair.reference, request.dtype, pair.op_point, dict(request.overrides))
        inputs = _reference_load_inputs(backend, pair.reference, request)
        if request.inputs_file is not None and backend.digest(inputs) != request.inputs_sha256:
            raise KgateError(
                "the inputs handed over from the checks leg do not hash as recorded.",
                "re-run kgate verify; if it persists, report a kgate bug.",
            )
        created = backend.digest(inputs)
        spec = backend.output_spec(pair.reference.entry, inputs)
        backend.poison(spec)
        threads = python_before_import
        remake = _remaker(backend, pair.reference, request.dtype)

        integrity: list[Check] = []
        before = expected.get("print") or ProgramPrint(None, "the reference was not lowered before the candidate's import")
        if request.reference_first:
            with compile_slot():
                ref = backend.compile_timed(pair.reference.entry, inputs, clock, flush, keep_outputs=False,
                                             eager=pair.reference.eager, precompiled=before, remake=remake)
            ref.output()
        beat("phase tracing the programs for kernels")
        try:
            interpreted = backend.interprets(pair.reference.entry, inputs, pair.reference.eager) or backend.interprets(
                pair.candidate.entry, inputs)
        except Exception as exc:
            return _unmeasurable(request, pair, backend, describe(exc), watch)
        if interpreted and not request.time_interpreted:  # nothing spent on numbers that cannot count
            watch.check("after tracing the candidate")
            return _not_timed(request, pair, backend, watch, timer_changes_at_import, created, inputs, started)
        try:
            beat("phase compiling the candidate")
            with compile_slot():
                cand = backend.compile_timed(pair.candidate.entry, inputs, clock, flush, remake=remake)
            first_out = cand.output()  # the candidate's first execution in this process
        except Exception as exc:
            return _unmeasurable(request, pair, backend, describe(exc), watch)
        watch.track("candidate timed call", cand, volatile=VOLATILE)
        watch.check("after the candidate's first call")
        integrity.append(_outputs_valid(first_out, spec))
        if not request.reference_first:
            beat("phase compiling the reference")
            with compile_slot():
                ref = backend.compile_timed(pair.reference.entry, inputs, clock, flush, keep_outputs=False,
                                             eager=pair.reference.eager, precompiled=before, remake=remake)
            ref.output()
        watch.track("reference timed call", ref, volatile=VOLATILE)
        cpu = backend.interpreted  # the CPU stand-in (shared, few cores): timing is capped, compiled or not
        budget = min(request.budget_s, CPU_BUDGET_S) if cpu else request.budget_s
        max_rounds = min(request.max_rounds, CPU_MAX_ROUNDS) if cpu else request.max_rounds
        buffers = [(inputs, created)]  # session 0's, and the running session's
        changed: list[int] = []  # sessions whose inputs changed while they were timed
        legs = {"candidate": cand, "reference": ref}
        # every session's per-call gaps after the timed stream (torch on a GPU), for stream_quiet
        escaped: dict[str, list[list[int]]] = {"candidate": [getattr(cand, "escaped_ns", [])],
                                               "reference": [getattr(ref, "escaped_ns", [])]}
        timed_seeds = [request.seed]
        agreement: list[dict[str, Any]] = []
        reference_programs: list[Any] = []  # each later session's reference timed call, as compiled
        candidate_programs: list[Any] = []  # and the candidate's

        look = watch.guard_lookups(backend.reference_lookups(pair.reference))

        def guarded(timed: Any) -> Callable[[], int]:
            def call() -> int:  # the look is outside the reference's timed window
                look()
                elapsed = timed()
                reference_faults.append(timed.faults[-1])
                return elapsed
            return call

        sampled: list[TimedSample] = []  # each session's candidate leg, its timed calls' outputs sampled

        def make_legs(session: int) -> tuple[Any, Any]:
            if session == 0:
                sampled.append(TimedSample(cand))
                return guarded(ref), sampled[-1]
            # Each later session times fresh input values, from a seed drawn now, after the
            # candidate's import: nothing it cached or precomputed can match them.
            agreement.append(_agreement(legs, timed_seeds[-1], sampled[-1]))
            if session >= 2:  # retire the session before: its inputs checked, its programs let go
                # the timing path's bytecode read again too (about 16 ms): a write into what the
                # reference's timed calls run, left in place for them, is seen a session later
                watch.check(f"after session {session - 1}", "hot", content=True)
                old, digest = buffers.pop()
                changed.extend(() if backend.digest(old) == digest else (session - 1,))
                watch.untrack(f"session {session - 1} candidate timed call", f"session {session - 1} reference timed call")
            seed = kclock.draw_seed(timed_seeds)
            timed_seeds.append(seed)
            fresh, _ = backend.create_inputs(pair.reference, seed, request.dtype)
            buffers.append((fresh, backend.digest(fresh)))
            with compile_slot():
                new_cand = backend.compile_timed(pair.candidate.entry, fresh, clock, flush, remake=remake)  # candidate first
            # What tracing the candidate changed (a setting, a function of the compiler's path) and put
            # back while it runs would apply to the reference's compile: seen here, before it.
            watch.check(f"before the reference was compiled for session {session}", "hot")
            with compile_slot():
                new_ref = backend.compile_timed(pair.reference.entry, fresh, clock, flush, keep_outputs=False,
                                                eager=pair.reference.eager, remake=remake)
            legs.update(candidate=new_cand, reference=new_ref)
            escaped["candidate"].append(getattr(new_cand, "escaped_ns", []))
            escaped["reference"].append(getattr(new_ref, "escaped_ns", []))
            reference_programs.append(new_ref)
            candidate_programs.append(new_cand)
            watch.track(f"session {session} candidate timed call", new_cand, volatile=VOLATILE)
            watch.track(f"session {session} reference timed call", new_ref, volatile=VOLATILE)
            sampled.append(TimedSample(new_cand))
            return guarded(new_ref), sampled[-1]

        rounds = _RoundWatch(watch, threads_before_import, processes_before_import)
        bar = request.bar
        samples, stop_reason, per_round, per_call_s, looks = collect(
            make_legs,
            sessions=request.sessions,
            per_round=request.per_round,
            min_rounds=min(request.min_rounds, max_rounds),
            max_rounds=max_rounds,
            budget_s=budget,
            target_ci=request.target_ci,
            rng=random.Random(request.order_seed),
            decide=(lambda i: interval_decision(bar, i.low, i.high)) if bar is not None else None,
            threads=threads,
            deadline=(request.deadline, request.budget_s) if request.deadline is not None else None,
            progress=progress,
            before_round=rounds.start,
            after_round=rounds.end,
        )
        beat("phase checking the outputs and the process after timing")
        agreement.append(_agreement(legs, timed_seeds[-1], sampled[-1] if sampled else None))
        last_out = cand.output()  # session 0's inputs again: the same answer as at first
        watch.check("at the end", "deep")
        after = created if not changed and all(backend.digest(b) == h for b, h in buffers) else "changed"
        timer_changes = sorted(set(timer_changes_at_import) | set(kclock.tampered()))
        ordered = stats.ordering_record(*samples.arrays(), samples.session, stats.ORDERING_LEVEL)
        integrity = [
            _process_check(watch.changes),
            _tamper_check(pair.reference_changes),
            *_program_checks(before, [ref, *reference_programs]),
            _candidate_program_check([cand, *candidate_programs]),
            _varied_check(cand),
            _timer_check(timer_changes),
            Check(
                "inputs_unchanged",
                "PASS" if after == created else "FAIL",
                "input hashes identical before and after timing"
                if after == created
                else "the inputs changed during timing (mutated, donated or deleted)",
                "" if after == created else "never write into or donate the input buffers.",
            ),
            *integrity,
            _stable_check(first_out, last_out),
            _agreement_check(agreement),
            _threads_check(samples.extra_threads),
            rounds.os_threads_check(),
            rounds.processes_check(),
            *_stream_checks(cand, escaped, samples),
            _ordering_check(ordered, request.bar),
            _reference_undisturbed_check(baseline, reference_faults),
        ]
        k = request.bar.sigma_k if request.bar and request.bar.sigma_k else 3.0
        timing, numbers = timing_gate(
            samples, stop_reason, interpreted, k, LegPair("reference", "candidate"), per_call_s, flush_text, looks,
            request.sessions, min(request.min_rounds, max_rounds), budget, max_rounds,
            getattr(cand, "method", ""),
        )
        physical, roofline_numbers = _roofline(pair, backend, timing) if not interpreted else (Check(
            "physically_possible", "SKIPPED", "timed in an interpreter: a device's physical floor says nothing about "
            "the interpreter's times"), None)
        if physical is not None:
            integrity.append(physical)
        if roofline_numbers is not None:
            timing = replace(timing, details={**timing.details, "roofline": roofline_numbers})
        # each session's candidate-vs-reference error: verify holds the first against what the checks graded
        timing = replace(timing, details={**timing.details, "agreement": agreement,
                                          "candidate_program": getattr(cand, "program_sha256", None)})
        if ordered is not None:  # the ordering check's numbers, for verify-receipt to re-derive
            timing = replace(timing, details={**timing.details, "ordering": ordered})
        gates = {"integrity": GateResult("integrity", tuple(integrity)), "timing": timing}
        if request.bar is not None:
            gates["bar"] = _bar_gate(request.bar, numbers, interpreted)
            unmeasurable = _power_short_of_bar(request.bar, gates["bar"], timing.details["power"])
            if unmeasurable is not None:
                gates["timing"] = replace(timing, checks=(*timing.checks, unmeasurable))
        context = {
            **_context(request, pair, backend, inputs, created, interpreted),
            "timed_seeds": timed_seeds,
            "first_leg": "reference" if request.reference_first else "candidate",
            "wall_s": round(time.perf_counter() - started, 3),
        }
        return Report("measure", gates, context, (EAGER_NOTE,) if pair.reference.eager else ())


def _roofline(pair: Any, backend: Any, timing: GateResult) -> tuple[Check | None, dict[str, Any] | None]:
    """The physical floor for the work the reference declares (get_flops / get_bytes at the
    op-point): a leg whose median time is below it FAILs integrity; SKIPPED, said, when the
    reference declares no work. (None, None) when nothing was timed."""
    legs = {leg: timing.details.get(leg, {}).get("p50_ms") for leg in ("reference", "candidate")}
    if not all(isinstance(v, (int, float)) for v in legs.values()):
        return None, None
    declared: dict[str, float] = {}
    problems = []
    for name in ("get_flops", "get_bytes"):
        fn = pair.reference.optional(name)
        if fn is None:
            continue
        try:
            value = fn()
        except Exception as exc:
            problems.append(f"{name}() raised {describe(exc)}")
            continue
        problem = roofline.work_problem(name, value)
        if problem:
            problems.append(problem)
        else:
            declared[name] = float(value)
    if problems:
        return Check("physically_possible", "FAIL", "the declared work cannot be used: " + "; ".join(problems),
                     "make get_flops() and get_bytes() return the op-point's counts (numbers, from CONFIG)."), None
    if not declared:
        return Check("physically_possible", "SKIPPED", "the reference declares no work (get_flops() / get_bytes()): "
                     "the physical floor is not checked"), None
    device = backend.device()
    peaks = roofline.peaks_for(device.platform, device.kind, backend.tpu_peaks(), os.cpu_count() or 1)
    if peaks is None:
        return Check("physically_possible", "ADVISORY", f"no peak figures for {device.kind!r}: the physical floor "
                     "is not checked here"), None
    work = roofline.Work(declared.get("get_flops"), declared.get("get_bytes"))
    return roofline.evaluate(work, peaks, {leg: float(ms) / 1e3 for leg, ms in legs.items()})


def _power_short_of_bar(bar: Bar, bar_gate: GateResult, power: Mapping[str, Any]) -> Check | None:
    """An undecided bar whose threshold lies inside what a run of this budget can resolve: say so,
    with what would resolve it, instead of leaving the user to rerun the same budget."""
    detectable = power["detectable_speedup"]
    close = [c.value for c in bar.clauses if c.kind == "threshold" and not stats.resolves(c.value, detectable)]
    if bar_gate.details.get("outcome") != "UNDECIDED" or not close:
        return None
    return Check(
        "bar_measurable", "ADVISORY",
        f"the bar's threshold {close[0]:g}x is closer to 1.0 than what a run of this budget resolves here: about "
        f"{power['sessions_in_budget']} sessions in {power['budget_s']:g} s detect a speedup of "
        f"{detectable:.4f}x (or the same slowdown) with {power['power']:.0%} power, so a candidate near the bar "
        "stays undecided",
        "raise --budget (power grows with the square root of the sessions), enlarge the op-point, or run "
        "`kgate calibrate` to see the noise before registering a bar.",
    )


def _context(request: MeasureRequest, pair: Any, backend: Any, inputs: Any, created: str,
             interpreted: bool) -> dict[str, Any]:
    return {
        "reference": pair.reference.to_json(),
        "candidate": pair.candidate.to_json(),
        "op_point": pair.op_point.to_json(),
        "seed": request.seed,
        "dtype": request.dtype,
        "static_inputs": backend.static_inputs(inputs),
        "backend": backend.name,
        "device": backend.device().to_json(),
        "interpreted": interpreted,
        "input_sha256": created,
        "input_dtypes": floating_dtypes(backend.to_host(inputs).leaves),
    }


def _not_timed(request: MeasureRequest, pair: Any, backend: Any, watch: Watch, timer_changes: list[str],
               created: str, inputs: Any, started: float) -> Report:
    """A run that found an interpreter and was not asked to time it: the integrity checks that
    hold without timing, the timing gate SKIPPED with the reason (the bar UNDECIDED)."""
    integrity = (
        _process_check(watch.changes),
        _tamper_check(pair.reference_changes),
        _timer_check(sorted(set(timer_changes) | set(kclock.tampered()))),
    )
    gates = {"integrity": GateResult("integrity", integrity),
             **not_timed_gates(request.bar.text if request.bar is not None else None)}
    context = {**_context(request, pair, backend, inputs, created, True), "timing": "not timed (interpreted)",
               "wall_s": round(time.perf_counter() - started, 3)}
    notes = (NOT_TIMED_NOTE, *((EAGER_NOTE,) if pair.reference.eager else ()))
    return Report("measure", gates, context, notes)


def _bar_gate(bar: Bar, numbers: dict[str, Any], interpreted: bool) -> GateResult:
    interval = numbers["interval"]
    return bar_gate(bar, speedup=interval.estimate, low=interval.low, high=interval.high,
                    p50_difference_ms=numbers["diff"], sigma_ms=numbers["sigma"], interpreted=interpreted)


def _outputs_valid(out: HostTree, spec: list[tuple[tuple[int, ...], str]]) -> Check:
    got = [(tuple(a.shape), str(a.dtype)) for a in out.leaves]
    if got != list(spec):
        return Check(
            "outputs_valid",
            "FAIL",
            f"the candidate's outputs {got} do not match the reference's {list(spec)}",
            "return the reference's shapes and dtypes.",
        )
    bad = sum(int((~np.isfinite(np.asarray(a, dtype=np.float64))).sum()) for a in out.leaves if a.dtype.kind in "fc" or "float" in str(a.dtype))
    if bad:
        return Check(
            "outputs_valid",
            "FAIL",
            f"the candidate's first output (after the output buffers were poisoned with NaN) has {bad} non-finite values",
            "write every output element; run `kgate gate` to find which.",
        )
    return Check("outputs_valid", "PASS", "first output finite and shape/dtype-matching after NaN poisoning")


def _stable_check(first: HostTree, last: HostTree) -> Check:
    same = all(
        np.array_equal(a.astype(np.float64), b.astype(np.float64), equal_nan=True)
        if (a.dtype.kind in "fc" or "float" in str(a.dtype))
        else np.array_equal(a, b)
        for a, b in zip(first.leaves, last.leaves)
    )
    if same:
        return Check("outputs_stable", "PASS", "the candidate's output after timing equals its first output")
    return Check(
        "outputs_stable",
        "FAIL",
        "the candidate's output after the timed calls differs from its first output on the same inputs",
        "the candidate behaves differently across calls (warm-up detection, caching, races): make it deterministic.",
    )


def _stream_checks(cand: Any, escaped: Mapping[str, list[list[int]]], samples: Samples) -> list[Check]:
    """stream_quiet where the timed calls measure one stream (torch on a GPU); nothing elsewhere."""
    if not getattr(cand, "stream_timed", False):
        return []
    timed = samples.arrays()[1]
    gaps = {leg: [g for session in sessions for g in session] for leg, sessions in escaped.items()}
    return integrity_gate.stream_check(gaps["candidate"], gaps["reference"], float(np.median(timed)), int(timed.size))


def _threads_check(extra: int) -> Check:
    if extra > 0:
        return Check(
            "threads_quiet",
            "FAIL",
            f"{extra} extra Python thread(s) alive right after a candidate call returned: work escapes the "
            "timed window into whatever runs next",
            "finish all work before returning; no background threads.",
        )
    return Check("threads_quiet", "PASS", "no Python thread outlived a candidate call")


@dataclass
class _ProcessBaseline:
    """The processes below this one before the candidate was imported (this process made their
    subreaper first, so an orphan below it stays below it), and its waited-for children's CPU."""

    pids: frozenset[int]
    reaped_cpu_s: float
    subreaper: bool

    @staticmethod
    def take() -> _ProcessBaseline | None:
        if not census.processes_available():
            return None
        subreaper = census.become_subreaper()
        return _ProcessBaseline(frozenset(census.descendants(os.getpid())), census.reaped_cpu(), subreaper)


class _RoundWatch:
    """Between timed rounds (never inside one): the parent's beat, the hot surface re-diffed,
    and a census of the process's OS threads and of the processes below it."""

    def __init__(self, watch: Watch, threads_before_import: dict[int, census.ThreadSample] | None,
                 processes_before_import: _ProcessBaseline | None = None) -> None:
        self.watch = watch
        self.baseline = threads_before_import
        self.first: dict[int, census.ThreadSample] | None = None
        self.last: dict[int, census.ThreadSample] | None = None
        self.seen: dict[int, str] = {}
        self.processes = processes_before_import
        self.process_cpu: dict[int, list[Any]] = {}  # pid: [name, CPU at its first sight in the rounds, CPU last]
        self.reaped_first: float | None = None
        self.reaped_last: float | None = None
        self.subreaper_lost = False

    def start(self, index: int) -> None:
        wait_tick(index)  # the parent's clock marks the round's earliest start
        if self.first is None and self.baseline is not None:
            self.first = census.census()
        if self.reaped_first is None and self.processes is not None:
            self.reaped_first = census.reaped_cpu()
            self._look_at_processes(first=True)

    def end(self, index: int) -> None:
        beat(f"e {index}")
        self.watch.check("during the timed rounds", "hot")
        if self.baseline is not None:
            self.last = census.census()
            if self.last is not None:
                for tid, sample in census.foreign(self.baseline, self.last).items():
                    self.seen[tid] = sample.name
        if self.processes is not None:
            self.reaped_last = census.reaped_cpu()
            self._look_at_processes()
            if self.processes.subreaper and census.is_subreaper() is False:
                self.subreaper_lost = True

    def _look_at_processes(self, first: bool = False) -> None:
        """The processes below this one that were not there before the import: each one's CPU
        from its first sight at the rounds' start (a process born during them counts from 0)."""
        assert self.processes is not None
        for pid, sample in census.descendants(os.getpid(), skip=self.processes.pids).items():
            record = self.process_cpu.setdefault(pid, [sample.name, sample.cpu_s if first else 0.0, sample.cpu_s])
            record[2] = sample.cpu_s

    def processes_check(self) -> Check:
        """FAIL when a process the candidate started (a fork, a subprocess, a daemon) used CPU while
        the rounds ran, or this process stopped being the subreaper that keeps orphans below it in
        view; ADVISORY when one is alive and idle. Those still alive are stopped here."""
        if self.processes is None or self.reaped_first is None or self.reaped_last is None:
            return Check("processes_quiet", "SKIPPED", "no /proc here: the processes below this one were not counted")
        busy = sum(max(last - first, 0.0) for _, first, last in self.process_cpu.values())
        busy += max(self.reaped_last - self.reaped_first, 0.0)
        alive = {pid: rec[0] for pid, rec in self.process_cpu.items()
                 if (s := census.process(pid)) is not None and s.state != "Z"}
        census.stop(alive)  # candidate code's, and this process may go on after the run
        names = ", ".join(f"pid {pid} ({name})" for pid, (name, _, _) in list(self.process_cpu.items())[:4])
        if self.subreaper_lost:
            return Check("processes_quiet", "FAIL", "this process stopped being the subreaper kgate made it before the "
                         "candidate's import (prctl PR_SET_CHILD_SUBREAPER turned off): a process started below it could "
                         "leave kgate's view", "start no processes, and leave the process's settings alone.")
        if busy >= 0.01:
            return Check(
                "processes_quiet",
                "FAIL",
                f"{len(self.process_cpu) or 'a'} process(es) started after the candidate's import "
                f"({names or 'already reaped'}) used {busy:.2f} s of CPU while the rounds ran: work outside the timed "
                "process escapes (or disturbs) the timed window",
                "do the work in the call; start no processes (no fork, subprocess or multiprocessing).",
            )
        if self.process_cpu:
            return Check("processes_quiet", "ADVISORY", f"{len(self.process_cpu)} process(es) started after the "
                         f"candidate's import ({names}) were alive during the rounds and used no CPU"
                         + (f"; {len(alive)} still alive were stopped" if alive else ""))
        return Check("processes_quiet", "PASS", "no process started below this one after the candidate's import")

    def os_threads_check(self) -> Check:
        if self.baseline is None or self.first is None or self.last is None:
            return Check("os_threads_quiet", "SKIPPED", "no /proc/self/task here: OS threads were not counted")
        busy = census.cpu_used(self.first, self.last, set(self.seen))
        if busy >= 0.01:
            return Check(
                "os_threads_quiet",
                "FAIL",
                f"{len(self.seen)} OS thread(s) started after kgate's baseline, outside the framework's pools, used "
                f"{busy:.2f} s of CPU during the timed rounds: work escapes (or disturbs) the timed window",
                "finish all work before returning; start no threads (not even with _thread or native code).",
            )
        if self.seen:
            return Check(
                "os_threads_quiet",
                "ADVISORY",
                f"{len(self.seen)} OS thread(s) started after kgate's baseline, outside the framework's pools, are "
                "alive; they used no CPU during the timed rounds",
            )
        return Check("os_threads_quiet", "PASS", "no OS thread besides the framework's pools appeared after the baseline")


BASELINE_CALLS = 12  # the reference's timed calls before the candidate's import (`_reference_baseline`)
# The reference's calls in the rounds may take this many times the page faults they took before the
# candidate's import (medians), and `FAULTS_FLOOR` more, before the run is an anomaly.
FAULTS_FACTOR = 2.0
FAULTS_FLOOR = 64  # 256 KiB of 4 KiB pages


def _reference_load_inputs(backend: Any, reference: Any, request: MeasureRequest) -> Any:
    """Session 0's inputs, as `_measure` makes them: the handed-over file, or create_inputs."""
    if request.inputs_file is not None:
        return backend.load_inputs(request.inputs_file, request.inputs_file_sha256 or "")
    # the reference's and the candidate's outputs, a kept first output, a session's fresh inputs: ~2 probes
    backend.ensure_fits(reference, request.dtype, 2, dict(reference.config or {}))
    return backend.create_inputs(reference, request.seed, request.dtype)[0]


def _remaker(backend: Any, reference: Any, dtype: str | None) -> Callable[[int], Any]:
    """A timed call's inputs where none is floating (torch), made afresh from a seed."""
    return lambda seed: backend.create_inputs(reference, seed, dtype)[0]


def _reference_baseline(backend: Any, reference: Any, request: MeasureRequest, clock: Callable[[], int],
                        flush: Callable[[], None] | None, compiled: ProgramPrint) -> list[int]:
    """The reference on its own, before any candidate code exists in this process: its program as
    compiled for the fingerprint, a call untimed, then `BASELINE_CALLS` calls as the rounds make
    them (cache flush, the bound clock); the page faults each window took (`faults`). What the
    reference's calls cost the process's memory where nobody changed it; [] where it cannot be
    taken (said by the check)."""
    try:
        inputs = _reference_load_inputs(backend, reference, request)
        timed = backend.compile_timed(reference.entry, inputs, clock, flush, keep_outputs=False,
                                      eager=reference.eager, precompiled=compiled,
                                      remake=_remaker(backend, reference, request.dtype))
        timed.output()
        for _ in range(BASELINE_CALLS):
            timed()
        return list(timed.faults)
    except Exception:  # noqa: BLE001 - the same step fails again, and is reported, after the import
        return []


def _reference_undisturbed_check(baseline: list[int], during: list[int]) -> Check:
    """The page faults the reference's calls take in the rounds (medians) against before the
    candidate's import. A change the candidate made to the process's memory (the allocator set to
    map every allocation afresh and hand it back on free, the heap trimmed after its calls) makes
    every call of the reference's fault on memory it would have reused, while its own calls, on
    buffers it keeps, do not: a speedup made of the reference's page faults. A busier machine
    changes how long a fault takes, not how many there are."""
    name = "reference_undisturbed"
    if not during:
        return Check(name, "SKIPPED", "no timed rounds")
    if not baseline:
        return Check(name, "FAIL", "the reference could not be run before the candidate's import: nothing to "
                     "hold its calls in the rounds to", "run again; if it persists, report a kgate bug.")
    before, now = float(np.median(baseline)), float(np.median(during))
    limit = max(FAULTS_FACTOR * before, before + FAULTS_FLOOR)
    text = (f"the reference's calls took {now:.0f} page faults each (median of {len(during)}) in the rounds, "
            f"{before:.0f} before the candidate's import (median of {len(baseline)})")
    if now > limit:
        return Check(name, "FAIL", text + f" (FAIL above {limit:.0f}): something the candidate did to this process's "
                     "memory (the allocator's settings, a trim of the heap, pages handed back) makes the reference "
                     "it is compared with fault on memory it would have reused",
                     "change nothing in the process beyond your own kernel's work.")
    return Check(name, "PASS", text)


SAMPLED_CALLS = 6  # per session: timed candidate calls whose own outputs are graded, drawn uniformly over its calls


class TimedSample:
    """A session's candidate leg, each call timed as it is, then (its window closed) kept in a
    uniform draw of `SAMPLED_CALLS` of the session's calls (a reservoir, from the OS's entropy: no
    call can tell whether it will be graded): the output the call returned, read on the host the
    moment its window closed, before the timed call lets go of anything (`timed_take`). What is
    graded is what was timed, not an untimed call beside it; a call that tells it is timed (its
    caller, its call pattern) and returns another answer, a lazy one, or one that something run
    later (a finalizer, a callback) fills in, is seen."""

    def __init__(self, timed: Any) -> None:
        self.timed, self.calls = timed, 0
        # a sampled call's output (or why it could not be read), with the draw its inputs were made
        # from (torch: each call's inputs are made afresh, `TorchTimedCall._fresh`; None: as given)
        self.outputs: list[tuple[int | None, HostTree | str]] = []

    def __call__(self) -> int:
        self.calls += 1
        return self.timed(self._take)

    def _take(self, read: Callable[[], HostTree]) -> None:
        """Keep this call's output or not, drawn after its window closed."""
        slot = len(self.outputs) if len(self.outputs) < SAMPLED_CALLS else kclock.pick(self.calls)
        if slot < SAMPLED_CALLS:
            try:
                out: HostTree | str = read()
            except Exception as exc:  # an output that cannot be read as a materialized array
                out = f"timed call {self.calls}'s output could not be read: {describe(exc)}"
            self.outputs[slot:slot + 1] = [(getattr(self.timed, "last_draw", None), out)]


def _agreement(legs: dict[str, Any], seed: int, sampled: TimedSample | None = None) -> dict[str, Any]:
    """The candidate's and the reference's answers on one session's timed inputs, compared at
    once (the reference's answer is dropped before any candidate code runs again): the worst of
    the candidate's sampled timed calls and of one more call."""
    reference = legs["reference"].output()
    worst = untimed = timed_agreement(legs["candidate"].output(), reference)
    outputs = sampled.outputs if sampled is not None else []
    for draw, out in outputs:
        this = (timed_agreement(out, reference if draw is None else legs["reference"].output(draw))
                if isinstance(out, HostTree) else {"max_abs": math.inf, "resolution": worst["resolution"], "error": out})
        if not this["max_abs"] <= worst["max_abs"]:
            worst = {**worst, **this}
    record = {"seed": seed, **worst}
    if sampled is not None:
        record["timed_calls"], record["timed_calls_graded"] = sampled.calls, len(outputs)
        record["untimed_max_abs"] = untimed["max_abs"]
        if sampled.calls and not outputs:
            record.update(max_abs=math.inf, error="none of the session's timed calls had its output graded")
    return record


def _agreement_check(records: list[dict[str, Any]]) -> Check:
    if not records:
        return Check("timed_outputs_agree", "FAIL", "no timed session was compared", "report this as a kgate bug.")
    first = records[0]["max_abs"]
    bad = [f"seed {r['seed']}: {r['error']}" for r in records if r.get("error")]
    for r in records:  # a timed call's answer against an untimed call's, on the session's inputs
        allowance = TIMED_AGREEMENT_FACTOR * max(float(r.get("untimed_max_abs", math.inf)), r["resolution"])
        if not r.get("error") and not r["max_abs"] <= allowance:
            bad.append(f"seed {r['seed']}: a timed call's answer is {r['max_abs']:.3g} from the reference, an untimed "
                       f"call's {r['untimed_max_abs']:.3g} (allowance {allowance:.3g})")
    for r in records[1:]:
        allowance = TIMED_AGREEMENT_FACTOR * max(first, r["resolution"])
        if not math.isfinite(r["max_abs"]) or r["max_abs"] > allowance:
            bad.append(f"seed {r['seed']}: max-abs {r['max_abs']:.3g} > {allowance:.3g}")
    text = ", ".join(f"seed {r['seed']}: {r['max_abs']:.3g}" for r in records)
    graded = sum(int(r.get("timed_calls_graded", 0)) for r in records)
    if graded:
        text += f" (the worst of one more call and {graded} timed calls drawn over the sessions, their own outputs)"
    if bad:
        return Check(
            "timed_outputs_agree",
            "FAIL",
            "what the candidate's timed calls returned disagrees with the reference: "
            f"{'; '.join(bad)} (allowance {TIMED_AGREEMENT_FACTOR:g}x the error of an untimed call on the same inputs, "
            "or of the first session's, or the output's resolution)",
            "the candidate is right only when it is not timed, or only on inputs it could know (a cache, a "
            "precomputed answer, the last call's answer): compute the result, every call.",
        )
    return Check("timed_outputs_agree", "PASS", f"candidate vs reference max-abs on each session's timed inputs: {text}")


def _process_check(changes: list[str]) -> Check:
    if changes:
        return Check(
            "process_untouched",
            "FAIL",
            "candidate code patched what the timing loop uses: " + "; ".join(changes[:12]),
            "the candidate must not rebind, wrap or monkeypatch kgate or its array libraries (jax, numpy, torch, triton).",
        )
    return Check("process_untouched", "PASS", "kgate's modules and the array library's surface unchanged through the run")


def _program_checks(expected: ProgramPrint, seen: Sequence[Any]) -> tuple[Check, ...]:
    """Every program compiled for the reference is the one lowered and compiled before the candidate
    was imported. A patched operator, lowering rule or helper that would slow the reference (or change
    what it computes) changes the lowered program, whatever route the patch took; a patch of the
    compiler's own path that puts itself back once used changes what was compiled from it."""
    lowered = [t.program_sha256 for t in seen]
    compiled = [t.compiled_sha256 for t in seen]
    checks = [_same_program("reference_program_unchanged", "lowered", expected.sha256, expected.why, lowered,
                            "something the candidate ran changed how the reference traces or lowers (an operator, "
                            "a lowering rule, a helper's code)")]
    if expected.sha256 and expected.compiled_sha256:  # a backend that compiles ahead of time
        checks.append(_same_program("reference_compiled_unchanged", "compiled", expected.compiled_sha256, "", compiled,
                                    "the same lowered program compiled to something else: something the candidate "
                                    "ran changed the compiler's path (a function it calls, what it returns)"))
    return tuple(checks)


def _varied_check(timed: Any) -> Check:
    """Whether every timed call saw inputs no other call saw: where candidate code runs at every
    call (torch), an answer cached by the inputs' content would otherwise hit, and its time is a
    lookup's."""
    how = getattr(timed, "varied", None)
    if how is None:
        return Check("timed_inputs_vary", "SKIPPED", "a compiled program is timed: no candidate code runs between its "
                     "calls to look its inputs up (each session's inputs are fresh values)")
    if not how:
        return Check("timed_inputs_vary", "FAIL", "the timed calls' inputs could not be varied (none is floating, and "
                     "the reference's create_inputs makes the same inputs for every seed): an answer cached by their "
                     "content would hit, and no timing here can tell it from a computed one",
                     "let create_inputs (or get_inputs) draw its values from torch's generator or a `seed` parameter.")
    return Check("timed_inputs_vary", "PASS", f"every timed call saw inputs no other call saw: {how}")


def _candidate_program_check(seen: Sequence[Any]) -> Check:
    """Every session compiles the candidate afresh, on inputs of the same shapes: its program is
    the same in each. One that traces to another program in a later session (it can tell which
    session it is traced for, or how many times it was) is timed on a program no check graded."""
    lowered = [getattr(t, "program_sha256", None) for t in seen]
    if not lowered or lowered[0] is None:
        return Check("candidate_program_unchanged", "SKIPPED", "not compared: the candidate's program is not lowered "
                     "ahead of its calls on this backend (each timed call's output is graded instead)")
    differ = [f"{i} ({sha[:12]})" for i, sha in enumerate(lowered) if sha != lowered[0] and sha is not None]
    if differ:
        return Check("candidate_program_unchanged", "FAIL", f"the candidate's program lowered for session(s) "
                     f"{', '.join(differ)} is not the one lowered for session 0 (sha256 {lowered[0][:12]}), on inputs "
                     "of the same shapes: the candidate traced to another program for a later session",
                     "trace to one program for one set of shapes: a kernel that changes with when it is traced "
                     "is timed on a program no check graded.")
    return Check("candidate_program_unchanged", "PASS", f"the candidate's program in all {len(seen)} session(s) is "
                 f"the one lowered for session 0 (sha256 {lowered[0][:12]})")


def _same_program(name: str, stage: str, expected: str | None, why: str, seen: list[str | None], cause: str) -> Check:
    if not expected:
        return Check(name, "SKIPPED", f"not compared: {why or 'no program was lowered'}")
    differ = [f"{i} ({sha[:12] if len(sha) == 64 else sha})" for i, sha in enumerate(seen)
              if sha is not None and sha != expected]
    if differ:
        return Check(name, "FAIL", f"the program {stage} for the reference in session(s) {', '.join(differ)} is not "
                     f"the one {stage} before the candidate was imported (sha256 {expected[:12]}): {cause}",
                     "the candidate must not patch the array library, its compiler or the reference.")
    return Check(name, "PASS", f"the reference's program in all {len(seen)} session(s) is the one {stage} before the "
                 f"candidate was imported (sha256 {expected[:12]})")


def _tamper_check(changes: tuple[str, ...]) -> Check:
    changes = tuple(c for c in changes if not c.startswith("time."))  # reported by timer_untouched
    if changes:
        return Check(
            "reference_untouched",
            "FAIL",
            "importing the candidate changed what kgate measures against: " + "; ".join(changes),
            "the candidate must not rebind or wrap the reference, kgate's statistics, or the libraries they use.",
        )
    return Check("reference_untouched", "PASS", "the reference, kgate's clocks and statistics are unchanged")


def _timer_check(changes: list[str]) -> Check:
    if changes:
        return Check(
            "timer_untouched",
            "FAIL",
            "timer tampering: " + ", ".join(changes) + " replaced by candidate code (kgate timed with the clock "
            "it bound before the import, but nothing this process reports about time can be trusted)",
            "remove the clock patching from the candidate.",
        )
    return Check("timer_untouched", "PASS", "the time module's clocks are the ones bound at kgate import")


def _unmeasurable(request: MeasureRequest, pair: Any, backend: Any, error: str, watch: Watch) -> Report:
    gate = GateResult(
        "timing",
        (
            error_check(
                "measured",
                f"the candidate could not be compiled and run: {error}",
                str(error),
                "run `kgate gate` first; a candidate that does not run cannot be timed.",
            ),
        ),
    )
    context = {
        "reference": pair.reference.to_json(),
        "candidate": pair.candidate.to_json(),
        "op_point": pair.op_point.to_json(),
        "device": backend.device().to_json(),
        "interpreted": backend.interpreted,
    }
    watch.check("after the candidate failed")
    gates = {"integrity": GateResult("integrity", (_process_check(watch.changes), _tamper_check(pair.reference_changes))),
             "timing": gate}
    return Report("measure", gates, context)
