"""The app and what every command shares: option definitions, error and report output."""

from __future__ import annotations

import inspect
import io
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional, TextIO

import typer
from rich.console import Console

from kgate.errors import KgateError

def _flags_take_no_value() -> None:
    """Typer 0.2x shows `<bool>` beside every flag (`--json`, `--help`), which reads as if the
    flag took a value (`--json true` is then refused). A flag's row shows no type."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_kgate", False):
        return

    def display_type_rich(self, ctx):  # type: ignore[no-untyped-def]
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich._kgate = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_take_no_value()

def finite(text: str) -> float:
    """A number option's value; nan and inf are bad usage (exit 2, naming the option), not a
    failure deep inside a run."""
    try:
        number = float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number.") from None
    if not math.isfinite(number):
        raise typer.BadParameter(f"{text!r} is not a finite number.")
    return number

app = typer.Typer(
    name="kgate",
    help="Make kernel-optimization claims trustworthy: parity, firing audit, honest timing, experiment records, verdicts.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)

# Shared option definitions: every command that loads a problem takes the same ones.
ReferenceOpt = Annotated[
    Path,
    typer.Option("--reference", "--baseline", "-r", help="Reference problem module (CONFIG, create_inputs, workload; or the Model protocol)."),
]
CandidateOpt = Annotated[Path, typer.Option("--candidate", "-c", help="Candidate module that replaces the reference.")]
# With --family, the reference and the candidate come from the family's registration.
FamilyReferenceOpt = Annotated[
    Optional[Path],
    typer.Option("--reference", "--baseline", "-r", help="Reference problem module (CONFIG, create_inputs, workload; or the Model protocol); "
                 "with --family: the family's pinned one."),
]
FamilyCandidateOpt = Annotated[
    Optional[Path],
    typer.Option("--candidate", "-c", help="Candidate module that replaces the reference; with --family: default the "
                 "family's target in its worktree."),
]
def _complete_family(incomplete: str) -> list[str]:
    from kgate.record.terms import families_around

    return sorted({slug for slug, _ in families_around(Path.cwd()) if slug.startswith(incomplete)})


FamilyOpt = Annotated[
    Optional[str],
    typer.Option("--family", autocompletion=_complete_family,
                 help="Take the registered terms of this family and its open experiment (reference, target, op-point, "
                 "graded dtype, parity spec, class, bar); a flag that contradicts one is refused. Inside a family's "
                 "folder or worktree, with neither --reference nor --candidate, that family is taken."),
]
EntryOpt = Annotated[str, typer.Option("--entry", help="Name of the candidate's entry function.")]
PHASE_BUDGET_S = 300.0  # kgate.verify.early.PHASE_BUDGET_S, without importing the verify layer at start-up
PhaseBudgetOpt = Annotated[float, typer.Option(
    "--phase-budget", metavar="SECONDS",
    help="Longest a leg may spend in one phase (importing, making inputs, tracing, compiling, running); past it the "
         "leg is stopped and the report names the phase and its likely cause.", parser=finite)]
RefEntryOpt = Annotated[str, typer.Option(
    "--reference-entry", help="Name of the reference's entry function (a suite's reference may not call it workload).")]
def _canonical_class(value: str | None) -> str | None:
    from kgate.gates.firing import canonical_class

    return canonical_class(value)


ClassOpt = Annotated[
    str, typer.Option("--class", callback=_canonical_class,
                      help="Intervention class: kernel-authored | xla-rewrite (or rewrite: plain framework code, torch "
                           "or JAX) | flag.")
]
OptionalClassOpt = Annotated[
    Optional[str],
    typer.Option("--class", callback=_canonical_class,
                 help="Intervention class: kernel-authored | xla-rewrite (or rewrite) | flag (default kernel-authored, "
                 "or the experiment's with --family)."),
]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", help="Op-point override KEY=VALUE applied to CONFIG before inputs are made (repeatable)."),
]
KwargOpt = Annotated[
    Optional[list[str]],
    typer.Option("--kwarg", metavar="NAME=VALUE",
                 help="A keyword argument the candidate's entry is called with, e.g. --kwarg block_rows=16 (a Python "
                 "literal; repeatable): one point of a sweep, checked alone."),
]
WeightsOpt = Annotated[
    Optional[str],
    typer.Option("--weights", metavar="shared|random[:SEED]",
                 help="A Model-protocol reference's weights: shared (as its __init__ builds them) or random (every "
                 "floating weight replaced by seeded random values of its shape: for modules whose shipped weights "
                 "make the output constant); the candidate is given the same ones. Default shared, or the family's."),
]
BackendOpt = Annotated[
    str,
    typer.Option("--backend", metavar="auto|jax|torch",
                 help="The framework the problem runs with: auto (from what the reference module imports: torch or "
                 "triton and not jax means torch), or jax or torch to force it (a module that imports both, or its "
                 "framework only through a helper)."),
]
SeedOpt = Annotated[Optional[list[int]], typer.Option("--seed", help="Probe seed (repeatable). Default: 42 and 43.")]
DtypeOpt = Annotated[
    Optional[str], typer.Option("--dtype", help="Graded dtype passed to create_inputs(dtype=...), e.g. bfloat16.")
]
ParityOpt = Annotated[
    str, typer.Option("--parity", help="Parity spec: floor | floor:MULT | atol=A,rtol=R | bitexact.")
]
OptionalParityOpt = Annotated[
    Optional[str],
    typer.Option("--parity", help="Parity spec: floor | floor:MULT | atol=A,rtol=R | bitexact (default floor, or the "
                 "experiment's with --family)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only the JSON report on stdout.")]
AdvisoriesOkOpt = Annotated[
    bool,
    typer.Option(
        "--advisories-ok",
        help="Exit 0, not 1, on a pass with advisories (interpreted or noisy timings): for CI jobs. "
        "The advisories are still printed and kept in the JSON.",
    ),
]
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
KernelShareOpt = Annotated[
    Optional[float],
    typer.Option(
        "--kernel-share",
        help="Declare that the kernels compute at least this share (0-1] of the output elements, the rest "
        "on purpose elsewhere; without it, any output element the kernels do not move FAILs firing.", parser=finite,
    ),
]
LowerForOpt = Annotated[
    str,
    typer.Option(
        "--lower-for",
        metavar="auto|tpu|cuda|none",
        help="Kernel-authored: lower the workload for this device platform from abstract shapes, at TINY and "
        "at the op-point, on any machine (the lowering gate). auto: the platform the kernels are written for.",
    ),
]
ChipKindOpt = Annotated[
    Optional[str],
    typer.Option(
        "--chip-kind",
        metavar="v4|v5e|v5p|v6e|7x|...",
        help="The TPU the lowering gate compares each kernel's VMEM estimate with (its VMEM per core, from jax's "
        "own table): a generation (v5e) or a device kind ('TPU v5 lite'); default: the family's TPU variant, "
        "this machine's TPU, else only the kernel's own vmem_limit_bytes.",
    ),
]
ForbidShapeOpt = Annotated[
    Optional[list[str]], typer.Option("--forbid-shape", help="HLO shape that must never be materialized, e.g. f32[8,128,128].")
]


# What each command's exit code means, shown at the end of its --help (see `exit_codes_in_help`).
_CHECK_CODES = (
    "Exit codes: 0 PASS; 1 PASS with advisories (0 with --advisories-ok); 2 FAIL, ANOMALY, bad input, "
    "interrupted, or could not evaluate."
)
_RECORD_CODES = "Exit codes: 0 done; 2 bad input, refused, interrupted or could not finish (nothing was written)."
EXIT_CODES = {
    "gate": _CHECK_CODES,
    "lower": _CHECK_CODES + " Nothing lowered (a platform this machine cannot lower for) is a FAIL.",
    "fit": _CHECK_CODES + " A point that does not fit is an advisory (exit 1); no point fitting is a FAIL.",
    "sweep": _CHECK_CODES + " A point that fails, and a best point not told apart from the runner-up, are "
    "advisories (exit 1); no point passing is a FAIL; a point that is an ANOMALY makes the sweep one. With "
    "--record, 2 also when the records refuse (before any point runs, or a commit part-way: the report says which "
    "points were committed).",
    "parity": _CHECK_CODES,
    "measure": _CHECK_CODES + " A bar that is not MET is a FAIL.",
    "flags": _CHECK_CODES + " A flag that speeds the reference is an advisory (cite the number with the flag on "
    "both legs); a process that fails its own checks is a FAIL, one that tampers an ANOMALY.",
    "calibrate": _CHECK_CODES + " A biased rig (the A/A interval excludes 1.0) is a FAIL.",
    "verify": _CHECK_CODES + " The receipt is written whatever the status, never on exit 2 for bad input.",
    "suite": "Exit codes: 0 the suite ran to the end (read each row's status and the summary: a failing candidate is "
    "a row, not an error); 2 bad input (no problems found, a bad manifest) or interrupted (the rows finished so far "
    "are kept in --results).",
    "verify-receipt": "Exit codes: 0 OK; 2 TAMPERED, MISMATCH, INCOMPLETE, ANOMALY, UNVERIFIABLE, bad input, or could not evaluate.",
    "compare": "Exit codes: 0 compared (read which is faster in the output); 1 compared with an advisory (0 with "
    "--advisories-ok); 2 refused (a receipt that does not verify, different problems, op-points, inputs or devices) "
    "or bad input.",
    "gotcha": "Exit codes: 0 a row matched (or --list); 1 no row matched (say so, and add a row); 2 bad input.",
    "lock": "Exit codes: the command's own exit code; 2 when the lock or the command could not be taken or started.",
    "status": "Exit codes: 0 the stages were read (a blocked experiment is said in the output, with what blocks it); "
    "2 bad input (a family that does not exist) or unreadable records.",
    "brief": "Exit codes: 0 every item of the checklist is present; 2 items are missing (each named), or bad input.",
    "lint": "Exit codes: 0 CLEAN; 1 advisories only (0 with --advisories-ok); 2 findings that cap or invalidate "
    "the verdict, or bad input.",
    "verdict": "Exit codes: 0 filed (whatever the verdict: read it in the output); 2 bad input or refused (nothing "
    "was filed, no branch moved).",
}


_ITEM = re.compile(r"(?:[-*•]|\d+[.)])\s")


def reflow(doc: str) -> str:
    """A docstring as --help shows it at any width: each paragraph one line (the terminal wraps
    it), a list item (`- `, `* `, `1. `) starting its own line, its indented continuation joined."""
    paragraphs = []
    for paragraph in doc.split("\n\n"):
        lines: list[str] = []
        for raw in paragraph.splitlines():
            line = raw.strip()
            if lines and line and not _ITEM.match(line):
                lines[-1] += " " + line
            elif line:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(p for p in paragraphs if p)


def exit_codes_in_help(typer_app: typer.Typer) -> None:
    """Give every command (sub-commands included) the exit-code line of its --help, and each
    group (`kgate`, `kgate family`) the convention with a pointer to its commands' own."""
    if _unset(typer_app.info.epilog):
        typer_app.info.epilog = ("Exit codes: 0 pass, 1 pass with advisories, 2 fail, anomaly, bad input or could not "
                                 "evaluate; each command's --help lists the ones it returns.")
    for info in typer_app.registered_commands:
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if info.epilog is None:
            info.epilog = EXIT_CODES.get(name, _RECORD_CODES)
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = reflow(inspect.getdoc(info.callback) or "")
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            exit_codes_in_help(group.typer_instance)
            if _unset(group.epilog):  # the group's own entry shows its help
                group.epilog = group.typer_instance.info.epilog


