"""The `kgate` command line: parse, call one library function, render, exit.

Exit codes: 0 pass, 1 pass with advisory findings, 2 gate failure / anomaly / bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from collections.abc import Callable
from typing import Annotated, Optional

import typer
from rich.console import Console

from kgate import __version__
from kgate.errors import KgateError

app = typer.Typer(
    name="kgate",
    help="Make kernel-optimization claims trustworthy: parity, firing audit, honest timing, experiment records, verdicts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Shared option definitions: every command that loads a problem takes the same ones.
ReferenceOpt = Annotated[
    Path,
    typer.Option("--reference", "--baseline", "-r", help="Reference problem module (CONFIG, create_inputs, workload)."),
]
CandidateOpt = Annotated[Path, typer.Option("--candidate", "-c", help="Candidate module that replaces the reference.")]
EntryOpt = Annotated[str, typer.Option("--entry", help="Name of the candidate's entry function.")]
ClassOpt = Annotated[
    str, typer.Option("--class", help="Intervention class: kernel-authored | xla-rewrite | flag.")
]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", help="Op-point override KEY=VALUE applied to CONFIG before inputs are made (repeatable)."),
]
SeedOpt = Annotated[Optional[list[int]], typer.Option("--seed", help="Probe seed (repeatable). Default: 42 and 43.")]
DtypeOpt = Annotated[
    Optional[str], typer.Option("--dtype", help="Graded dtype passed to create_inputs(dtype=...), e.g. bfloat16.")
]
ParityOpt = Annotated[
    str, typer.Option("--parity", help="Parity spec: floor | floor:MULT | atol=A,rtol=R | bitexact.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only the JSON report on stdout.")]
OutOpt = Annotated[Optional[Path], typer.Option("-o", "--output", help="Also write the JSON report to this file.")]
ExpectHloOpt = Annotated[
    Optional[list[str]], typer.Option("--expect-hlo", help="Regex that must match the compiled program (repeatable).")
]
ForbidHloOpt = Annotated[
    Optional[list[str]], typer.Option("--forbid-hlo", help="Regex that must not match the compiled program.")
]
KernelCallsOpt = Annotated[
    Optional[int], typer.Option("--kernel-calls", help="Exact number of kernel calls expected.")
]
ForbidShapeOpt = Annotated[
    Optional[list[str]], typer.Option("--forbid-shape", help="HLO shape that must never be materialized, e.g. f32[8,128,128].")
]


def _fail_usage(exc: KgateError, as_json: bool) -> None:
    from kgate.report import dumps, render_error

    if as_json:
        print(dumps({"status": "ERROR", "exit_code": 2, "error": exc.to_json()}))
    else:
        render_error(exc.problem, exc.fix, Console(stderr=True))
    raise typer.Exit(2)


def _check_output_path(path: Path | None) -> None:
    if path is not None and not path.parent.exists():
        raise KgateError(f"the folder of -o {path} does not exist.", "create it first or choose another path.")


def _run(as_json: bool, output: Path | None, produce: Callable[[], object]) -> None:
    """The shape of every command: validate -o, produce a report, render it, exit."""
    try:
        _check_output_path(output)
        report = produce()
    except KgateError as exc:
        _fail_usage(exc, as_json)
    _emit(report, as_json, output)


def _emit(report: object, as_json: bool, output: Path | None) -> None:
    from kgate.report import dumps, render_report, write_atomic

    payload = dumps(report.to_json())  # type: ignore[attr-defined]
    if output is not None:
        write_atomic(output, payload + "\n")
    if as_json:
        print(payload)
    else:
        render_report(report, Console(width=None if sys.stdout.isatty() else 120))  # type: ignore[arg-type]
    raise typer.Exit(report.exit_code)  # type: ignore[attr-defined]


def _request(
    reference: Path,
    candidate: Path,
    entry: str,
    klass: str,
    overrides: list[str] | None,
    seeds: list[int] | None,
    dtype: str | None,
    parity_spec: str,
    expect_hlo: list[str] | None = None,
    forbid_hlo: list[str] | None = None,
    kernel_calls: int | None = None,
    forbid_shape: list[str] | None = None,
):  # -> CheckRequest
    from kgate.gates.parity import ParitySpec
    from kgate.problem import parse_overrides
    from kgate.verify import CheckRequest

    return CheckRequest(
        reference=reference,
        candidate=candidate,
        entry=entry,
        klass=klass,
        seeds=tuple(seeds) if seeds else (42, 43),
        dtype=dtype,
        overrides=parse_overrides(overrides or []),
        parity_spec=ParitySpec.parse(parity_spec),
        firing_spec=_firing_spec(expect_hlo, forbid_hlo, kernel_calls, forbid_shape),
    )


def _firing_spec(
    expect_hlo: list[str] | None, forbid_hlo: list[str] | None, kernel_calls: int | None, forbid_shape: list[str] | None
):  # -> FiringSpec
    from kgate.gates.firing import FiringSpec

    return FiringSpec(
        expect_hlo=tuple(expect_hlo or ()),
        forbid_hlo=tuple(forbid_hlo or ()),
        kernel_calls=kernel_calls,
        forbid_shapes=tuple(forbid_shape or ()),
    )


@app.command()
def gate(
    reference: ReferenceOpt,
    candidate: CandidateOpt,
    entry: EntryOpt = "workload",
    klass: ClassOpt = "kernel-authored",
    overrides: SetOpt = None,
    seed: SeedOpt = None,
    dtype: DtypeOpt = None,
    parity_spec: ParityOpt = "floor",
    expect_hlo: ExpectHloOpt = None,
    forbid_hlo: ForbidHloOpt = None,
    kernel_calls: KernelCallsOpt = None,
    forbid_shape: ForbidShapeOpt = None,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Early-kill gate: integrity + parity at the TINY op-point + firing audit, in seconds.

    Runs the candidate in interpret mode on the CPU at the module's TINY op-point (or the
    --set overrides), checks it against the reference on several seeds, and audits that
    the authored kernel is what ran. Exit 0 pass, 1 pass with advisories, 2 fail.
    """
    from kgate.verify import run_gate

    _run(as_json, output, lambda: run_gate(_request(
        reference, candidate, entry, klass, overrides, seed, dtype, parity_spec,
        expect_hlo, forbid_hlo, kernel_calls, forbid_shape,
    )))


