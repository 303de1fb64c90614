"""The experiment-record commands: init, family new, stub, brief, cand, ledger, pivot, lint,
verdict, report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from kgate.cli.common import (
    finite,
    AdvisoriesOkOpt,
    BackendOpt,
    ClassOpt,
    JsonOpt,
    ParityOpt,
    ReferenceOpt,
    SetOpt,
    WeightsOpt,
    app,
    check_output_path,
    done,
    fail_usage,
)
from kgate.errors import KgateError

family_app = typer.Typer(help="Kernel families: bindings, results and worktrees.", no_args_is_help=True)
app.add_typer(family_app, name="family")


@app.command()
def init(
    experiments: Annotated[str, typer.Option("--experiments", help="Experiments root, relative to here.")] = "kernel_experiments",
    home_repo: Annotated[str, typer.Option("--home-repo", help="The code repo families branch from.")] = ".",
    dtype: Annotated[str, typer.Option("--dtype", help="Default graded dtype for new families.")] = "bfloat16",
    parity_spec: ParityOpt = "floor",
    chip: Annotated[int, typer.Option("--chip", help="Default chip.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Create the workspace file kgate.toml here (experiments root, home repo, defaults)."""
    from kgate.record import workspace

    try:
        ws = workspace.init(
            Path.cwd(), experiments=experiments, home_repo=home_repo, graded_dtype=dtype, parity=parity_spec, chip=chip
        )
    except KgateError as exc:
        fail_usage(exc, as_json)
    wrote = ws.root / workspace.FILENAME
    done(as_json, "init", f"kgate init: wrote {wrote} (experiments {ws.experiments}, home repo {ws.home_repo})",
         wrote=[str(wrote)], experiments=str(ws.experiments), home_repo=str(ws.home_repo))