def _unset(value: Any) -> bool:
    """Whether a typer setting was never given (None, or typer's placeholder holding None)."""
    return getattr(value, "value", value) is None


def fail_usage(exc: KgateError, as_json: bool) -> None:
    from kgate.jsonio import document
    from kgate.report import render_error

    if as_json:
        print(document({"status": "ERROR", "exit_code": 2, "error": exc.to_json()}, "error"))
    else:
        render_error(exc.problem, exc.fix, Console(stderr=True))
    raise typer.Exit(2)


def done(as_json: bool, command: str, text: str, **fields: Any) -> None:
    """The end of a command that acts (writes a file, makes a commit): its one line for a person,
    or under --json one `record` document, `{"status": "DONE", "exit_code": 0, "command": ...}`
    with what it made (`fields`)."""
    if as_json:
        from kgate.jsonio import document

        print(document({"status": "DONE", "exit_code": 0, "command": command, **fields}, "record"))
    else:
        Console().print(text, markup=False, soft_wrap=True)


def check_output_path(path: Path | None, option: str = "-o") -> None:
    """Refuse, before anything runs, a file that could not be written at the end: its folder
    missing or not writable, or a folder at its path (probed by making and removing a file
    there: permissions alone say nothing to root, or of a read-only mount)."""
    if path is None:
        return
    if not path.parent.is_dir():
        raise KgateError(f"the folder of {option} {path} does not exist.", "create it first or choose another path.")
    if path.is_dir():
        raise KgateError(f"{option} {path} is a folder.", f"name a file, e.g. {option} {path / 'report.json'}.")
    try:
        probe = tempfile.NamedTemporaryFile(dir=path.parent, prefix=".kgate-probe-")
        probe.close()
    except OSError as exc:
        raise KgateError(f"{option} {path} cannot be written: its folder refuses new files ({exc.strerror}).",
                         "choose a path in a folder you can write.") from exc