@app.command()
def parity(
    reference: ReferenceOpt,
    candidate: CandidateOpt,
    entry: EntryOpt = "workload",
    overrides: SetOpt = None,
    seed: SeedOpt = None,
    dtype: DtypeOpt = None,
    parity_spec: ParityOpt = "floor",
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Parity gate: does the candidate compute what the reference computes?

    Multi-seed, at the module's CONFIG op-point (with --set overrides). The default spec
    compares against the reference recomputed in float32 (float64 when that floor is
    degenerate) and allows MULT x the reference's own error. Exit 0 pass, 2 fail.
    """
    from kgate.verify import run_parity

    _run(as_json, output, lambda: run_parity(
        _request(reference, candidate, entry, "kernel-authored", overrides, seed, dtype, parity_spec)
    ))


BarOpt = Annotated[
    Optional[str],
    typer.Option("--bar", help='Falsification bar, e.g. "p50 beats naive by >2% AND 3σ" or "speedup > 1.5x".'),
]
BudgetOpt = Annotated[float, typer.Option("--budget", help="Time budget in seconds for the timed rounds.")]
TargetCiOpt = Annotated[
    float, typer.Option("--target-ci", help="Stop when the speedup CI's relative width (high-low)/speedup is at most this.")
]
MinRoundsOpt = Annotated[int, typer.Option("--min-rounds", help="Rounds before the stop rule may fire.")]
MaxRoundsOpt = Annotated[int, typer.Option("--max-rounds", help="Upper bound on rounds.")]
PerRoundOpt = Annotated[int, typer.Option("--per-round", help="Interleaved pairs per round (0: sized from the warm-up).")]
SessionsOpt = Annotated[
    int, typer.Option("--sessions", help="Sessions, each with fresh compiles and input buffers; the interval carries their spread.")
]


def _progress(as_json: bool):  # -> callback or None
    if as_json or not sys.stderr.isatty():
        return None
    console = Console(stderr=True)

    def show(rounds: int, width: float) -> None:
        console.print(f"  round {rounds}: CI relative width {width:.4f}", end="\r")

    return show


@app.command()
def measure(
    reference: ReferenceOpt,
    candidate: CandidateOpt,
    entry: EntryOpt = "workload",
    overrides: SetOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the timed inputs.")] = 42,
    dtype: DtypeOpt = None,
    bar: BarOpt = None,
    budget: BudgetOpt = 20.0,
    target_ci: TargetCiOpt = 0.02,
    min_rounds: MinRoundsOpt = 10,
    max_rounds: MaxRoundsOpt = 200,
    per_round: PerRoundOpt = 0,
    sessions: SessionsOpt = 4,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Co-measure reference and candidate: interleaved, synchronized, with a 95% interval.

    Both legs are jitted by kgate and run on the same input buffers in one process, the
    candidate first (after the output's shapes are poisoned with NaN), interleaved in
    coin-flip order, in rounds until the speedup's interval is narrow enough or the
    budget is spent. Reports per-leg p50/mean/std/min/IQR, the speedup with its bootstrap
    interval, the run-to-run sigma and the minimum detectable effect; with --bar, MET /
    MISSED / UNDECIDED with the arithmetic. Interpreter timings (a kernel in interpret mode) are labelled as such.
    Exit 0: measured (and bar MET); 2: bar not MET, anomaly, or bad input.
    """
    from kgate.gates.bar import parse_bar
    from kgate.problem import parse_overrides
    from kgate.verify.measure import MeasureRequest, run_measure

    _run(as_json, output, lambda: run_measure(
        MeasureRequest(
            reference=reference,
            candidate=candidate,
            entry=entry,
            seed=seed,
            dtype=dtype,
            overrides=parse_overrides(overrides or []),
            bar=parse_bar(bar) if bar is not None else None,
            budget_s=budget,
            target_ci=target_ci,
            min_rounds=min_rounds,
            max_rounds=max_rounds,
            per_round=per_round,
            sessions=sessions,
        ),
        progress=_progress(as_json),
    ))


@app.command()
def calibrate(
    reference: ReferenceOpt,
    overrides: SetOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the timed inputs.")] = 42,
    dtype: DtypeOpt = None,
    bar: BarOpt = None,
    budget: BudgetOpt = 10.0,
    per_round: PerRoundOpt = 0,
    sessions: SessionsOpt = 4,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Measure the rig: A/A noise floor, dispatch floor, and the minimum detectable effect.

    Times the reference against a separately loaded copy of itself (the A/A interval
    must contain 1.0) and one trivial op on the same buffers (the dispatch floor), then
    says which speedups this machine can confirm for this workload: is a 2% bar (or the
    --bar you plan to register) even measurable here? Exit 0 ok, 1 advisories, 2 biased rig.
    """
    from kgate.gates.bar import parse_bar
    from kgate.problem import parse_overrides
    from kgate.verify.calibrate import CalibrateRequest, run_calibrate

    _run(as_json, output, lambda: run_calibrate(
        CalibrateRequest(
            reference=reference,
            seed=seed,
            dtype=dtype,
            overrides=parse_overrides(overrides or []),
            bar=parse_bar(bar) if bar is not None else None,
            budget_s=budget,
            per_round=per_round,
            sessions=sessions,
        ),
        progress=_progress(as_json),
    ))


@app.command()
def verify(
    reference: ReferenceOpt,
    candidate: CandidateOpt,
    mode: Annotated[str, typer.Option("--mode", help="screen, or full (adds cold orderings, reproduction, coverage, capture).")] = "screen",
    entry: EntryOpt = "workload",
    klass: ClassOpt = "kernel-authored",
    overrides: SetOpt = None,
    seed: SeedOpt = None,
    dtype: DtypeOpt = None,
    parity_spec: ParityOpt = "floor",
    bar: BarOpt = None,
    budget: BudgetOpt = 20.0,
    sessions: SessionsOpt = 4,
    expect_hlo: ExpectHloOpt = None,
    forbid_hlo: ForbidHloOpt = None,
    kernel_calls: KernelCallsOpt = None,
    forbid_shape: ForbidShapeOpt = None,
    chip: Annotated[int, typer.Option("--chip", help="Chip to run on and lock.")] = 0,
    lock_dir: Annotated[Optional[Path], typer.Option("--lock-dir", help="Folder of the chip lock files.")] = None,
    receipt: Annotated[
        Optional[Path], typer.Option("--receipt", help="Where to write the receipt (default: ./kgate-receipt-<cand>-<time>.json).")
    ] = None,
    author_claim_p50: Annotated[
        Optional[float], typer.Option("--author-claim-p50", help="full: the author's claimed candidate p50 in ms.")
    ] = None,
    spec: Annotated[
        Optional[str], typer.Option("--spec", help="full: coverage axes IN:AXIS->OUT:AXIS[,...], e.g. 0:1->0:1.")
    ] = None,
    artifacts: Annotated[
        Optional[Path], typer.Option("--artifacts", help="full: folder for the profiler capture (default: <receipt>.artifacts).")
    ] = None,
    as_json: JsonOpt = False,
    output: OutOpt = None,
) -> None:
    """Independent verification: every leg in a fresh process, one report, one receipt.

    --mode screen: integrity + multi-seed parity + firing audit at the op-point, then
    co-measured timing (+ the bar), each leg in a fresh process holding the chip lock,
    with a verifier-owned compilation cache. --mode full adds a second cold process in
    the other ordering, the reproduction check against --author-claim-p50 (over 2x apart
    is an anomaly), the coverage battery for --spec, and a profiler capture whose timing
    is discarded. The receipt (self-hashed canonical JSON) is written atomically at the
    end; `kgate verify-receipt` checks it later.
    """
    from kgate.problem import parse_overrides
    from kgate.verify import receipt as receipts
    from kgate.verify.screen import VerifyRequest, default_receipt_path, run_verify

    err = Console(stderr=True)
    spinner = err.status("kgate verify: starting") if (not as_json and err.is_terminal) else None

    def say(message: str) -> None:
        if spinner is not None:
            spinner.update(f"kgate verify: {message}")
        elif not as_json:
            err.print(f"kgate verify: {message}", soft_wrap=True)

    def produce():  # -> Report
        path = receipt or default_receipt_path(candidate)
        request = VerifyRequest(
            reference=reference,
            candidate=candidate,
            entry=entry,
            klass=klass,
            seeds=tuple(seed) if seed else (42, 43),
            dtype=dtype,
            overrides=parse_overrides(overrides or []),
            parity=parity_spec,
            firing=_firing_spec(expect_hlo, forbid_hlo, kernel_calls, forbid_shape),
            bar=bar,
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

    _run(as_json, output, produce)


@app.command("verify-receipt")
def verify_receipt(
    receipt: Annotated[Path, typer.Argument(help="A receipt written by kgate verify.")],
    no_regenerate: Annotated[
        bool, typer.Option("--no-regenerate", help="Do not regenerate the inputs to compare their hashes.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check a receipt: OK, TAMPERED, MISMATCH or INCOMPLETE (exit 0 only on OK).

    Recomputes the self-hash, re-derives every status from the recorded numbers (a
    re-hashed forgery with inconsistent numbers is still TAMPERED), checks the module
    sources' sha256 and, when the modules are present, regenerates the inputs and
    compares their hashes.
    """
    from kgate.report import dumps
    from kgate.verify.check_receipt import check

    try:
        result = check(receipt, regenerate=not no_regenerate)
    except KgateError as exc:
        _fail_usage(exc, as_json)
    if as_json:
        print(dumps(result.to_json()))
    else:
        console = Console()
        style = "green" if result.status == "OK" else "bold red"
        console.print(f"kgate verify-receipt: [{style}]{result.status}[/]  {receipt}")
        for key, value in result.checked.items():
            console.print(f"  checked {key}: {'yes' if value else 'no'}")
        for finding in result.findings:
            console.print(f"  - {finding}", soft_wrap=True)
    raise typer.Exit(result.exit_code)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def lock(
    ctx: typer.Context,
    chip: Annotated[int, typer.Argument(help="Chip index; the lock file is <lock-dir>/kgate-chip-<chip>.lock.")],
    lock_dir: Annotated[
        Optional[Path], typer.Option("--lock-dir", help="Folder of the lock files (default $KGATE_LOCK_DIR or /tmp).")
    ] = None,
) -> None:
    """Run a command while holding the chip's lock: `kgate lock 0 -- python bench.py`.

    The lock is an exclusive flock, compatible with the flock command. A waiting run says
    whom it waits for. The command sees only that chip (CUDA_VISIBLE_DEVICES,
    TPU_VISIBLE_CHIPS). Exits with the command's exit code.
    """
    import os
    import subprocess

    from kgate.verify.lock import hold, lock_path, visibility_env

    command = list(ctx.args)
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        if not command:
            raise KgateError("no command given to run under the lock.", "write it after --, e.g. kgate lock 0 -- sleep 2.")
        path = lock_path(chip, lock_dir)
    except KgateError as exc:
        _fail_usage(exc, False)
    err = Console(stderr=True)
    with hold(path, say=lambda m: err.print(f"kgate lock: {m}", soft_wrap=True), what=" ".join(command)):
        try:
            code = subprocess.call(command, env={**os.environ, **visibility_env(chip)})
        except FileNotFoundError:
            _fail_usage(KgateError(f"command {command[0]!r} not found.", "check the command after --."), False)
    raise typer.Exit(code)


family_app = typer.Typer(help="Kernel families: bindings, results and worktrees.", no_args_is_help=True)
app.add_typer(family_app, name="family")


@app.command()
def init(
    experiments: Annotated[str, typer.Option("--experiments", help="Experiments root, relative to here.")] = "kernel_experiments",
    home_repo: Annotated[str, typer.Option("--home-repo", help="The code repo families branch from.")] = ".",
    dtype: Annotated[str, typer.Option("--dtype", help="Default graded dtype for new families.")] = "bfloat16",
    parity_spec: ParityOpt = "floor",
    chip: Annotated[int, typer.Option("--chip", help="Default chip.")] = 0,
) -> None:
    """Create the workspace file kgate.toml here (experiments root, home repo, defaults)."""
    from kgate.record import workspace

    try:
        ws = workspace.init(
            Path.cwd(), experiments=experiments, home_repo=home_repo, graded_dtype=dtype, parity=parity_spec, chip=chip
        )
    except KgateError as exc:
        _fail_usage(exc, False)
    Console().print(
        f"kgate init: wrote {ws.root / workspace.FILENAME} (experiments {ws.experiments}, home repo {ws.home_repo})",
        soft_wrap=True,
    )


@family_app.command("new")
def family_new(
    slug: Annotated[str, typer.Argument(help="Family slug (lowercase-hyphenated), or a path/name to derive it from.")],
    reference: ReferenceOpt,
    target: Annotated[Path, typer.Option("--target", help="The kernel file at its real ship path in the home repo.")],
    overrides: SetOpt = None,
    parity_spec: Annotated[Optional[str], typer.Option("--parity", help="Parity spec (default: the workspace's).")] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Graded dtype (default: the workspace's).")] = None,
    branch: Annotated[
        Optional[str], typer.Option("--branch", help="Integration branch (default kernel/<slug>; created from HEAD if missing).")
    ] = None,
    work_dir: Annotated[
        Optional[Path], typer.Option("--work-dir", help="Folder candidates may change (default: the target's folder).")
    ] = None,
    derive: Annotated[bool, typer.Option("--derive", help="Derive the slug from the name given (1p_Flash_Attention -> flash-attention).")] = False,
) -> None:
    """Create a family: binding (reference pinned by sha256), RESULTS.tsv, worktree."""
    from kgate.problem import parse_overrides
    from kgate.record import family, slug as slugs, workspace

    err = Console(stderr=True)
    try:
        ws = workspace.find(Path.cwd())
        name = slugs.derive(slug) if derive else slug
        fam = family.new(
            ws,
            name,
            reference=reference,
            target=target,
            parity=parity_spec,
            graded_dtype=dtype,
            integration_branch=branch,
            op_point=parse_overrides(overrides or []),
            work_dir=work_dir,
            say=lambda m: err.print(f"kgate family new: {m}", soft_wrap=True),
        )
    except KgateError as exc:
        _fail_usage(exc, False)
    Console().print(
        f"kgate family new: {fam.slug} at {fam.folder} (reference {fam.reference} sha256 {fam.reference_sha256[:12]}..., "
        f"worktree {fam.worktree} on {fam.integration_branch})",
        soft_wrap=True,
    )


@app.command()
def stub(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    bar: Annotated[str, typer.Option("--bar", help='Falsification bar, e.g. "p50 beats naive by >2% AND 3σ".')],
    hypothesis: Annotated[str, typer.Option("--hypothesis", help="Hypothesis paragraph.")] = "",
    mechanism: Annotated[str, typer.Option("--mechanism", help="Mechanism paragraph.")] = "",
    predicted: Annotated[str, typer.Option("--predicted", help="Predicted signal paragraph.")] = "",
    criterion: Annotated[str, typer.Option("--criterion", help="Falsification criterion paragraph.")] = "",
    plan: Annotated[Optional[list[str]], typer.Option("--plan", help="'candN: <what> — predict <signal>' (repeatable).")] = None,
    from_file: Annotated[Optional[Path], typer.Option("--from-file", help="A Markdown draft with the ## sections and the plan.")] = None,
    edit: Annotated[bool, typer.Option("--edit", help="Write the draft in $EDITOR.")] = False,
    klass: ClassOpt = "kernel-authored",
    activity: Annotated[str, typer.Option("--activity", help="optimization | capability-eval.")] = "optimization",
    category: Annotated[str, typer.Option("--category", help="Free-form category.")] = "kernel",
    diagnosis: Annotated[str, typer.Option("--diagnosis", help="What profiling showed about the reference (kgate brief needs it).")] = "",
    reading: Annotated[Optional[list[str]], typer.Option("--reading", help="Required reading, one document or section (repeatable).")] = None,
    variant: Annotated[Optional[str], typer.Option("--variant", hidden=True)] = None,
) -> None:
    """Pre-register an experiment: write the stub page and commit it on kernel/<slug>-vNNN.

    The page carries the four labelled paragraphs, the bar (checked against the bar
    grammar), the parity spec, the reference and target with their hashes, the variant
    from a device query (never typed in) and the candidate plan. The commit
    `K3(<slug> vNNN): stub — <slug>` is the pre-registration.
    """
    import os
    import subprocess
    import tempfile

    from kgate.backends import get_backend
    from kgate.record import stub as stubs, workspace

    err = Console(stderr=True)
    try:
        if variant is not None:
            raise KgateError(
                f"--variant {variant!r}: the variant is read from a device query, never typed in.",
                "drop --variant; run kgate stub on the machine the experiment targets.",
            )
        ws = workspace.find(Path.cwd())
        fields: dict[str, object] = {
            "hypothesis": hypothesis, "mechanism": mechanism, "predicted": predicted, "criterion": criterion,
            "plan": tuple(plan or ()), "diagnosis": diagnosis, "reading": tuple(reading or ()),
        }
        if from_file is not None or edit:
            if from_file is not None and not from_file.is_file():
                raise KgateError(f"--from-file {from_file} does not exist.", "pass the path of a Markdown draft.")
            text = from_file.read_text() if from_file is not None else stubs.TEMPLATE
            if edit:
                with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as handle:
                    handle.write(text)
                subprocess.call([os.environ.get("EDITOR", "vi"), handle.name])
                text = Path(handle.name).read_text()
                Path(handle.name).unlink(missing_ok=True)
            fields.update({k: v for k, v in stubs.from_markdown(text).items() if v})
        request = stubs.StubRequest(
            slug=slug, bar=bar, intervention_class=klass, activity=activity, category=category,
            hypothesis=str(fields["hypothesis"]), mechanism=str(fields["mechanism"]),
            predicted=str(fields["predicted"]), criterion=str(fields["criterion"]),
            plan=tuple(fields["plan"]),  # type: ignore[arg-type]
            diagnosis=str(fields["diagnosis"]), reading=tuple(fields["reading"]),  # type: ignore[arg-type]
        )
        stubs.validate(request)
        device = get_backend("jax").device()
        page = stubs.create(ws, request, variant=f"{device.platform}:{device.kind}", say=lambda m: err.print(f"kgate stub: {m}", soft_wrap=True))
    except KgateError as exc:
        _fail_usage(exc, False)
    Console().print(f"kgate stub: wrote {page}", soft_wrap=True)


def _records_say(command: str) -> Callable[[str], None]:
    err = Console(stderr=True)
    return lambda m: err.print(f"kgate {command}: {m}", markup=False, soft_wrap=True)


@app.command()
def cand(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    candidate: Annotated[str, typer.Argument(help="Candidate id from the plan: cand1, cand2, ...")],
    what: Annotated[str, typer.Option("--what", help="What this candidate changes, in a few words.")] = "",
    receipt: Annotated[Optional[Path], typer.Option("--receipt", help="kgate report or receipt for this exact target (-o of gate/parity/measure/verify).")] = None,
    why: Annotated[str, typer.Option("--why", help="Why kept or rejected (default for a failing receipt: its failure).")] = "",
    reason: Annotated[str, typer.Option("--reason", help="Why a candidate outside the plan (an extension), or why abandoned.")] = "",
    abandon: Annotated[bool, typer.Option("--abandon", help="Record a planned candidate as not run (needs --reason).")] = False,
    klass: Annotated[Optional[str], typer.Option("--class", help="The candidate's intervention class (default: the page's).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Commit the target's current state as one candidate, with its ledger row.

    The commit `candN(<slug> vNNN): <what> — <numbers from the receipt>` holds the work
    dir's changes, the page (plan item checked off, ledger row appended) and a copy of the
    receipt. Refused, with nothing changed: a receipt for another file or reference, an id
    already recorded or not in the plan (without --reason), changes outside the work dir
    or to the reference, a detached worktree, verdict words in --what/--why.
    """
    from kgate.record import experiment, workspace
    from kgate.report import dumps

    try:
        ws = workspace.find(Path.cwd())
        out = experiment.cand(ws, experiment.CandRequest(slug, candidate, what, receipt, why, reason, abandon, klass))
    except KgateError as exc:
        _fail_usage(exc, as_json)
    if as_json:
        print(dumps({"status": "COMMITTED", "sha": out.sha, "message": out.message, "row": out.row.to_json(),
                     "committed": list(out.committed), "page": str(out.page), "notes": list(out.notes)}))
        return
    say = _records_say("cand")
    for note in out.notes:
        say(f"note: {note}")
    Console().print(f"kgate cand: committed {out.sha[:12]} {out.message}", markup=False, soft_wrap=True)


@app.command()
def ledger(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    exp: Annotated[Optional[str], typer.Option("--exp", help="Experiment vNNN (default: the worktree's current one).")] = None,
    loaded: Annotated[Optional[str], typer.Option("--loaded", help="Set the attestation: the sections read, comma-separated.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the candidate ledger (or set its `loaded: [...]` attestation line)."""
    from kgate.record import experiment, workspace
    from kgate.report import dumps
    from kgate.report.records import render_ledger

    try:
        ws = workspace.find(Path.cwd())
        if loaded is not None:
            if exp is not None:
                raise KgateError("--loaded writes the current experiment's page; --exp is for reading.", "drop --exp.")
            experiment.set_loaded(ws, slug, loaded)
            _records_say("ledger")("attestation written to the page; it is committed with the next record commit")
        ex, page = experiment.find(ws, slug, exp)
        led = experiment.resolved_ledger(ex, page.ledger, ex.branch)
    except KgateError as exc:
        _fail_usage(exc, as_json)
    if as_json:
        print(dumps({"experiment": ex.tag(), "page": str(ex.page_path), "branch": ex.branch,
                     "loaded": list(led.loaded) if led.loaded is not None else None,
                     "rows": [r.to_json() for r in led.rows]}))
        return
    render_ledger(f"{ex.tag()} ({ex.branch})", led, Console())


@app.command()
def pivot(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    transition: Annotated[str, typer.Argument(help="<from>→<to> (or <from>-><to>), e.g. xla-rewrite→kernel-authored.")],
    evidence: Annotated[str, typer.Option("--evidence", help="What showed the class cannot meet the bar.")] = "",
) -> None:
    """Record a class pivot: closes the plan as pivoted; the new class needs a new stub."""
    from kgate.record import experiment, workspace

    try:
        ws = workspace.find(Path.cwd())
        out = experiment.pivot(ws, slug, transition, evidence)
    except KgateError as exc:
        _fail_usage(exc, False)
    if out.closed:
        _records_say("pivot")(f"closed plan items not reached: {', '.join(out.closed)}")
    Console().print(f"kgate pivot: committed {out.sha[:12]} {out.message}", markup=False, soft_wrap=True)


@app.command()
def brief(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    as_json: JsonOpt = False,
) -> None:
    """The author's checklist, assembled from the records; exit 2 naming every missing item."""
    from kgate.record import experiment, workspace
    from kgate.report import dumps
    from kgate.report.records import render_brief
    from kgate.verify.lock import lock_path

    try:
        ws = workspace.find(Path.cwd())
        out = experiment.brief(ws, slug, lock_path)
    except KgateError as exc:
        _fail_usage(exc, as_json)
    if as_json:
        print(dumps({"status": "INCOMPLETE" if out.missing else "READY", "items": out.items, "missing": list(out.missing)}))
    else:
        render_brief(slug, out.items, out.missing, Console())
        if out.missing:
            from kgate.report import render_error

            render_error(f"the brief is missing {len(out.missing)} item(s): "
                         + "; ".join(m.split(":")[0] for m in out.missing) + ".",
                         "supply each from the records as its MISSING line says; kgate does not improvise them.",
                         Console(stderr=True))
    raise typer.Exit(2 if out.missing else 0)


def _experiment_arg(ws: object, target: str | None, exp: str | None):  # -> (Experiment, Page)
    """A slug (with --exp, or the worktree's current experiment), or the path of a page."""
    from kgate.record import experiment
    from kgate.record.page import Page

    if target is not None and target.endswith(".md"):
        page = Page.load(Path(target))
        slug, number = page.front.get("slug"), page.front.get("exp")
        if not isinstance(slug, str) or not isinstance(number, str):
            raise KgateError(f"{target} has no slug/exp in its front-matter.", "pass a page written by `kgate stub`.")
        return experiment.find(ws, slug, exp or number)  # type: ignore[arg-type]
    if target is None:
        families = sorted(p.parent.name for p in ws.experiments.glob("*/family.toml"))  # type: ignore[attr-defined]
        if len(families) != 1:
            raise KgateError(f"which family? the workspace has {len(families)} ({', '.join(families) or 'none'}).",
                             "pass its slug, or the path of a page.")
        target = families[0]
    return experiment.find(ws, target, exp)  # type: ignore[arg-type]


@app.command()
def lint(
    target: Annotated[Optional[str], typer.Argument(help="A family slug, or the path of an experiment page.")] = None,
    exp: Annotated[Optional[str], typer.Option("--exp", help="Experiment vNNN (default: the worktree's current one).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check an experiment record: page, family binding, branch history, receipts.

    Each finding has a code, the evidence, the fix, and its consequence for the verdict:
    advisory, cap: inconclusive, or invalid. Exit 0 clean, 1 advisories only, 2 otherwise.
    """
    from kgate.record import lint as lints, workspace
    from kgate.report import dumps
    from kgate.report.records import render_findings

    try:
        ws = workspace.find(Path.cwd())
        ex, _ = _experiment_arg(ws, target, exp)
        findings = lints.lint(lints.gather(ws, ex))
    except KgateError as exc:
        _fail_usage(exc, as_json)
    code = lints.exit_code(findings)
    if as_json:
        print(dumps({"experiment": ex.tag(), "status": ("CLEAN", "ADVISORY", "CAPPED")[code], "exit_code": code,
                     "findings": [f.to_json() for f in findings]}))
    else:
        render_findings(ex.tag(), findings, Console())
    raise typer.Exit(code)


@app.command()
def verdict(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    exp: Annotated[str, typer.Argument(help="The experiment, vNNN.")],
    receipt: Annotated[Path, typer.Option("--receipt", help="`kgate verify --mode full` receipt of the final candidate.")],
    as_json: JsonOpt = False,
) -> None:
    """File the experiment: derive the verdict from the receipt by rules, apply lint caps.

    supported | refuted | inconclusive | invalid, never typed in. Writes the Verdict section
    (receipt numbers only, with the receipt's path and hash), flips status: filed, appends
    the RESULTS.tsv row, and commits `K7(<slug> vNNN): <verdict> — <speedup>`.
    """
    from kgate.record import filing, workspace
    from kgate.report import dumps
    from kgate.report.records import render_filing

    try:
        ws = workspace.find(Path.cwd())
        filed = filing.file_verdict(ws, slug, exp, receipt)
    except KgateError as exc:
        _fail_usage(exc, as_json)
    if as_json:
        print(dumps(filing.decision_json(filed)))
    else:
        render_filing(filed, Console())


@app.command()
def report(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    exp: Annotated[str, typer.Argument(help="The experiment, vNNN.")],
    html: Annotated[Optional[Path], typer.Option("--html", help="Also write a self-contained HTML page with plots.")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the Markdown here instead of stdout.")] = None,
) -> None:
    """The author's report: ledger, final candidate, pivots and extensions, blockers, compliance."""
    from kgate.record import lint as lints, workspace
    from kgate.report import write_atomic
    from kgate.report.author import build, to_html, to_markdown

    try:
        for path in (html, output):
            _check_output_path(path)
        ws = workspace.find(Path.cwd())
        ex, page = _experiment_arg(ws, slug, exp)
        facts = lints.gather(ws, ex)
        data = build(ex, page, facts, lints.lint(facts))
    except KgateError as exc:
        _fail_usage(exc, False)
    text = to_markdown(data)
    if output is not None:
        write_atomic(output, text)
    else:
        print(text)
    if html is not None:
        write_atomic(html, to_html(data))
        Console(stderr=True).print(f"kgate report: wrote {html}", soft_wrap=True)


@app.command()
def version() -> None:
    """Print kgate's version."""
    print(__version__)


def main() -> None:
    app(prog_name="kgate")


if __name__ == "__main__":
    main()