@app.command()
def new(
    problem: Annotated[Path, typer.Argument(help="Folder for the new problem (made if missing), e.g. my_norm.")],
    template: Annotated[
        str, typer.Option("--from", help="Template: rowwise (a row reduction, bf16) or elementwise (2-D tiles, f32).")
    ] = "rowwise",
    as_json: JsonOpt = False,
) -> None:
    """Scaffold a problem: reference.py in the protocol and a Pallas candidate that passes `kgate gate`.

    The reference has CONFIG (the op-point), TINY (the gate's small op-point),
    create_inputs(seed, dtype), workload, get_flops and get_bytes; the candidate is a
    Pallas kernel with its grid and BlockSpecs, float32 inside. Edit the reference's
    workload to the operation you want to speed up, then the kernel to match.
    """
    from kgate.scaffold import TEMPLATES, new_problem

    try:
        written = new_problem(problem, template)
    except KgateError as exc:
        fail_usage(exc, as_json)
    following = f"kgate gate -r {problem / 'reference.py'} -c {problem / 'candidate.py'}"
    lines = [f"kgate new: {problem} from the {template} template ({TEMPLATES[template].what})",
             *(f"  wrote {path}" for path in written), f"next: {following}"]
    done(as_json, "new", "\n".join(lines), wrote=[str(p) for p in written], next_step=following)


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
    weights: WeightsOpt = None,
    backend: BackendOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Create a family: binding (reference pinned by sha256), RESULTS.tsv, worktree."""
    from kgate.problem import parse_overrides
    from kgate.problem.model import parse_weights
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
            weights=parse_weights(weights or "shared"),
            backend=backend,
            say=lambda m: err.print(f"kgate family new: {m}", soft_wrap=True),
        )
    except KgateError as exc:
        fail_usage(exc, as_json)
    done(as_json, "family new",
         f"kgate family new: {fam.slug} at {fam.folder} (reference {fam.reference} sha256 {fam.reference_sha256[:12]}..., "
         f"worktree {fam.worktree} on {fam.integration_branch})",
         slug=fam.slug, folder=str(fam.folder), reference=str(fam.reference), reference_sha256=fam.reference_sha256,
         worktree=str(fam.worktree), branch=fam.integration_branch)


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
    reading_budget: Annotated[Optional[float], typer.Option("--reading-budget", metavar="MINUTES", help="The knowledge-purchase budget: minutes of reading before the first candidate (`kgate lint` checks it from the commit times).", parser=finite)] = None,
    no_peek: Annotated[Optional[list[str]], typer.Option("--no-peek", help="A file, folder or module candidates must not read (repeatable): `kgate cand` and the checks run with --family refuse a candidate whose imports or source reach it.")] = None,
    variant: Annotated[Optional[str], typer.Option("--variant", hidden=True)] = None,
    as_json: JsonOpt = False,
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
            no_peek=tuple(no_peek or ()), reading_budget_min=reading_budget,
        )
        stubs.validate(request)
        device = get_backend("jax").device()
        page = stubs.create(ws, request, variant=f"{device.platform}:{device.kind}",
                            say=lambda m: err.print(f"kgate stub: {m}", soft_wrap=True, markup=False))
    except KgateError as exc:
        fail_usage(exc, as_json)
    done(as_json, "stub", f"kgate stub: wrote {page}", wrote=[str(page)])


def say_to_stderr(command: str) -> Callable[[str], None]:
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
    gotcha: Annotated[str, typer.Option("--gotcha", help="The gotcha table's row that fired on this candidate (`kgate gotcha`): recorded in the why-column.")] = "",
    escalate: Annotated[str, typer.Option("--escalate", metavar="FROM->TO", help="Climb the cost ladder (flag -> xla-rewrite -> kernel-authored): the candidate is of class TO; needs --reason and an earlier FROM candidate whose receipt missed the registered bar.")] = "",
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
    from kgate.jsonio import document

    try:
        ws = workspace.find(Path.cwd())
        out = experiment.cand(ws, experiment.CandRequest(slug, candidate, what, receipt, why, reason, abandon, klass, gotcha,
                                                                   escalate))
    except KgateError as exc:
        fail_usage(exc, as_json)
    if as_json:
        print(document({"status": "COMMITTED", "sha": out.sha, "message": out.message, "row": out.row.to_json(),
                     "committed": list(out.committed), "page": str(out.page), "notes": list(out.notes)}, "cand"))
        return
    say = say_to_stderr("cand")
    for note in out.notes:
        say(f"note: {note}")
    Console().print(f"kgate cand: committed {out.sha[:12]} {out.message}", markup=False, soft_wrap=True)


@app.command()
def lead(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    text: Annotated[str, typer.Argument(help="The idea, in a line: noticed, not pursued in this experiment.")],
    as_json: JsonOpt = False,
) -> None:
    """Record a lead: an idea noticed and not pursued, listed in the report as a seed of the next experiment.

    A line under the page's `## Leads`, committed alone as `lead(<slug> vNNN): <text>`; the
    candidate in progress is left as it is. Refused on a filed page (it is final).
    """
    from kgate.record import experiment, workspace

    try:
        sha = experiment.lead(workspace.find(Path.cwd()), slug, text)
    except KgateError as exc:
        fail_usage(exc, as_json)
    line = " ".join(text.split())
    done(as_json, "lead", f"kgate lead: committed {sha[:12]} lead: {line}", sha=sha, lead=line)


@app.command()
def ledger(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    exp: Annotated[Optional[str], typer.Option("--exp", help="Experiment vNNN (default: the worktree's current one).")] = None,
    loaded: Annotated[Optional[str], typer.Option("--loaded", help="Set the attestation: the sections read, comma-separated.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the candidate ledger (or set its `loaded: [...]` attestation line)."""
    from kgate.record import experiment, workspace
    from kgate.jsonio import document
    from kgate.report.records import render_ledger

    try:
        ws = workspace.find(Path.cwd())
        if loaded is not None:
            if exp is not None:
                raise KgateError("--loaded writes the current experiment's page; --exp is for reading.", "drop --exp.")
            experiment.set_loaded(ws, slug, loaded)
            say_to_stderr("ledger")("attestation written to the page; it is committed with the next record commit")
        ex, page = experiment.find(ws, slug, exp)
        led = experiment.resolved_ledger(ex, page.ledger, ex.branch)
    except KgateError as exc:
        fail_usage(exc, as_json)
    if as_json:
        print(document({"experiment": ex.tag(), "page": str(ex.page_path), "branch": ex.branch,
                     "loaded": list(led.loaded) if led.loaded is not None else None,
                     "rows": [r.to_json() for r in led.rows]}, "ledger"))
        return
    render_ledger(f"{ex.tag()} ({ex.branch})", led, Console())