class ClosedPipeSafe(io.TextIOBase):
    """This process's stdout, for which a reader that went away (`kgate ... | head -1`, `| true`)
    is not an error: what is left goes to /dev/null and the command finishes, so its exit code is
    still its verdict's (click would turn the broken pipe into exit 1: "pass with advisories")."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            silence_stdout()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            silence_stdout()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors


def silence_stdout() -> None:
    """After the reader of stdout went away (`kgate ... | head -1`): send what is left to
    /dev/null, so neither a later print nor the interpreter's final flush fails."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run_report(
    as_json: bool, output: Path | None, produce: Callable[[], object], advisories_ok: bool = False,
    output_option: str = "-o",
) -> None:
    """The shape of every command: validate -o, produce a report, render it, exit."""
    import dataclasses

    try:
        check_output_path(output, output_option)
        report = produce()
    except KgateError as exc:
        fail_usage(exc, as_json)
    if advisories_ok:
        report = dataclasses.replace(report, advisories_ok=True)  # type: ignore[type-var]
    emit(report, as_json, output)


def emit(report: object, as_json: bool, output: Path | None) -> None:
    from kgate.jsonio import document
    from kgate.report import render_report, write_atomic

    payload = document(report.to_json(), "report")  # type: ignore[attr-defined]
    if output is not None:
        write_atomic(output, payload + "\n")
    try:
        if as_json:
            print(payload)
        else:
            console = Console(width=None if sys.stdout.isatty() else 120)
            console.on_broken_pipe = silence_stdout  # type: ignore[method-assign]  (rich would exit 1)
            render_report(report, console)  # type: ignore[arg-type]
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped reading: the verdict still sets the exit code
        silence_stdout()
    raise typer.Exit(report.exit_code)  # type: ignore[attr-defined]


