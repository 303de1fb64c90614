"""The checking commands: gate, lower, fit, parity, measure, calibrate, verify, verify-receipt, compare, lock."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from kgate.cli.common import (
    finite,
    at_tiny,
    AdvisoriesOkOpt,
    BackendOpt,
    checked_backend,
    typed_backend,
    FamilyCandidateOpt,
    FamilyOpt,
    FamilyReferenceOpt,
    OptionalClassOpt,
    OptionalParityOpt,
    CandidateOpt,
    ClassOpt,
    DtypeOpt,
    EntryOpt,
    KwargOpt,
    WeightsOpt,
    RefEntryOpt,
    PhaseBudgetOpt,
    PHASE_BUDGET_S,
    ExpectHloOpt,
    ForbidHloOpt,
    ForbidShapeOpt,
    JsonOpt,
    KernelCallsOpt,
    KernelShareOpt,
    LowerForOpt,
    ChipKindOpt,
    OutOpt,
    ParityOpt,
    ReferenceOpt,
    SeedOpt,
    SetOpt,
    app,
    check_output_path,
    fail_usage,
    firing_spec,
    problem_request,
    run_report,
    settings,
)
from kgate.problem.oppoint import parse_overrides
from kgate import __version__
from kgate.errors import KgateError

@app.command()
def gate(
    reference: FamilyReferenceOpt = None,
    candidate: FamilyCandidateOpt = None,
    family: FamilyOpt = None,
    entry: EntryOpt = "workload",
    reference_entry: RefEntryOpt = "workload",
    phase_budget: PhaseBudgetOpt = PHASE_BUDGET_S,
    klass: OptionalClassOpt = None,
    overrides: SetOpt = None,
    seed: SeedOpt = None,
    dtype: DtypeOpt = None,
    parity_spec: OptionalParityOpt = None,
    expect_hlo: ExpectHloOpt = None,
    forbid_hlo: ForbidHloOpt = None,
    kernel_calls: KernelCallsOpt = None,
    forbid_shape: ForbidShapeOpt = None,
    kernel_share: KernelShareOpt = None,
    lower_for: LowerForOpt = "auto",
    chip_kind: ChipKindOpt = None,
    kwargs: KwargOpt = None,
    weights: WeightsOpt = None,
    backend: BackendOpt = "auto",
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Early-kill gate: integrity + parity at the TINY op-point + firing audit, in seconds.

    Runs the candidate in interpret mode on the CPU at the module's TINY op-point (or the
    --set overrides; with --family, TINY over the family's op-point), checks it against the reference on the given seeds plus one drawn at
    random for this run, and audits that the authored kernel is what ran and does the work.
    A kernel-authored candidate is also lowered for its device (TPU by default) from
    abstract shapes, at TINY and at the op-point: what the device's host would reject FAILs
    here, on any machine (--lower-for).
    The reference runs in a process that never imports the candidate, the candidate in one
    that never holds an expected answer, and the verdicts are computed in a third.
    """
    from kgate.verify import run_gate

    def produce():  # -> Report
        # the gate runs at TINY over the family's op-point (lowered at that op-point too)
        got = settings(family, weights=weights, backend=typed_backend(backend),
                       reference=reference, candidate=candidate, klass=klass, dtype=dtype, parity=parity_spec,
                       chip_kind=chip_kind, overrides=parse_overrides(overrides or []))
        run_set, registered = at_tiny(got)
        return run_gate(problem_request(
            got["reference"], got["candidate"], entry, got["klass"], run_set, seed, got["dtype"],
            got["parity"], expect_hlo, forbid_hlo, kernel_calls, forbid_shape, kernel_share, reference_entry,
            phase_budget, lower_for, got["chip_kind"], kwargs, got["weights"], registered, got["backend"],
        ))

    run_report(as_json, output, produce, advisories_ok)