@app.command()
def pivot(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    transition: Annotated[str, typer.Argument(help="<from>→<to> (or <from>-><to>), e.g. xla-rewrite→kernel-authored.")],
    evidence: Annotated[str, typer.Option("--evidence", help="What showed the class cannot meet the bar.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Record a class pivot: closes the plan as pivoted; the new class needs a new stub."""
    from kgate.record import experiment, workspace

    try:
        ws = workspace.find(Path.cwd())
        out = experiment.pivot(ws, slug, transition, evidence)
    except KgateError as exc:
        fail_usage(exc, as_json)
    if out.closed and not as_json:
        say_to_stderr("pivot")(f"closed plan items not reached: {', '.join(out.closed)}")
    done(as_json, "pivot", f"kgate pivot: committed {out.sha[:12]} {out.message}", sha=out.sha, message=out.message,
         closed=list(out.closed))


@app.command()
def brief(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    as_json: JsonOpt = False,
) -> None:
    """The author's checklist, assembled from the records; exit 2 naming every missing item."""
    from kgate.record import experiment, workspace
    from kgate.jsonio import document
    from kgate.report.records import render_brief
    from kgate.verify.lock import lock_path

    try:
        ws = workspace.find(Path.cwd())
        out = experiment.brief(ws, slug, lock_path)
    except KgateError as exc:
        fail_usage(exc, as_json)
    if as_json:
        print(document({"status": "INCOMPLETE" if out.missing else "READY", "items": out.items, "missing": list(out.missing)}, "brief"))
    else:
        render_brief(slug, out.items, out.missing, Console())
        if out.missing:
            from kgate.report import render_error

            render_error(f"the brief is missing {len(out.missing)} item(s): "
                         + "; ".join(m.split(":")[0] for m in out.missing) + ".",
                         "supply each from the records as its MISSING line says; kgate does not improvise them.",
                         Console(stderr=True))
    raise typer.Exit(2 if out.missing else 0)


def experiment_arg(ws: object, target: str | None, exp: str | None):  # -> (Experiment, Page)
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
    advisories_ok: AdvisoriesOkOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Check an experiment record: page, family binding, branch history, receipts.

    Each finding has a code, the evidence, the fix, and its consequence for the verdict:
    advisory, cap: inconclusive, or invalid.
    """
    from kgate.record import lint as lints, workspace
    from kgate.jsonio import document
    from kgate.report.records import render_findings

    try:
        ws = workspace.find(Path.cwd())
        ex, _ = experiment_arg(ws, target, exp)
        findings = lints.lint(lints.gather(ws, ex))
    except KgateError as exc:
        fail_usage(exc, as_json)
    status = ("CLEAN", "ADVISORY", "CAPPED")[lints.exit_code(findings)]
    code = 0 if status == "ADVISORY" and advisories_ok else lints.exit_code(findings)
    if as_json:
        print(document({"experiment": ex.tag(), "status": status, "exit_code": code,
                     "findings": [f.to_json() for f in findings]}, "lint"))
    else:
        render_findings(ex.tag(), findings, Console())
    raise typer.Exit(code)


@app.command()
def status(
    slug: Annotated[Optional[str], typer.Argument(help="A family's slug (default: every family in the workspace).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Where each experiment stands and the next command to run, derived from the records alone.

    Stages in order: workspace, family, stub, brief, loaded (the attestation), candidates
    (one per plan item), verdict (verify full, then file), report. For each family: the
    stage, what is done, the next command and why, and what blocks it. Outside a workspace,
    the next command is `kgate init`.
    """
    from kgate.jsonio import document
    from kgate.record import status as stages, workspace
    from kgate.verify.lock import lock_path

    try:
        try:
            ws = workspace.find(Path.cwd())
        except KgateError:
            found = [stages.no_workspace(Path.cwd())]
        else:
            names = [slug] if slug else stages.families(ws)
            found = [stages.of(ws, name, lock_path) for name in names] or [stages.no_family(ws)]
    except KgateError as exc:
        fail_usage(exc, as_json)
    blocked = any(s.blocked_by for s in found)
    if as_json:
        print(document({"status": "BLOCKED" if blocked else "OK", "exit_code": 0, "families": [s.to_json() for s in found]},
                       "status"))
        raise typer.Exit(0)
    console = Console()
    for s in found:
        where = f"{s.slug} {s.exp}" if s.exp else (s.slug or "(workspace)")
        console.print(f"kgate status: {where}: {s.stage}" + (f"  (done: {', '.join(s.done)})" if s.done else ""),
                      soft_wrap=True, markup=False)
        for block in s.blocked_by:
            console.print(f"  blocked by: {block}", soft_wrap=True, markup=False)
        console.print(f"  next: {s.next}", soft_wrap=True, highlight=False, markup=False)
        console.print(f"  why: {s.why}", soft_wrap=True, markup=False)


@app.command()
def verdict(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    exp: Annotated[str, typer.Argument(help="The experiment, vNNN.")],
    receipt: Annotated[Optional[Path], typer.Option("--receipt", help="`kgate verify --mode full` receipt of the final candidate.")] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Run the full verification now, under the registered terms, and file from it.")] = False,
    budget: Annotated[float, typer.Option("--budget", help="With --verify: time budget in seconds for the timed rounds.", parser=finite)] = 20.0,
    lock_dir: Annotated[Optional[Path], typer.Option("--lock-dir", help="With --verify: folder of the chip lock files.")] = None,
    blocked: Annotated[Optional[str], typer.Option("--blocked", help="The honorable exit: file the experiment blocked (tooling, compiler or device), after two recorded attempts; needs --transcript.")] = None,
    transcript: Annotated[Optional[Path], typer.Option("--transcript", help="With --blocked: the failing command and its error output (committed with the record).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """File the experiment: derive the verdict from the receipt by rules, apply lint caps.

    supported | refuted | inconclusive | invalid, never typed in. Writes the Verdict section
    (receipt numbers only, with the receipt's path and hash), flips status: filed, appends
    the RESULTS.tsv row, and commits `K7(<slug> vNNN): <verdict> — <speedup>`. With
    --verify, the full verification runs now on the committed candidate with the stub's
    bar, parity and class and the family's op-point, and that receipt is the one filed.
    """
    from kgate.record import filing, workspace
    from kgate.jsonio import document
    from kgate.report.records import render_filing

    try:
        if sum((receipt is not None, verify, blocked is not None)) != 1:
            raise KgateError("pass exactly one of --receipt R, --verify and --blocked REASON.",
                             "--receipt files a receipt you made; --verify makes it now, under the registered terms; "
                             "--blocked files the honorable exit, with --transcript.")
        if (blocked is None) != (transcript is None):
            raise KgateError("--blocked and --transcript go together.",
                             "pass --blocked tooling --transcript FILE (the failing command and its error).")
        ws = workspace.find(Path.cwd())
        if blocked is not None:
            filed = filing.file_blocked(ws, slug, exp, blocked, transcript)  # type: ignore[arg-type]
        elif verify:
            filed = filing.verify_and_file(ws, slug, exp, budget_s=budget, lock_dir=lock_dir,
                                           say=(lambda _: None) if as_json else say_to_stderr("verdict"))
        else:
            filed = filing.file_verdict(ws, slug, exp, receipt)  # type: ignore[arg-type]
    except KgateError as exc:
        fail_usage(exc, as_json)
    if as_json:
        print(document(filing.decision_json(filed), "verdict"))
    else:
        render_filing(filed, Console())


@app.command()
def report(
    slug: Annotated[str, typer.Argument(help="The family's slug.")],
    exp: Annotated[str, typer.Argument(help="The experiment, vNNN.")],
    html: Annotated[Optional[Path], typer.Option("--html", help="Also write a self-contained HTML page with plots.")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the Markdown here instead of stdout.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The author's report: ledger, final candidate, pivots and extensions, blockers, compliance.

    With --json, the same facts as one JSON document on stdout (schemas/author-report-v1.schema.json);
    -o and --html still write their files."""
    from kgate.jsonio import document
    from kgate.record import lint as lints, workspace
    from kgate.report import write_atomic
    from kgate.report.author import build, to_html, to_markdown

    try:
        for path in (html, output):
            check_output_path(path)
        ws = workspace.find(Path.cwd())
        ex, page = experiment_arg(ws, slug, exp)
        facts = lints.gather(ws, ex)
        data = build(ex, page, facts, lints.lint(facts))
    except KgateError as exc:
        fail_usage(exc, as_json)
    text = to_markdown(data)
    if output is not None:
        write_atomic(output, text)
    if as_json:
        print(document({"status": "DONE", "exit_code": 0, "command": "report", **data.to_json()}, "author-report"))
    elif output is None:
        print(text)
    if html is not None:
        write_atomic(html, to_html(data))
        Console(stderr=True).print(f"kgate report: wrote {html}", soft_wrap=True)