def problem_request(
    reference: Path,
    candidate: Path,
    entry: str,
    klass: str,
    overrides: dict[str, Any],
    seeds: list[int] | None,
    dtype: str | None,
    parity_spec: str,
    expect_hlo: list[str] | None = None,
    forbid_hlo: list[str] | None = None,
    kernel_calls: int | None = None,
    forbid_shape: list[str] | None = None,
    kernel_share: float | None = None,
    reference_entry: str = "workload",
    phase_budget: float = PHASE_BUDGET_S,
    lower_for: str = "auto",
    chip_kind: str | None = None,
    kwargs: list[str] | None = None,
    weights: str = "shared",
    registered: dict[str, Any] | None = None,
    backend: str = "auto",
):  # -> CheckRequest
    from kgate.gates.parity import ParitySpec
    from kgate.problem.model import parse_weights
    from kgate.problem.module import parse_kwargs
    from kgate.verify import CheckRequest

    return CheckRequest(
        reference=reference,
        candidate=candidate,
        entry=entry,
        reference_entry=reference_entry,
        phase_budget_s=phase_budget,
        klass=klass,
        seeds=tuple(seeds) if seeds else (42, 43),
        dtype=dtype,
        overrides=dict(overrides),
        registered=dict(registered or {}),
        parity_spec=ParitySpec.parse(parity_spec),
        firing_spec=firing_spec(expect_hlo, forbid_hlo, kernel_calls, forbid_shape, kernel_share, lower_for, chip_kind),
        kwargs=parse_kwargs(kwargs or []),
        weights=parse_weights(weights),
        backend=checked_backend(backend),
    )