@app.command()
def lower(
    reference: FamilyReferenceOpt = None,
    candidate: FamilyCandidateOpt = None,
    family: FamilyOpt = None,
    entry: EntryOpt = "workload",
    reference_entry: RefEntryOpt = "workload",
    phase_budget: PhaseBudgetOpt = PHASE_BUDGET_S,
    overrides: SetOpt = None,
    dtype: DtypeOpt = None,
    lower_for: LowerForOpt = "auto",
    chip_kind: ChipKindOpt = None,
    kwargs: KwargOpt = None,
    weights: WeightsOpt = None,
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """The lowering gate alone: lower the candidate for its device (TPU by default), on any machine.

    From the inputs' shapes only (nothing is allocated, no kernel runs), at TINY and at the
    op-point (with --set applied): the device's real Pallas lowering runs here and FAILs
    what the device's host would reject (a block shape off the (8, 128) tiling, a primitive
    Mosaic cannot lower), with the error, the kernel's line and the fix. The lowered module
    must hold a kernel custom call for every traced kernel, each reaching the outputs.
    Lowering for GPU needs jaxlib's CUDA plugin: without it nothing is lowered, which FAILs
    here (in `kgate gate` that gate is SKIPPED with the reason). The candidate runs in a fresh
    process; the verdict is graded here.
    """
    from kgate.verify.early import run_lower

    def produce():  # -> Report
        got = settings(family, weights=weights, reference=reference, candidate=candidate, dtype=dtype, chip_kind=chip_kind,
                       overrides=parse_overrides(overrides or []))
        run_set, registered = at_tiny(got)
        return run_lower(problem_request(
            got["reference"], got["candidate"], entry, "kernel-authored", run_set, None,
            got["dtype"], "floor", reference_entry=reference_entry, phase_budget=phase_budget, lower_for=lower_for,
            chip_kind=got["chip_kind"], kwargs=kwargs, weights=got["weights"], registered=registered,
        ))

    run_report(as_json, output, produce, advisories_ok)


GridOpt = Annotated[
    Optional[list[str]],
    typer.Option("--grid", metavar="NAME=V1,V2,...",
                 help="A keyword argument of the candidate's entry and its values, e.g. --grid block_rows=8,16,32 "
                 "(repeatable: every combination is a point)."),
]


@app.command()
def fit(
    grid: GridOpt = None,
    reference: FamilyReferenceOpt = None,
    candidate: FamilyCandidateOpt = None,
    family: FamilyOpt = None,
    entry: EntryOpt = "workload",
    reference_entry: RefEntryOpt = "workload",
    phase_budget: PhaseBudgetOpt = PHASE_BUDGET_S,
    overrides: SetOpt = None,
    dtype: DtypeOpt = None,
    lower_for: LowerForOpt = "auto",
    chip_kind: ChipKindOpt = None,
    kwargs: KwargOpt = None,
    weights: WeightsOpt = None,
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """The compile-only envelope: which points of a grid of the candidate's keyword arguments fit the device.

    Every combination of the --grid values is passed to the candidate's entry as keyword
    arguments and lowered for the device at the op-point (CONFIG with --set) from shapes
    alone, on any machine: the lowering must succeed, every kernel must be live, every
    output block written, and the VMEM estimate within the kernel's vmem_limit_bytes and
    the chip's VMEM (--chip-kind). Each point is a row: PASS when it fits, an advisory with
    the reason when it does not. The command FAILs only when no point fits. Nothing runs:
    check the parity of the points you keep with `kgate gate`.
    """
    from kgate.gates.fit import parse_grid
    from kgate.verify.envelope import run_fit

    def produce():  # -> Report
        parsed = parse_grid(grid or [])
        got = settings(family, weights=weights, reference=reference, candidate=candidate, dtype=dtype, chip_kind=chip_kind,
                       overrides=parse_overrides(overrides or []))
        return run_fit(problem_request(  # at the op-point: the family's registered one
            got["reference"], got["candidate"], entry, "kernel-authored", got["overrides"], None,
            got["dtype"], "floor", reference_entry=reference_entry, phase_budget=phase_budget, lower_for=lower_for,
            chip_kind=got["chip_kind"], kwargs=kwargs, weights=got["weights"],
        ), parsed)

    run_report(as_json, output, produce, advisories_ok)


@app.command()
def sweep(
    grid: GridOpt = None,
    reference: FamilyReferenceOpt = None,
    candidate: FamilyCandidateOpt = None,
    family: FamilyOpt = None,
    entry: EntryOpt = "workload",
    reference_entry: RefEntryOpt = "workload",
    phase_budget: PhaseBudgetOpt = PHASE_BUDGET_S,
    klass: OptionalClassOpt = None,
    overrides: SetOpt = None,
    seed: SeedOpt = None,
    dtype: DtypeOpt = None,
    parity_spec: OptionalParityOpt = None,
    lower_for: LowerForOpt = "auto",
    chip_kind: ChipKindOpt = None,
    kwargs: KwargOpt = None,
    weights: WeightsOpt = None,
    backend: BackendOpt = "auto",
    budget: Annotated[float, typer.Option("--budget", help="Timing budget in seconds for each point that passes its "
                                          "gate (kgate measure's --budget).", parser=finite)] = 10.0,
    time_interpreted: TimeInterpretedOpt = False,
    record: Annotated[Optional[str], typer.Option(
        "--record", metavar="SLUG", help="Run the family's next open plan item as this sweep and commit every "
        "point as one candidate (its receipt, its ledger row): the first under the item's id, the rest as "
        "extensions naming the sweep.")] = None,
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """A parity-gated sweep over the candidate's keyword arguments: gate every point, time those that pass.

    Each combination of the --grid values (over any --kwarg) is passed to the candidate's
    entry as keyword arguments. Each point first runs `kgate gate` (parity at TINY or --set,
    the firing audit, and the lowering for its device with the VMEM fit when --chip-kind
    names the chip); a point that fails or crashes is a row with its reason and is never
    timed. Each point that passes is co-measured against the reference in a fresh `kgate
    measure` process at the op-point (CONFIG with --set). The best timed point is reported
    with its interval, and whether the interval clears the runner-up's. A kernel that runs
    in an interpreter (Pallas on a CPU) is not timed unless --time-interpreted asks, and
    interpreter timings never name a best point. The sweep FAILs only when no point passes.
    With --record SLUG (under the family's terms) the sweep is the experiment's next open plan
    item and every point is committed as one candidate, as `kgate cand` would.
    """
    from kgate.gates.fit import parse_grid
    from kgate.verify.sweep import SweepTiming, run_sweep

    def produce():  # -> Report
        parsed = parse_grid(grid or [])
        if record is not None and family not in (None, record):
            raise KgateError(f"--record {record} and --family {family} name two families.", "name one: --record SLUG.")
        got = settings(record or family, weights=weights, backend=typed_backend(backend), reference=reference,
                       candidate=candidate, klass=klass, dtype=dtype, parity=parity_spec, chip_kind=chip_kind,
                       overrides=parse_overrides(overrides or []))
        run_set, registered = at_tiny(got)
        item = keep = None
        if record is not None:
            from kgate.record import sweep_record, workspace

            item, keep = sweep_record.prepare(workspace.find(Path.cwd()), record, got["candidate"]), []
        request = problem_request(
            got["reference"], got["candidate"], entry, got["klass"], run_set, seed,
            got["dtype"], got["parity"], reference_entry=reference_entry, phase_budget=phase_budget,
            lower_for=lower_for, chip_kind=got["chip_kind"], kwargs=kwargs, weights=got["weights"], registered=registered,
            backend=got["backend"],
        )
        if budget <= 0:
            raise KgateError(f"--budget {budget:g} is not a time budget.", "give seconds per point, e.g. --budget 10.")
        say = lambda line: typer.echo(line, err=True)  # noqa: E731
        report = run_sweep(request, parsed, SweepTiming(budget, time_interpreted), say=say, keep=keep)
        if item is not None:
            report = _record_sweep(report, item, keep, say)
        return report

    run_report(as_json, output, produce, advisories_ok)


def _record_sweep(report, item, keep, say):  # -> Report, with a `record` gate
    """Commit the sweep's points (sweep --record); the report keeps what was committed, and a
    `record` gate that FAILs when the sweep could not be recorded (the report is still written)."""
    import dataclasses

    from kgate.gates.common import Check, GateResult
    from kgate.gates.sweep import best_point
    from kgate.record import sweep_record

    done: list = []
    if "integrity" in report.gates:
        check = Check("recorded", "FAIL", "not recorded: a point was an ANOMALY, so nothing any point reported "
                      "can be trusted", "remove what the candidate does besides computing its result, and sweep again.")
    else:
        try:
            sweep_record.record(item, keep, best_point([p.outcome for p in keep]), say=lambda line: say(f"sweep: {line}"),
                                done=done)
            check = Check("recorded", "PASS", f"{len(done)} point(s) committed, one candidate each")
        except KgateError as exc:
            check = Check("recorded", "FAIL", f"{len(done)} of {len(keep)} point(s) committed, then refused: "
                          f"{exc.problem}", exc.fix)
    report.context["recorded"] = done
    return dataclasses.replace(report, gates={**report.gates, "record": GateResult("record", (check,))})


@app.command()
def parity(
    reference: FamilyReferenceOpt = None,
    candidate: FamilyCandidateOpt = None,
    family: FamilyOpt = None,
    entry: EntryOpt = "workload",
    reference_entry: RefEntryOpt = "workload",
    phase_budget: PhaseBudgetOpt = PHASE_BUDGET_S,
    overrides: SetOpt = None,
    seed: SeedOpt = None,
    dtype: DtypeOpt = None,
    parity_spec: OptionalParityOpt = None,
    kwargs: KwargOpt = None,
    weights: WeightsOpt = None,
    backend: BackendOpt = "auto",
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Parity gate: does the candidate compute what the reference computes?

    Multi-seed (the given seeds plus one drawn at random for this run), at the module's
    CONFIG op-point (with --set overrides), plus an odd shape and two drawn shapes moved
    from TINY (a kernel may refuse those: an advisory). The default spec compares against the
    reference recomputed in float32 (float64 when that floor is degenerate) and allows
    MULT x the reference's own error. The reference and the candidate run in separate
    fresh processes; this one grades.
    """
    from kgate.verify import run_parity

    def produce():  # -> Report
        got = settings(family, weights=weights, backend=typed_backend(backend),
                       reference=reference, candidate=candidate, overrides=parse_overrides(overrides or []),
                       dtype=dtype, parity=parity_spec)
        return run_parity(problem_request(got["reference"], got["candidate"], entry, "kernel-authored", got["overrides"],
                                          seed, got["dtype"], got["parity"], reference_entry=reference_entry,
                                          phase_budget=phase_budget, kwargs=kwargs, weights=got["weights"],
                                          backend=got["backend"]))

    run_report(as_json, output, produce, advisories_ok)


BarOpt = Annotated[
    Optional[str],
    typer.Option("--bar", help='Falsification bar, e.g. "p50 beats naive by >2% AND 3σ" or "speedup > 1.5x".'),
]
BudgetOpt = Annotated[float, typer.Option("--budget", help="Time budget in seconds for the whole run: loading, inputs, the checks and each timing session's compiles included (the timing alone is capped at 6 s on a CPU); no timing session starts that would end past it; the run stops earlier once the bar is decided, and never before --sessions sessions (the stop reason gives the seconds really spent).", parser=finite)]
TimingBudgetOpt = Annotated[float, typer.Option("--budget", help="Time budget in seconds for the timing, each session's compiles included (capped at 6 s on a CPU): no session starts that would end past it.", parser=finite)]
TargetCiOpt = Annotated[
    float, typer.Option("--target-ci", help="Stop when the speedup CI's relative width (high-low)/speedup is at most this.", parser=finite)
]
MinRoundsOpt = Annotated[int, typer.Option("--min-rounds", help="Rounds before the stop rule may fire.")]
MaxRoundsOpt = Annotated[int, typer.Option("--max-rounds", help="Upper bound on rounds.")]
PerRoundOpt = Annotated[int, typer.Option("--per-round", help="Interleaved pairs per round (0: sized from the warm-up).")]
TimeInterpretedOpt = Annotated[
    bool,
    typer.Option(
        "--time-interpreted",
        help="Time a kernel that runs in an interpreter (Pallas interpret mode, the Triton interpreter) anyway: capped short and labelled "
        "interpreted, it backs no verdict. Default: such runs are not timed (the timing gate is SKIPPED, the bar "
        "UNDECIDED).",
    ),
]
SessionsOpt = Annotated[
    int, typer.Option("--sessions", help="At least this many sessions (each with fresh compiles and fresh input values, a seed drawn after the candidate's import) before the run may stop; the interval counts sessions, so it carries their spread.")
]


def progress_callback(as_json: bool, every_s: float = 5.0):  # -> callback or None
    """Progress on stderr, never stdout: rewritten in place on a terminal; a plain line at most
    every `every_s` seconds otherwise (a CI log); nothing under --json."""
    if as_json:
        return None
    import time

    console = Console(stderr=True)
    terminal = sys.stderr.isatty()
    started = time.monotonic()
    last = [started]

    def show(rounds: int, width: float) -> None:
        now = time.monotonic()
        if terminal:
            console.print(f"  round {rounds}: CI relative width {width:.4f}", end="\r")
        elif now - last[0] >= every_s:
            last[0] = now
            print(f"kgate: {now - started:.0f} s: round {rounds}, CI relative width {width:.4f}", file=sys.stderr,
                  flush=True)

    return show


@app.command()
def flags(
    flag: Annotated[Optional[list[str]], typer.Option(
        "--flag", metavar="NAME=VALUE", help="The flag (repeatable): XLA_FLAGS=--xla_name=value or "
        "LIBTPU_INIT_ARGS=--name=value (added to what the environment sets), or JAX_NAME=value.")] = None,
    reference: FamilyReferenceOpt = None,
    candidate: FamilyCandidateOpt = None,
    family: FamilyOpt = None,
    entry: EntryOpt = "workload",
    reference_entry: RefEntryOpt = "workload",
    klass: OptionalClassOpt = None,
    overrides: SetOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the timed inputs.")] = 42,
    dtype: DtypeOpt = None,
    bar: BarOpt = None,
    repeats: Annotated[int, typer.Option("--repeats", help="Processes of each setting (default and flagged), "
                                         "alternated ABBA.")] = 3,
    budget: Annotated[float, typer.Option("--budget", help="Timing budget in seconds of each process.", parser=finite)] = 6.0,
    sessions: SessionsOpt = 2,
    time_interpreted: TimeInterpretedOpt = False,
    phase_budget: PhaseBudgetOpt = PHASE_BUDGET_S,
    kwargs: KwargOpt = None,
    weights: WeightsOpt = None,
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """The four-leg fairness harness for a compiler flag: reference, reference + flag, candidate, candidate + flag.

    A flag is process-global, so the reference and the candidate are co-measured (as
    `kgate measure` does) in fresh processes of two settings, the environment as it is and
    the same with the flag, alternated ABBA (--repeats of each). The report gives each leg's
    p50s and the effects: the candidate against the reference with the flag on both legs (the
    fair number when the kernel needs the flag), and without it; the flag's own effect on the
    reference and on the candidate (across processes). A flag that speeds the reference as
    much as the candidate is the flag's win, not the candidate's. For --class flag the
    intervention is the flag itself: its claim is the reference against the reference flagged.
    --bar grades that headline number (with --family, the stub's bar).
    """
    from kgate.gates.bar import parse_bar
    from kgate.problem.model import parse_weights
    from kgate.problem.module import parse_kwargs
    from kgate.verify.flags import FlagsRequest, parse_flags, run_flags

    def produce():  # -> Report
        parsed = parse_flags(flag or [])
        got = settings(family, weights=weights, reference=reference, candidate=candidate, overrides=parse_overrides(overrides or []),
                       dtype=dtype, klass=klass, bar=bar)
        request = FlagsRequest(
            reference=got["reference"], candidate=got["candidate"], flags=parsed, klass=got["klass"],
            entry=entry, reference_entry=reference_entry, seed=seed, dtype=got["dtype"], overrides=got["overrides"],
            kwargs=parse_kwargs(kwargs or []), weights=parse_weights(got["weights"]), repeats=repeats, budget_s=budget,
            sessions=sessions,
            time_interpreted=time_interpreted, phase_budget_s=phase_budget,
            bar=parse_bar(got["bar"]) if got["bar"] is not None else None,
        )
        return run_flags(request, say=lambda line: typer.echo(line, err=True))

    run_report(as_json, output, produce, advisories_ok)


@app.command()
def measure(
    reference: FamilyReferenceOpt = None,
    candidate: FamilyCandidateOpt = None,
    family: FamilyOpt = None,
    entry: EntryOpt = "workload",
    reference_entry: RefEntryOpt = "workload",
    overrides: SetOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the timed inputs.")] = 42,
    dtype: DtypeOpt = None,
    bar: BarOpt = None,
    budget: BudgetOpt = 20.0,
    target_ci: TargetCiOpt = 0.02,
    min_rounds: MinRoundsOpt = 10,
    max_rounds: MaxRoundsOpt = 200,
    per_round: PerRoundOpt = 0,
    sessions: SessionsOpt = 3,
    time_interpreted: TimeInterpretedOpt = False,
    kwargs: KwargOpt = None,
    weights: WeightsOpt = None,
    backend: BackendOpt = "auto",
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Co-measure reference and candidate: interleaved, synchronized, with a 95% interval.

    Both legs are jitted by kgate and run on the same input buffers in one fresh process
    (this one never imports the candidate, and checks the samples it reports against its own
    clock), the candidate first (after the output's shapes are poisoned with NaN), interleaved in
    coin-flip order, in rounds until the speedup's interval is narrow enough or the
    budget is spent. Reports per-leg p50/mean/std/min/IQR, the speedup with its bootstrap
    interval, the run-to-run sigma and the minimum detectable effect; with --bar, MET /
    MISSED / UNDECIDED with the arithmetic. A kernel that runs in an interpreter (Pallas
    interpret mode on a CPU) is not timed unless --time-interpreted asks; then its timings are
    capped and labelled interpreted, and they never back a verdict.
    """
    import time
    from dataclasses import replace

    from kgate.gates.bar import parse_bar
    from kgate.problem.model import parse_weights
    from kgate.problem.module import parse_kwargs
    from kgate.verify.measure import MeasureRequest
    from kgate.verify.measured import run_measure_apart

    err = Console(stderr=True)

    def say(message: str) -> None:  # the leg's phase name is its text, never markup
        if not as_json:
            err.print(f"kgate measure: {message}", soft_wrap=True, markup=False, highlight=False)

    def produce():  # -> Report
        deadline = time.monotonic() + budget  # --budget counts every phase: loading and inputs too
        got = settings(family, weights=weights, backend=typed_backend(backend),
                       reference=reference, candidate=candidate, overrides=parse_overrides(overrides or []),
                       dtype=dtype, bar=bar)
        return run_measure_apart(replace(request(got), deadline=deadline), say)

    def request(got):  # -> MeasureRequest
        return MeasureRequest(
            reference=got["reference"],
            candidate=got["candidate"],
            entry=entry,
            reference_entry=reference_entry,
            seed=seed,
            dtype=got["dtype"],
            overrides=got["overrides"],
            bar=parse_bar(got["bar"]) if got["bar"] is not None else None,
            budget_s=budget,
            target_ci=target_ci,
            min_rounds=min_rounds,
            max_rounds=max_rounds,
            per_round=per_round,
            sessions=sessions,
            time_interpreted=time_interpreted,
            kwargs=parse_kwargs(kwargs or []),
            weights=parse_weights(got["weights"]),
            backend=checked_backend(got["backend"]),
        )

    run_report(as_json, output, produce, advisories_ok)


@app.command()
def calibrate(
    reference: ReferenceOpt,
    reference_entry: RefEntryOpt = "workload",
    overrides: SetOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the timed inputs.")] = 42,
    dtype: DtypeOpt = None,
    bar: BarOpt = None,
    budget: TimingBudgetOpt = 10.0,
    per_round: PerRoundOpt = 0,
    sessions: SessionsOpt = 3,
    time_interpreted: TimeInterpretedOpt = False,
    weights: WeightsOpt = None,
    backend: BackendOpt = "auto",
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Measure the rig: A/A noise floor, dispatch floor, and the minimum detectable effect.

    Times the reference against a separately loaded copy of itself (the A/A interval
    must contain 1.0) and one trivial op on the same buffers (the dispatch floor), then
    says which speedups this machine can confirm for this workload: is a 2% bar (or the
    --bar you plan to register) even measurable here?
    """
    from kgate.gates.bar import parse_bar
    from kgate.problem.model import parse_weights
    from kgate.verify.calibrate import CalibrateRequest, run_calibrate

    run_report(as_json, output, lambda: run_calibrate(
        CalibrateRequest(
            reference=reference,
            reference_entry=reference_entry,
            seed=seed,
            dtype=dtype,
            overrides=parse_overrides(overrides or []),
            bar=parse_bar(bar) if bar is not None else None,
            budget_s=budget,
            per_round=per_round,
            sessions=sessions,
            time_interpreted=time_interpreted,
            weights=parse_weights(weights or "shared"),
            backend=checked_backend(backend),
        ),
        progress=progress_callback(as_json),
    ), advisories_ok)


@app.command()
def verify(
    reference: FamilyReferenceOpt = None,
    candidate: FamilyCandidateOpt = None,
    family: FamilyOpt = None,
    mode: Annotated[str, typer.Option("--mode", help="screen, or full (adds cold orderings, reproduction, coverage, capture).")] = "screen",
    entry: EntryOpt = "workload",
    reference_entry: RefEntryOpt = "workload",
    phase_budget: PhaseBudgetOpt = PHASE_BUDGET_S,
    klass: OptionalClassOpt = None,
    overrides: SetOpt = None,
    seed: SeedOpt = None,
    dtype: DtypeOpt = None,
    parity_spec: OptionalParityOpt = None,
    bar: BarOpt = None,
    budget: BudgetOpt = 20.0,
    sessions: SessionsOpt = 3,
    time_interpreted: TimeInterpretedOpt = False,
    kwargs: KwargOpt = None,
    weights: WeightsOpt = None,
    backend: BackendOpt = "auto",
    expect_hlo: ExpectHloOpt = None,
    forbid_hlo: ForbidHloOpt = None,
    kernel_calls: KernelCallsOpt = None,
    forbid_shape: ForbidShapeOpt = None,
    kernel_share: KernelShareOpt = None,
    lower_for: LowerForOpt = "auto",
    chip_kind: ChipKindOpt = None,
    chip: Annotated[int, typer.Option("--chip", help="Chip to run on and lock.")] = 0,
    lock_dir: Annotated[Optional[Path], typer.Option("--lock-dir", help="Folder of the chip lock files.")] = None,
    receipt: Annotated[
        Optional[Path],
        typer.Option(
            "-o", "--output", "--receipt",
            help="Where to write the receipt (default: .kgate/receipts/kgate-receipt-<cand>-<time>.json under the "
            "repository's top, a folder git ignores).",
        ),
    ] = None,
    author_claim_p50: Annotated[
        Optional[float], typer.Option("--author-claim-p50", help="full: the author's claimed candidate p50 in ms.", parser=finite)
    ] = None,
    spec: Annotated[
        Optional[str], typer.Option("--spec", help="full: coverage axes IN:AXIS->OUT:AXIS[,...], e.g. 0:1->0:1.")
    ] = None,
    artifacts: Annotated[
        Optional[Path], typer.Option("--artifacts", help="full: folder for the profiler capture (default: <receipt>.artifacts).")
    ] = None,
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
    output: Annotated[
        Optional[Path], typer.Option("--report", help="Also write the JSON report (not the receipt) to this file.")
    ] = None,
) -> None:
    """Independent verification: every leg in a fresh process, one report, one receipt.

    --mode screen: integrity + multi-seed parity (with shape probes moved from TINY) +
    firing audit at the op-point, then
    co-measured timing (+ the bar), each leg in a fresh process holding the chip lock,
    with no persistent compilation cache; a kernel the checks found running in an
    interpreter is not timed (--time-interpreted times it anyway). --mode full adds a second cold process in
    the other ordering, the reproduction check against --author-claim-p50 (over 2x apart
    is an anomaly), the coverage battery for --spec, and a profiler capture whose timing
    is discarded. The receipt (self-hashed canonical JSON) is written atomically at the
    end, to -o FILE; `kgate verify-receipt FILE` checks it later. --report FILE keeps the
    JSON report too (what --json prints), which is not a receipt.
    """
    from kgate.problem.model import parse_weights
    from kgate.problem.module import parse_kwargs
    from kgate.verify import receipt as receipts
    from kgate.verify.screen import VerifyRequest, default_receipt_path, make_folder, run_verify

    err = Console(stderr=True)
    spinner = err.status("kgate verify: starting") if (not as_json and err.is_terminal) else None

    def say(message: str) -> None:  # a path or a leg's phase name is text, never markup
        if spinner is not None:
            spinner.update(Text(f"kgate verify: {message}"))
        elif not as_json:
            err.print(f"kgate verify: {message}", soft_wrap=True, markup=False, highlight=False)

    def produce():  # -> Report
        got = settings(family, weights=weights, backend=typed_backend(backend),
                       reference=reference, candidate=candidate, klass=klass,
                       overrides=parse_overrides(overrides or []), dtype=dtype, parity=parity_spec, bar=bar,
                       chip_kind=chip_kind)
        path = receipt or default_receipt_path(got["candidate"])
        if receipt is not None:
            check_output_path(receipt)  # checked now, not after a run whose receipt it could not keep
        if output is not None and output.resolve() == path.resolve():
            raise KgateError(f"-o and --report name the same file {output}.",
                             "the receipt (-o) and the report (--report) are different documents: give two paths.")
        if receipt is None:  # made (git-ignored) and checked now, not after a run it could not keep
            try:
                make_folder(path.parent)
            except OSError as exc:
                raise KgateError(f"cannot make the receipt folder {path.parent}: {exc.strerror}.",
                                 "pass -o FILE in a folder you can write.") from exc
        request = VerifyRequest(
            reference=got["reference"],
            candidate=got["candidate"],
            entry=entry,
            reference_entry=reference_entry,
            phase_budget_s=phase_budget,
            klass=got["klass"],
            seeds=tuple(seed) if seed else (42, 43),
            dtype=got["dtype"],
            overrides=got["overrides"],
            parity=got["parity"],
            firing=firing_spec(expect_hlo, forbid_hlo, kernel_calls, forbid_shape, kernel_share, lower_for,
                               got["chip_kind"]),
            bar=got["bar"],
            budget_s=budget,
            sessions=sessions,
            chip=chip,
            lock_dir=lock_dir,
            receipt=receipt,
            argv=tuple(sys.argv),
            mode=mode,
            author_claim_p50=author_claim_p50,
            spec=spec,
            artifacts=artifacts or path.with_suffix(".artifacts"),
            time_interpreted=time_interpreted,
            kwargs=parse_kwargs(kwargs or []),
            weights=parse_weights(got["weights"]),
            backend=checked_backend(got["backend"]),
        )
        try:
            if spinner is not None:
                spinner.start()
            report, sealed = run_verify(request, say)
        except KeyboardInterrupt:
            err.print("kgate verify: interrupted: no receipt was written")
            raise typer.Exit(2) from None
        finally:
            if spinner is not None:
                spinner.stop()
        receipts.write(path, sealed)
        report.context["receipt"] = {"path": str(path), "sha256": sealed[receipts.HASH_FIELD]}
        say(f"receipt {path} (sha256 {sealed[receipts.HASH_FIELD][:16]}...)")
        return report

    run_report(as_json, output, produce, advisories_ok, "--report")


@app.command()
def suite(
    root: Annotated[Optional[Path], typer.Argument(
        help="Folder of problems: ROOT/<problem>/baseline.py (or reference.py) with candidate .py files beside it.")] = None,
    manifest: Annotated[Optional[Path], typer.Option(
        "--manifest", help="A TOML manifest instead of a tree: [[problem]] tables with reference, candidates, and "
        "optional set (the op-point), class and weights; paths relative to the manifest.")] = None,
    candidates: Annotated[Optional[list[Path]], typer.Option(
        "--candidates", help="KernelBench's layout: ROOT is a folder of reference modules, and this a folder of "
        "candidates named as their references (repeatable: one row per folder per reference).")] = None,
    results: Annotated[Path, typer.Option(
        "--results", help="Folder for each finished row and its verify receipt; a re-run skips the rows already "
        "in it (keyed by both files' contents, the op-point, the terms and kgate's version).")] = Path("kgate-suite-results"),
    klass: Annotated[str, typer.Option("--class", help="Intervention class of a tree's candidates (a manifest sets "
                                       "its own): kernel-authored | xla-rewrite (or rewrite) | flag.")] = "kernel-authored",
    budget: BudgetOpt = 10.0,
    phase_budget: PhaseBudgetOpt = PHASE_BUDGET_S,
    time_interpreted: TimeInterpretedOpt = False,
    executor: Annotated[str, typer.Option(
        "--executor", help="Where rows run: local (this host; --jobs at once) or ray (a Ray cluster: each row's gate "
        "a CPU task, its verify a task on one chip; needs `pip install 'kgate[ray]'`).")] = "local",
    jobs: Annotated[Optional[int], typer.Option(
        "--jobs", help="local: rows at once, each in a worker process of its own, pinned to one chip where the host "
        "has chips (default: one per chip; on a CPU-only host half the cores, at least 1); timing takes the chip's "
        "lock, one row at a time per chip.")] = None,
    address: Annotated[Optional[str], typer.Option(
        "--address", help="ray: the cluster's address (e.g. 10.0.0.1:6379, or auto); default: start a local "
        "cluster for this suite.")] = None,
    retries: Annotated[int, typer.Option(
        "--retries", help="ray: how often a task whose worker was lost is run again (never a task that returned, "
        "FAIL or not).")] = 2,
    timeout: Annotated[Optional[float], typer.Option(
        "--timeout", help="The longest one row may take, its gate and verify together (seconds; default: no limit "
        "beyond --phase-budget per phase): past it the row is stopped with every process it started, shown as an "
        "ERROR and not kept, so a re-run runs it again.", parser=finite)] = None,
    compile_slots: Annotated[Optional[int], typer.Option(
        "--compile-slots", help="Compiles at once on a host, across every row and leg (default: "
        "$KGATE_COMPILE_SLOTS, else 2).")] = None,
    html: Annotated[Optional[Path], typer.Option(
        "--html", help="Also write a self-contained HTML page: the summary, each timed candidate's speedup with its "
        "interval, the fast_p curve, and every row.")] = None,
    mode: Annotated[str, typer.Option(
        "--mode", help="verify's mode for a candidate whose gate passed: screen (parity, firing, one timing) or full "
        "(adds the cold-process orderings, the reproduction check and a profiler capture, kept in "
        "--results/<key>.artifacts); part of each row's key.")] = "screen",
    fast_p: Annotated[str, typer.Option(
        "--fast-p", metavar="P,P,...", help="The speedups p that fast_p is counted at: a candidate counts when it "
        "is correct and the lower end of its interval exceeds p.")] = "1.0,1.5,2.0",
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Run many problems and candidates: each candidate gated, what passes verified (screen, or --mode full).

    Each candidate runs in processes of its own (a crash, or a hang past --phase-budget, is
    that candidate's row). Rows are written to --results as each finishes, so an
    interrupted suite re-run picks up where it stopped. The summary is honest: fast_p counts
    a candidate only when it is correct and the lower end of its speedup interval exceeds p;
    the geometric mean covers correct candidates timed on a device clock, with a bootstrap
    interval over problems; interpreted timings never count.
    """
    from kgate.gates.firing import parse_classes
    from kgate.jsonio import document
    from kgate.report import write_atomic
    from kgate.report.suite import render_suite, to_html
    from kgate.suite import discover, parse_fast_p, summarize
    from kgate.suite.executors import RayExecutor, local
    from kgate.suite.run import SuiteRequest, check_mode, run_suite
    from kgate.verify.lock import COMPILE_SLOTS_ENV, compile_slots as slots_here

    try:
        ps = parse_fast_p(fast_p)
        check_output_path(output)
        check_output_path(html, "--html")
        if output is not None and html is not None and output.resolve() == html.resolve():
            raise KgateError(f"-o and --html name the same file {output}.", "give the JSON (-o) and the page (--html) "
                             "two paths.")
        check_mode(mode)
        if root is None and manifest is None:
            raise KgateError("no suite given.", "pass the suite's folder (kgate suite ROOT) or --manifest FILE.")
        if executor not in ("local", "ray"):
            raise KgateError(f"--executor {executor!r} is not an executor.", "use --executor local or --executor ray.")
        if executor == "local" and address is not None:
            raise KgateError("--address names a Ray cluster, and this suite runs locally.",
                             "add --executor ray, or drop --address.")
        if executor == "ray" and jobs is not None:
            raise KgateError("--jobs sizes the local pool; on Ray the cluster's resources decide.",
                             "drop --jobs, or run with --executor local.")
        if compile_slots is not None:
            if not 1 <= compile_slots <= 64:
                raise KgateError(f"--compile-slots {compile_slots} is not a number of compile slots from 1 to 64.",
                                 "use e.g. --compile-slots 2.")
            os.environ[COMPILE_SLOTS_ENV] = str(compile_slots)  # every row's legs, and their workers, inherit it
        slots_here()  # a bad $KGATE_COMPILE_SLOTS is refused before any row runs
        entries = discover(root or Path("."), manifest, parse_classes(klass), tuple(candidates or ()))
        request = SuiteRequest(tuple(entries), results, budget_s=budget, phase_budget_s=phase_budget,
                               time_interpreted=time_interpreted, mode=mode)
        runner = (RayExecutor(address, retries, timeout) if executor == "ray"
                  else local(jobs, timeout))
        rows = run_suite(request, say=lambda line: typer.echo(f"kgate suite: {line}", err=True), executor=runner)
    except KgateError as exc:
        fail_usage(exc, as_json)
    except KeyboardInterrupt:
        fail_usage(KgateError(f"interrupted: the rows that finished are in {results}; the one running was not kept.",
                              "run the same command again: it skips the finished rows."), as_json)
    summary = summarize(rows, ps)
    payload = document({"schema": 1, "kgate_version": __version__, "command": "suite", "status": "DONE", "exit_code": 0,
                        "results": str(results), "rows": [r.to_json() for r in rows], "summary": summary.to_json()},
                       "suite")
    if output is not None:
        write_atomic(output, payload + "\n")
    if html is not None:
        write_atomic(html, to_html(rows, summary))
        typer.echo(f"kgate suite: wrote {html}", err=True)
    if as_json:
        print(payload)
    else:
        render_suite(rows, summary, Console(width=None if sys.stdout.isatty() else 140))


@app.command("verify-receipt")
def verify_receipt(
    receipt: Annotated[Path, typer.Argument(help="A receipt written by kgate verify.")],
    no_regenerate: Annotated[
        bool, typer.Option("--no-regenerate", help="Do not regenerate the inputs to compare their hashes.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check a receipt: OK, TAMPERED, MISMATCH, INCOMPLETE, ANOMALY or UNVERIFIABLE (exit 0 only on OK).

    Recomputes the self-hash, re-derives every status from the recorded numbers (a
    re-hashed forgery with inconsistent numbers is still TAMPERED), checks the module
    sources' sha256 and, when the modules are present, regenerates the inputs and
    compares their hashes. ANOMALY: the receipt is intact, but in its run candidate code
    patched kgate, the array library or the reference, so nothing it reports holds.
    """
    from kgate.jsonio import document
    from kgate.verify.check_receipt import check

    try:
        result = check(receipt, regenerate=not no_regenerate)
    except KgateError as exc:
        fail_usage(exc, as_json)
    if as_json:
        print(document(result.to_json(), "verify-receipt"))
    else:
        console = Console()
        style = "green" if result.status == "OK" else "bold red"
        console.print(f"kgate verify-receipt: [{style}]{result.status}[/]  {receipt}")
        for key, value in result.checked.items():
            console.print(f"  checked {key}: {'yes' if value else 'no'}")
        for finding in result.findings:
            console.print(f"  - {finding}", soft_wrap=True)
    raise typer.Exit(result.exit_code)


@app.command()
def compare(
    receipt_a: Annotated[Path, typer.Argument(help="Receipt A (or a verify report, followed to its receipt).")],
    receipt_b: Annotated[Path, typer.Argument(help="Receipt B, of the same problem.")],
    as_json: JsonOpt = False,
    advisories_ok: AdvisoriesOkOpt = False,
) -> None:
    """Compare two candidates' receipts of the same problem: which is faster, with an interval.

    The ratio A's speedup / B's speedup, each co-measured within its own run, with a 95%
    interval over the runs' sessions; "not distinguishable" when it includes 1. Per-leg p50s
    with intervals; the reference legs compared as a check that the machines agreed.
    Refused (exit 2, nothing compared) unless both receipts verify on their numbers and share
    the reference, op-point, dtype, inputs and device kind.
    """
    from kgate.jsonio import document
    from kgate.verify.compare import compare as compare_receipts

    try:
        result = compare_receipts(receipt_a, receipt_b)
    except KgateError as exc:
        fail_usage(exc, as_json)
    code = 0 if advisories_ok else result.exit_code
    if as_json:
        print(document({**result.to_json(), "exit_code": code}, "compare"))
        raise typer.Exit(code)
    console = Console()
    data = result.to_json()
    problem = data["problem"]
    values = (problem["op_point"] or {}).get("values", problem["op_point"]) or {}
    at = " ".join(f"{k}={v}" for k, v in values.items()) if isinstance(values, dict) else str(values)
    device = problem["device"]
    on = " ".join(dict.fromkeys(str(device.get(k, "?")) for k in ("platform", "kind")))  # "cpu", or "gpu NVIDIA H200"
    console.print(f"kgate compare: {problem['reference']} at {at or 'its CONFIG'} on {on}", soft_wrap=True, markup=False)
    for label in ("a", "b"):
        side = data[label]
        sp = side["speedup"]
        ref, cand = side["reference_p50_ms"], side["candidate_p50_ms"]
        console.print(f"  {label.upper()}: {side['candidate']}  speedup {sp['estimate']:.3f}x [{sp['low']:.3f}, "
                      f"{sp['high']:.3f}]  reference p50 {ref['estimate']:.4g} ms [{ref['low']:.4g}, {ref['high']:.4g}]"
                      f"  candidate p50 {cand['estimate']:.4g} ms [{cand['low']:.4g}, {cand['high']:.4g}]  "
                      f"({side['sessions']} sessions)", soft_wrap=True, markup=False)
        if side.get("note"):
            console.print(f"     ({side['note']})", soft_wrap=True, markup=False)
    console.print(f"  {result.verdict}", style="bold green" if result.faster else "yellow", soft_wrap=True, markup=False)
    for advisory in result.advisories:
        console.print(f"  advisory: {advisory}", soft_wrap=True, markup=False)
    raise typer.Exit(code)


@app.command()
def gotcha(
    source: Annotated[Optional[str], typer.Argument(help="A log or traceback file, or - for stdin.")] = None,
    list_all: Annotated[bool, typer.Option("--list", help="List every row of the gotcha table.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Match a compile error, log or traceback against the gotcha table: the row, what it means, the fix.

    The table (src/kgate/gotchas/*.toml) holds the errors kernel authors meet most, each
    reproduced by a tiny kernel against the real message of the installed jax. Every row
    whose pattern is in the text is printed, the first (most specific) one first.
    """
    from kgate import gotchas
    from kgate.jsonio import document

    try:
        if list_all == (source is not None):
            raise KgateError("pass a log file (or - for stdin), or --list.", "e.g. `kgate gotcha build.log`, "
                             "`python kernel.py 2>&1 | kgate gotcha -`, or `kgate gotcha --list`.")
        if list_all:
            found = list(gotchas.table())
        else:
            if source == "-":
                text = sys.stdin.read()
            else:
                path = Path(str(source))
                if not path.is_file():
                    raise KgateError(f"{path} does not exist.", "pass the file holding the error (or - for stdin).")
                text = path.read_text(errors="replace")
            found = gotchas.matches(text)
    except KgateError as exc:
        fail_usage(exc, as_json)
    code = 0 if found else 1
    if as_json:
        print(document({"command": "gotcha", "status": "MATCHED" if found else "NO_MATCH", "exit_code": code,
                        "matches": [row.to_json() for row in found],
                        **({} if found else {"ask": gotchas.NEW_ROW})}, "gotcha"))
        raise typer.Exit(code)
    console = Console()
    if not found:
        console.print(f"kgate gotcha: {gotchas.NEW_ROW}.", soft_wrap=True)
    for row in found:
        console.print(f"{row.id} ({row.platform}, {row.where}; seen on {row.seen_on})", soft_wrap=True,
                      highlight=False, markup=False, style="bold")
        console.print(f"  means: {row.means}", soft_wrap=True, highlight=False, markup=False)
        console.print(f"  fix:   {row.fix}", soft_wrap=True, highlight=False, markup=False)
        if list_all:
            console.print(f"  pattern: {row.pattern.pattern}", soft_wrap=True, highlight=False, markup=False)
    raise typer.Exit(code)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def lock(
    ctx: typer.Context,
    chip: Annotated[int, typer.Argument(help="Chip index; the lock file is <lock-dir>/kgate-chip-<chip>.lock.")],
    lock_dir: Annotated[
        Optional[Path], typer.Option("--lock-dir", help="Folder of the lock files (default $KGATE_LOCK_DIR or /tmp).")
    ] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Send the command's stdout to stderr and print only one JSON document on stdout: its exit "
                       "code, the lock, the seconds waited and held (schemas/lock-v1).")] = False,
) -> None:
    """Run a command while holding the chip's lock: `kgate lock 0 -- python bench.py`.

    The lock is an exclusive flock, compatible with the flock command. A waiting run says
    whom it waits for. The command sees only that chip (CUDA_VISIBLE_DEVICES,
    TPU_VISIBLE_CHIPS). Exits with the command's exit code (128+N when a signal N ended it);
    2 when no command is given or it cannot be started. kgate's own options go before --.
    """
    import os
    import signal
    import subprocess
    import time

    from kgate.verify.lock import hold, lock_path, visibility_env

    command = list(ctx.args)
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        if not command:
            raise KgateError("no command given to run under the lock.", "write it after --, e.g. kgate lock 0 -- sleep 2.")
        path = lock_path(chip, lock_dir)
    except KgateError as exc:
        fail_usage(exc, as_json)
    err = Console(stderr=True)
    with hold(path, say=lambda m: err.print(f"kgate lock: {m}", soft_wrap=True), what=" ".join(command)) as waited:
        started = time.monotonic()
        try:  # under --json the command's stdout joins kgate's stderr: stdout holds one document
            code = subprocess.call(command, env={**os.environ, **visibility_env(chip)},
                                   stdout=sys.stderr.fileno() if as_json else None)
        except OSError as exc:  # not found, not executable
            fail_usage(KgateError(f"command {command[0]!r} cannot be started ({exc.strerror or exc}).",
                                  "check the command after --."), as_json)
        held = time.monotonic() - started
    ended_by = None
    if code < 0:  # a signal ended it: the shell's convention, never a negative exit status
        try:
            ended_by = signal.Signals(-code).name
        except ValueError:
            ended_by = f"signal {-code}"
        code = 128 - code
    if as_json:
        from kgate.jsonio import document

        print(document({"status": "OK" if code == 0 else "COMMAND_FAILED", "exit_code": code, "command": command,
                        "chip": chip, "lock": str(path), "waited_s": round(waited, 3), "held_s": round(held, 3),
                        **({"signal": ended_by} if ended_by else {})}, "lock"))
    raise typer.Exit(code)