def typed_backend(backend: str) -> str | None:
    """`--backend` as typed, for a family's terms: None for auto (not given: the family's applies)."""
    return None if backend == "auto" else backend


def checked_backend(backend: str) -> str | None:
    """`--backend` as a request holds it: None for auto; a name kgate does not have is refused."""
    from kgate.backends import BACKENDS

    if backend == "auto":
        return None
    if backend not in BACKENDS:
        raise KgateError(f"--backend {backend!r} is not one kgate has.", f"use auto or one of: {', '.join(BACKENDS)}.")
    return backend


def firing_spec(
    expect_hlo: list[str] | None,
    forbid_hlo: list[str] | None,
    kernel_calls: int | None,
    forbid_shape: list[str] | None,
    kernel_share: float | None = None,
    lower_for: str = "auto",
    chip_kind: str | None = None,
):  # -> FiringSpec
    from kgate.gates.firing import FiringSpec

    return FiringSpec(
        expect_hlo=tuple(expect_hlo or ()),
        forbid_hlo=tuple(forbid_hlo or ()),
        kernel_calls=kernel_calls,
        forbid_shapes=tuple(forbid_shape or ()),
        kernel_share=kernel_share,
        lower_for=lower_for,
        chip_kind=chip_kind,
    )


_DEFAULTS = {"klass": "kernel-authored", "parity": "floor", "weights": "shared", "backend": "auto"}


def at_tiny(got: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """For a command that runs at TINY (gate, lower, sweep): its `--set` and the family's
    registered op-point that TINY is applied over. A `--set` that agrees with the family's
    terms types part of that op-point again, so it does not move the TINY run."""
    registered = dict(got.get("registered") or {})
    return ({} if registered else dict(got.get("overrides") or {})), registered


def settings(family: str | None, **given: Any) -> dict[str, Any]:
    """What a checking command runs with: the flags as given, with kgate's defaults; or, with
    --family, the family's registered terms (a contradicting flag is refused)."""
    if family is None and given.get("reference") is None and given.get("candidate") is None:
        from kgate.record.terms import family_at

        family = family_at(Path.cwd())  # run inside a family's folder or worktree: its terms
    if family is None:
        if given.get("reference") is None or given.get("candidate") is None:
            missing = " and ".join(f"--{k}" for k in ("reference", "candidate") if given.get(k) is None)
            raise KgateError(f"no {missing} given.", "pass --reference R --candidate C, or --family SLUG to take the "
                             "family's registered reference and target.")
        return {k: (v if v is not None else _DEFAULTS.get(k)) for k, v in given.items()}
    from kgate.record import terms, workspace

    resolved = terms.resolve(terms.registered(workspace.find(Path.cwd()), family), **given)
    return {k: (v if v is not None else _DEFAULTS.get(k)) for k, v in {**given, **resolved}.items()}
