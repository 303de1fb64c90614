"""The authoring phase of an experiment, after its stub: candidate commits with their
ledger rows, the `loaded:` attestation, class pivots, and the author's brief.

Every command validates everything first, then writes the page atomically and makes one
commit; if the commit fails the page, the receipt copy and the index are put back. The
author's uncommitted work is never reset."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from kgate.errors import KgateError, article
from kgate.jsonio import as_json, write_atomic
from kgate.problem.module import file_sha256
from kgate.record.stub import planned_what
from kgate import gotchas
from kgate.record import commits, git, ladder, nopeek
from kgate.record.summary import ReportSummary
from kgate.record.family import Family, load as load_family
from kgate.record.page import INTERVENTION_CLASSES, LEDGER, RECEIPT_CELL, THIS_COMMIT, Ledger, LedgerRow, Page, PlanEntry
from kgate.record.workspace import Workspace

# Profiles, traces and HLO dumps never go into git (verify's artifacts live in an ignored folder),
# nor does any file above this size: `kgate cand` refuses them, `kgate lint` flags them (L09).
ARTIFACT_BYTES: Final = 5 * 1024 * 1024
ARTIFACT: Final = re.compile(r"(\.xplane\.pb|\.trace\.json(\.gz)?|\.pftrace|\.perfetto-trace|\.nsys-rep|\.ncu-rep|"
                             r"\.qdrep|\.pt\.trace\.json|\.prof|\.hlo\.pb|perfetto_trace\.json\.gz)$|(^|/)plugins/profile/")
VERDICT_WORDS: Final = re.compile(r"\b(supported|refuted|confirmed)\b", re.IGNORECASE)
_BRANCH = re.compile(r"^kernel/([a-z0-9-]+)-(v[0-9]{3})$")
CAND_ID = re.compile(r"^cand[1-9][0-9]*$")


@dataclass(frozen=True)
class Experiment:
    ws: Workspace
    family: Family
    exp: str  # vNNN
    branch: str
    page_rel: Path  # the page, relative to the worktree

    @property
    def worktree(self) -> Path:
        return self.family.worktree

    @property
    def page_path(self) -> Path:
        return self.worktree / self.page_rel

    @property
    def records_rel(self) -> Path:  # the family's record folder inside the worktree
        return self.page_rel.parent

    def tag(self) -> str:
        return f"{self.family.slug} {self.exp}"


def current(ws: Workspace, slug: str) -> Experiment:
    """The experiment the family worktree is checked out on (its branch names it)."""
    family = load_family(ws, slug)
    wt = family.worktree
    if not wt.is_dir():
        raise KgateError(f"the family worktree {wt} is missing.", f"restore it: git worktree add {wt} {family.integration_branch}")
    branch = git.git(wt, "rev-parse", "--abbrev-ref", "HEAD")
    if branch == "HEAD":
        raise KgateError(f"the family worktree {wt} is on a detached HEAD.", f"check out the experiment branch (kernel/{slug}-vNNN) there.")
    m = _BRANCH.match(branch)
    if not m or m.group(1) != slug:
        raise KgateError(
            f"the family worktree {wt} is on {branch}, not on an experiment branch kernel/{slug}-vNNN.",
            f"pre-register an experiment with `kgate stub {slug} ...`, or check out its branch there.",
        )
    return _experiment(ws, family, m.group(2), branch, lambda rel: sorted((wt / rel).glob(f"*-{m.group(2)}-{slug}.md")))


def _experiment(ws: Workspace, family: Family, exp: str, branch: str, pages: Callable[[Path], list[Any]]) -> Experiment:
    rel = family.records_rel(ws.home_repo)
    found = pages(rel)
    if len(found) != 1:
        raise KgateError(
            f"branch {branch} holds {len(found)} pages for {exp} under {rel} (expected exactly one).",
            "restore the page from the stub commit; there is one page per experiment.",
        )
    return Experiment(ws, family, exp, branch, rel / Path(str(found[0])).name)


def find(ws: Workspace, slug: str, exp: str | None) -> tuple[Experiment, Page]:
    """An experiment to read: the worktree's current one, or `exp` from its branch's tip."""
    try:
        ex = current(ws, slug)
    except KgateError:
        if exp is None:
            raise
    else:
        if exp in (None, ex.exp):  # the working copy: what the author sees, uncommitted edits included
            return ex, Page.load(ex.page_path)
    if not re.fullmatch(r"v[0-9]{3}", exp):
        raise KgateError(f"experiment {exp!r} is not of the form vNNN.", "pass e.g. v001.")
    family = load_family(ws, slug)
    branch = f"kernel/{slug}-{exp}"
    if not git.branch_exists(family.worktree, branch):
        raise KgateError(f"there is no experiment {slug} {exp} (no branch {branch}).", f"list them with `git branch --list 'kernel/{slug}-v*'`.")
    listing = lambda rel: [  # noqa: E731
        name for name in git.git(family.worktree, "ls-tree", "--name-only", f"{branch}:{rel.as_posix()}", check=False).splitlines()
        if name.endswith(f"-{exp}-{slug}.md")
    ]
    ex = _experiment(ws, family, exp, branch, listing)
    text = git.git(family.worktree, "show", f"{branch}:{ex.page_rel.as_posix()}", strip=False)
    return ex, Page.parse(text, ex.page_path)


# -- the working tree -------------------------------------------------------------------


def changed_paths(worktree: Path) -> list[str]:
    """Every path that differs from HEAD, untracked files included, relative to the worktree."""
    out = git.git(worktree, "status", "--porcelain=v1", "-z", "--untracked-files=all", strip=False)
    entries = out.split("\0")
    paths, i = [], 0
    while i < len(entries):
        entry = entries[i]
        if len(entry) > 3:
            paths.append(entry[3:])
            if entry[0] in "RC":  # a rename or copy is followed by its source path
                paths.append(entries[i + 1])
                i += 1
        i += 1
    return paths


def _within(path: str, folder: Path) -> bool:
    return folder == Path(".") or Path(path).is_relative_to(folder)


def _only_loaded_line_differs(ex: Experiment) -> bool:
    """True when the page differs from HEAD's only by the `loaded:` attestation (kgate ledger --loaded)."""
    committed = git.git(ex.worktree, "show", f"HEAD:{ex.page_rel.as_posix()}", check=False, strip=False)
    if not committed:
        return False

    def unattested(text: str) -> str:
        page = Page.parse(text, ex.page_path)
        ledger = page.ledger
        if not ledger.rows:
            return replace(page, sections=tuple(s for s in page.sections if s[0] != LEDGER)).text().rstrip()
        return page.with_ledger(replace(ledger, loaded=None)).text().rstrip()

    return unattested(committed) == unattested(ex.page_path.read_text())


def classify_changes(ex: Experiment) -> list[str]:
    """The candidate's changed paths (inside the work dir); refuses anything else."""
    fam = ex.family
    candidate, outside = [], []
    for path in changed_paths(ex.worktree):
        if Path(path) == fam.reference:
            raise KgateError(
                f"the reference module {fam.reference} is modified in the worktree.",
                f"restore it (`git -C {ex.worktree} checkout -- {fam.reference}`): the reference is pinned, never edited.",
            )
        if Path(path) == ex.page_rel:
            if not _only_loaded_line_differs(ex):
                raise KgateError(
                    f"the page {ex.page_rel} has edits kgate did not make.",
                    f"discard them (`git -C {ex.worktree} checkout -- {ex.page_rel}`); the page is written by kgate commands.",
                )
        elif _within(path, fam.work):
            candidate.append(path)
        else:
            outside.append(path)
    if outside:
        raise KgateError(
            f"files outside the work dir {fam.work}/ are changed: {', '.join(sorted(outside))}.",
            "a candidate changes only files in the work dir: move or discard the others.",
        )
    heavy = [f"{p} ({'a profile or trace' if ARTIFACT.search(p) else f'{size} bytes'})" for p in candidate
             if ARTIFACT.search(p) or (size := _size(ex.worktree / p)) > ARTIFACT_BYTES]
    if heavy:
        raise KgateError(
            f"the work dir holds files that never go into git: {', '.join(sorted(heavy))}.",
            f"move them out of {fam.work}/ (verify writes its artifacts to an ignored folder); a candidate commits "
            f"source, and no file above {ARTIFACT_BYTES // (1024 * 1024)} MiB.",
        )
    return candidate


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def commit_record(ex: Experiment, page: Page, message: str, paths: list[str], extra: dict[Path, bytes] | None = None,
                  only: bool = False) -> str:
    """Write the page (and extra files), stage them with `paths`, commit; undo all of it on failure.
    `only`: commit these files alone, whatever else the author has staged."""
    old_page = ex.page_path.read_text()
    old_index = git.git(ex.worktree, "write-tree")  # the index as the author left it
    old_head = git.git(ex.worktree, "rev-parse", "HEAD")
    extra = extra or {}
    written: list[Path] = []
    made: list[Path] = []
    try:
        for rel, data in extra.items():
            target = ex.worktree / rel
            if not target.parent.is_dir():
                target.parent.mkdir(parents=True)
                made.append(target.parent)
            written.append(target)
            target.write_bytes(data)
        write_atomic(ex.page_path, page.text())
        staged = [*paths, ex.page_rel.as_posix(), *(rel.as_posix() for rel in extra)]
        git.git(ex.worktree, "add", "--", *staged)
        git.git(ex.worktree, "commit", "-q", "-m", message, *(["--only", "--", *staged] if only else []))
    except BaseException as exc:
        if _landed(ex.worktree, old_head, message):  # the error came after the commit (a hook's child, Ctrl-C)
            if isinstance(exc, KgateError):
                return git.git(ex.worktree, "rev-parse", "HEAD")
            raise  # the record is whole: nothing is undone
        git.git(ex.worktree, "read-tree", old_index, check=False)  # the index only: the author's edits stay
        write_atomic(ex.page_path, old_page)
        for target in written:
            target.unlink(missing_ok=True)
        for folder in made:
            folder.rmdir()
        raise
    return git.git(ex.worktree, "rev-parse", "HEAD")


def _landed(worktree: Path, old_head: str, message: str) -> bool:
    try:
        head = git.git(worktree, "rev-parse", "HEAD", check=False)
        return head != old_head and git.git(worktree, "log", "-1", "--format=%B", check=False).strip() == message.strip()
    except KgateError:
        return False


def require_in_progress(ex: Experiment, page: Page) -> None:
    status = page.front.get("status")
    if status == "pivoted":
        pivot = page.front.get("pivot", {})
        raise KgateError(
            f"{ex.tag()} was pivoted to {pivot.get('to', 'another class')}: its plan is closed.",
            f"pre-register the new class: `kgate stub {ex.family.slug} --class {pivot.get('to', '<class>')} ...`.",
        )
    if status != "in_progress":
        raise KgateError(f"{ex.tag()} has status {status!r}: only an in-progress experiment takes candidates.",
                         f"start a new experiment with `kgate stub {ex.family.slug} ...`.")


def reference_pinned(ex: Experiment) -> None:
    ref = ex.worktree / ex.family.reference
    if not ref.is_file() or file_sha256(ref) != ex.family.reference_sha256:
        raise KgateError(
            f"the reference module {ex.family.reference} no longer matches the family's pinned sha256.",
            "restore it: results against a changed reference are not comparable.",
        )


# -- kgate cand -------------------------------------------------------------------------


@dataclass(frozen=True)
class CandRequest:
    slug: str
    cand: str
    what: str
    receipt: Path | None = None
    why: str = ""
    reason: str = ""  # required for a candidate that is not in the plan
    abandon: bool = False  # record a planned candidate as not run, with `reason`
    klass: str | None = None  # the candidate's intervention class (default: the page's)
    gotcha: str = ""  # the gotcha table's row that fired on this candidate (`kgate gotcha`), if any
    escalate: str = ""  # FROM->TO: this candidate climbs the cost ladder (with `reason`), see record/ladder.py
    point: dict[str, Any] | None = None  # a sweep point (`kgate sweep --record`): the receipt must be for these kwargs


@dataclass(frozen=True)
class CandOutcome:
    sha: str
    message: str
    row: LedgerRow
    page: Path
    committed: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())


def cand(ws: Workspace, request: CandRequest) -> CandOutcome:
    ex = current(ws, request.slug)
    page = Page.load(ex.page_path)
    require_in_progress(ex, page)
    reference_pinned(ex)
    if not CAND_ID.match(request.cand):
        raise KgateError(f"candidate id {request.cand!r} is not of the form candN.", "use the plan's ids: cand1, cand2, ...")
    if ladder.MARK.search(request.why):
        raise KgateError("--why holds an escalation mark, `(escalated ...)`, which only --escalate writes.",
                         "record a climb of the cost ladder with --escalate FROM->TO --reason TEXT.")
    for label, text in (("--what", request.what), ("--why", request.why)):
        if word := VERDICT_WORDS.search(text):
            raise KgateError(
                f"{label} uses verdict language ({word.group(0)!r}).",
                "author-side cells say kept or rejected and why; only `kgate verdict` says supported or refuted.",
            )
    ledger = page.ledger
    if (row := ledger.row(request.cand)) is not None:
        raise KgateError(f"{request.cand} is already in the ledger (SHA {row.sha}).", "use the next free candidate id.")
    plan = list(page.plan)
    planned = next((i for i, e in enumerate(plan) if e.cand == request.cand), None)
    if planned is not None and plan[planned].state != "open":
        raise KgateError(f"plan item {request.cand} is already checked off.", "use the next free candidate id.")
    if planned is None and not request.reason.strip():
        raise KgateError(
            f"{request.cand} is not in the pre-registered plan ({', '.join(e.cand for e in plan) or 'empty'}).",
            "pass --reason '<why this extension>' to record it as an extension of the plan.",
        )
    what = request.what.strip()  # a line break stays, and the grammar check refuses it
    if not what and planned is not None:  # the plan item says what it is
        what = planned_what(plan[planned].text)
    if not what:
        raise KgateError("--what is empty.", "say in a few words what this candidate changes.")
    if " — " in what:
        raise KgateError(f"--what {what!r} contains ' — ', which separates the what from the numbers in the message.",
                         "use a comma or a colon instead.")
    if request.abandon and not request.reason.strip():
        raise KgateError("an abandoned candidate needs --reason.", "say why it was not run.")
    klass = request.klass or str(page.front.get("intervention_class", "?"))
    climb = _escalation(ex, page, request) if request.escalate else None
    if climb is not None:
        klass = climb[1]
    if klass not in INTERVENTION_CLASSES:
        raise KgateError(f"class {klass!r} is not an intervention class.", f"use one of {', '.join(INTERVENTION_CLASSES)}.")
    if request.gotcha and not gotchas.known(request.gotcha):
        raise KgateError(f"--gotcha {request.gotcha!r} is not a row of the gotcha table.",
                         "name the row `kgate gotcha <log>` printed (`kgate gotcha --list` lists them).")
    changed = classify_changes(ex)
    if not request.abandon:
        refuse_peeking(ex, page, changed)
    if request.abandon:
        row, summary, extra, notes = _abandoned_row(ex, request, klass, changed)
    else:
        row, summary, extra, notes = _run_row(ex, request, klass, changed)
    if request.gotcha:  # the why-column says which row fired (lint checks it exists)
        row = replace(row, why=f"{row.why} (gotcha {request.gotcha})")
    if climb is not None:  # the why-column records the climb (lint checks it is backed, L16)
        row = replace(row, why=f"{row.why} {ladder.mark(*climb, request.reason)}")
    message = commits.checked("cand", f"{request.cand}({ex.tag()}): {what} — {summary}")
    if planned is not None:
        plan[planned] = replace(plan[planned], state="done")
    else:
        plan.append(PlanEntry(request.cand, "done", f"{what} — extension: {' '.join(request.reason.split())}"))
    if ledger.loaded is None:
        notes.append(f"the ledger has no `loaded: [...]` attestation yet: set it with `kgate ledger {request.slug} --loaded ...`")
    new_ledger = resolved_ledger(ex, replace(ledger, rows=(*ledger.rows, row)))
    new_page = page.with_plan(tuple(plan)).with_ledger(new_ledger)
    sha = commit_record(ex, new_page, message, changed, extra)
    return CandOutcome(sha, message, row, ex.page_path, tuple(changed), tuple(notes))


def refuse_peeking(ex: Experiment, page: Page, changed: list[str]) -> None:
    """The stub's no-peek list: a candidate whose import closure or source reaches a listed item
    is refused, with the file and line as evidence."""
    files = [ex.worktree / ex.family.target, *(ex.worktree / p for p in changed)]
    nopeek.refuse(files, ex.worktree, page.front.get("no_peek"), also=ex.ws.home_repo,
                  activity=page.front.get("activity"))


def _escalation(ex: Experiment, page: Page, request: CandRequest) -> tuple[str, str]:
    """`--escalate FROM->TO`: refused unless an earlier FROM candidate's receipt missed the bar."""
    src, dst = ladder.parse(request.escalate)
    if request.klass is not None and request.klass != dst:
        raise KgateError(f"--class {request.klass} contradicts --escalate {src}->{dst}.", f"drop --class: the candidate is {dst}.")
    if request.abandon or not request.reason.strip():
        raise KgateError("--escalate needs --reason (and a candidate that is run, not abandoned).",
                         f"say why {src} cannot meet the bar, e.g. --reason 'cand1 missed it: XLA already fuses both passes'.")
    summaries: dict[str, ReportSummary | None] = {}
    for row in page.ledger.rows:
        m = RECEIPT_CELL.match(row.receipt)
        path = ex.worktree / ex.records_rel / m.group(1) if m else None
        try:
            summaries[row.candidate] = ReportSummary.load(path) if path is not None and path.is_file() else None
        except KgateError:  # not a kgate report: that row backs nothing, and blocks nothing either
            summaries[row.candidate] = None
    if (why := ladder.unbacked(src, page.front.get("bar"), ladder.earlier(page.ledger.rows, summaries))) is not None:
        raise KgateError(f"--escalate {src}->{dst} is not backed: {why}.",
                         f"climb the ladder only after {article(src)} {src} candidate, measured against the registered bar "
                         f"(kgate measure --family {ex.family.slug}), missed it.")
    return src, dst


_Recorded = tuple[LedgerRow, str, dict[Path, bytes], list[str]]  # the row, the message's numbers, files to add, notes


def _abandoned_row(ex: Experiment, request: CandRequest, klass: str, changed: list[str]) -> _Recorded:
    if changed:
        raise KgateError(
            f"the work dir has uncommitted changes ({', '.join(changed)}) and {request.cand} is being abandoned.",
            "commit them as a candidate first, or discard them: an uncommitted candidate would be left behind.",
        )
    if request.receipt is not None:
        raise KgateError("an abandoned candidate has no receipt.", "drop --receipt, or record it as run.")
    reason = " ".join(request.reason.split())
    return LedgerRow(request.cand, klass, "—", "not run", "not run", "not run", "—", f"abandoned: {reason}"), \
        f"abandoned: {reason}", {}, []


def _run_row(ex: Experiment, request: CandRequest, klass: str, changed: list[str]) -> _Recorded:
    if not changed and request.point is None:  # a sweep's points share one file: its receipt names the point
        head = git.git(ex.worktree, "rev-parse", "--short", "HEAD")
        raise KgateError(
            f"nothing to commit: the work dir {ex.family.work}/ is unchanged since {head}.",
            f"write the candidate at {ex.family.target} first (a candidate is a change), or pass --abandon --reason.",
        )
    if request.receipt is None:
        if not request.why.strip():
            raise KgateError("a candidate without --receipt needs --why.", "pass --receipt (a kgate report or receipt), or --why.")
        row = LedgerRow(request.cand, klass, THIS_COMMIT, "not checked", "not timed", "not timed", "none", request.why.strip())
        return row, "no receipt", {}, []
    run = ReportSummary.load(request.receipt)
    target = ex.worktree / ex.family.target
    if not target.is_file():
        raise KgateError(f"the target {ex.family.target} does not exist in the worktree.", "write the candidate there.")
    if run.candidate_sha256 != file_sha256(target):
        raise KgateError(
            f"receipt {request.receipt} is for a candidate with sha256 {str(run.candidate_sha256)[:12]}..., "
            f"not for the target as it is now ({file_sha256(target)[:12]}...).",
            f"re-run kgate on {target} and pass that report.",
        )
    run.check_dtype(ex.family.graded_dtype)
    run.check_backend(ex.family)
    if request.point is not None and any(as_json(run.kwargs.get(k)) != as_json(v) for k, v in request.point.items()):
        raise KgateError(f"receipt {request.receipt} is for keyword arguments {run.kwargs}, not for the point {request.point}.",
                         "record each point with its own receipt.")
    if run.reference_sha256 != ex.family.reference_sha256:
        raise KgateError(
            f"receipt {request.receipt} was made against a different reference than the family's pin.",
            f"re-run it with --reference {ex.worktree / ex.family.reference}.",
        )
    failed = f"rejected: {run.command} {run.status}" + (f" at {run.first_failure}" if run.first_failure else "")
    why = request.why.strip() or (failed if run.status != "PASS" else "")
    if not why:
        raise KgateError("--why is empty.", "say why this candidate is kept or rejected (e.g. 'kept: fastest so far').")
    name = f"{ex.exp}-{request.cand}.json"
    row = LedgerRow(request.cand, klass, THIS_COMMIT, run.parity_cell, run.p50_cell, run.speedup_cell,
                    f"receipts/{name} (sha256 {run.sha256[:12]})", why)
    notes = []
    if run.interpreted and run.p50_ms is not None:
        notes.append("the receipt's timings are interpreter timings (a kernel ran in interpret mode): "
                     "the ledger marks them (interpreted)")
    return row, run.summary(), {ex.records_rel / "receipts" / name: request.receipt.read_bytes()}, notes


# -- kgate ledger -----------------------------------------------------------------------


def resolved_ledger(ex: Experiment, ledger: Ledger, rev: str = "HEAD") -> Ledger:
    """`this commit` cells resolved to the commit that added each row (found by its subject)."""
    rows = []
    for row in ledger.rows:
        if row.sha == THIS_COMMIT:
            sha = git.git(ex.worktree, "log", "-1", "--format=%H", "--fixed-strings",
                          f"--grep={row.candidate}({ex.tag()}):", rev, check=False)
            row = replace(row, sha=sha[:12] or THIS_COMMIT)
        rows.append(row)
    return replace(ledger, rows=tuple(rows))


def set_loaded(ws: Workspace, slug: str, loaded: str) -> tuple[Experiment, Ledger]:
    """Write the `loaded: [...]` attestation; it is committed with the next record commit."""
    items = tuple(s.strip() for s in re.split(r"[,\n]", loaded) if s.strip())
    if not items:
        raise KgateError("--loaded is empty.", "name the sections you read, e.g. --loaded 'pallas-tpu guide, roofline notes'.")
    if any("[" in s or "]" in s for s in items):
        raise KgateError("--loaded items may not contain brackets.", "name each section in plain words.")
    ex = current(ws, slug)
    page = Page.load(ex.page_path)
    require_in_progress(ex, page)
    ledger = replace(page.ledger, loaded=items)
    write_atomic(ex.page_path, page.with_ledger(ledger).text())
    return ex, ledger


# -- kgate pivot ------------------------------------------------------------------------


@dataclass(frozen=True)
class PivotOutcome:
    sha: str
    message: str
    closed: tuple[str, ...]


def pivot(ws: Workspace, slug: str, transition: str, evidence: str) -> PivotOutcome:
    parts = re.split(r"\s*(?:→|->)\s*", transition.strip())
    if len(parts) != 2:
        raise KgateError(f"pivot {transition!r} is not of the form <from>→<to>.", "write e.g. xla-rewrite→kernel-authored.")
    src, dst = parts
    if dst not in INTERVENTION_CLASSES or src not in INTERVENTION_CLASSES:
        raise KgateError(f"pivot {transition!r} names an unknown class.", f"classes are {', '.join(INTERVENTION_CLASSES)}.")
    if src == dst:
        raise KgateError(f"pivot {transition!r} does not change the class.", "a pivot goes from one class to another.")
    if not evidence.strip():
        raise KgateError("--evidence is empty.", "cite what showed the class cannot meet the bar (a receipt, a profile).")
    ex = current(ws, slug)
    page = Page.load(ex.page_path)
    require_in_progress(ex, page)
    if page.front.get("intervention_class") != src:
        raise KgateError(
            f"{ex.tag()} is registered as {page.front.get('intervention_class')!r}, not {src!r}.",
            f"pivot from the page's class: {page.front.get('intervention_class')}→{dst}.",
        )
    if classify_changes(ex):
        raise KgateError(
            "the work dir has uncommitted changes: an uncommitted candidate would be left behind by the pivot.",
            f"record it first (`kgate cand {slug} candN ...`), or discard it.",
        )
    plan = page.plan
    closed = tuple(e.cand for e in plan if e.state == "open")
    new_plan = tuple(replace(e, state="closed", text=f"{e.text} (closed: pivoted to {dst})") if e.state == "open" else e for e in plan)
    message = commits.checked("pivot", f"pivot({ex.tag()}): {src}→{dst}")
    body = [f"{src}→{dst}", "", f"Evidence: {' '.join(evidence.split())}", "",
            f"Plan closed as pivoted; not reached: {', '.join(closed) or 'none'}. The new class needs a new stub."]
    new_page = (page.with_front(status="pivoted", pivot={"from": src, "to": dst})
                .with_plan(new_plan).with_ledger(resolved_ledger(ex, page.ledger)).with_section("Pivot", body))
    if page.ledger.rows == () and page.ledger.loaded is None:
        new_page = replace(new_page, sections=tuple(s for s in new_page.sections if s[0] != LEDGER))
    sha = commit_record(ex, new_page, message, [])
    return PivotOutcome(sha, message, closed)


# -- kgate lead -------------------------------------------------------------------------

LEADS = "Leads"


def leads(page: Page) -> list[str]:
    """The ideas noticed and not pursued, as `kgate lead` recorded them."""
    return [ln.strip()[2:] for ln in (page.section(LEADS) or "").splitlines() if ln.strip().startswith("- ")]


def lead(ws: Workspace, slug: str, text: str) -> str:
    """Record an idea noticed and not pursued (a seed of the next experiment): a line under the
    page's `## Leads`, committed alone as `lead(<slug> vNNN): <text>`. The candidate in progress
    (the work dir) is left as it is."""
    ex = current(ws, slug)
    page = Page.load(ex.page_path)
    if page.front.get("status") == "filed":
        raise KgateError(f"{ex.tag()} is filed: its page is final.",
                         f"record the lead in the next experiment (`kgate stub {slug} ...`, then `kgate lead`).")
    if ex.page_rel.as_posix() in changed_paths(ex.worktree) and not _only_loaded_line_differs(ex):
        raise KgateError(f"the page {ex.page_rel} has edits kgate did not make: a lead commits the page as it is.",
                         f"discard them (`git -C {ex.worktree} checkout -- {ex.page_rel}`), then record the lead.")
    idea = " ".join(text.split())
    if not idea:
        raise KgateError("the lead is empty.", "say the idea in a line, e.g. kgate lead SLUG 'try two rows per step'.")
    if word := VERDICT_WORDS.search(idea):
        raise KgateError(f"the lead uses verdict language ({word.group(0)!r}).", "a lead is an idea, not a result.")
    message = commits.checked("lead", f"lead({ex.tag()}): {idea}")
    new_page = page.with_section(LEADS, [f"- {item}" for item in (*leads(page), idea)])
    return commit_record(ex, new_page, message, [], only=True)


# -- kgate brief ------------------------------------------------------------------------


@dataclass(frozen=True)
class Brief:
    items: dict[str, Any]
    missing: tuple[str, ...]  # each: what is missing, and how to supply it


def brief(ws: Workspace, slug: str, lock: Callable[[int], Path]) -> Brief:
    """The author's checklist, from the records only; every missing item is named."""
    family = load_family(ws, slug)
    items: dict[str, Any] = {}
    missing: list[str] = []
    ref = family.worktree / family.reference
    items["reference module"] = {"path": str(ref), "sha256": family.reference_sha256}
    if not ref.is_file() or file_sha256(ref) != family.reference_sha256:
        missing.append(f"reference module: {ref} does not match the family's pinned sha256 (restore it)")
    items["target path"] = str(family.worktree / family.target)
    try:
        ex = current(ws, slug)
        page: Page | None = Page.load(ex.page_path)
        items["work dir + branch"] = {"worktree": str(family.worktree), "work_dir": str(family.worktree / family.work),
                                      "branch": ex.branch, "page": str(ex.page_path)}
    except KgateError as exc:
        page = None
        missing.append(f"work dir + branch: {exc.problem} ({exc.fix})")
    if page is not None:
        require_in_progress(ex, page)
    read = (lambda name: page.section(name) if page else None)  # noqa: E731
    for key, value, how in (
        ("diagnosis", read("Diagnosis"), "pre-register it: `kgate stub ... --diagnosis '<what profiling showed>'`"),
        ("bar", page.front.get("bar") if page else None, "pre-register it with `kgate stub --bar`"),
        ("parity spec", page.front.get("parity") if page else None, "it comes from the family binding via the stub"),
        ("activity", page.front.get("activity") if page else None, "pre-register it with `kgate stub --activity`"),
    ):
        if value:
            items[key] = value
        else:
            missing.append(f"{key}: not recorded ({how})")
    reading = [ln.strip().removeprefix("-").strip() for ln in (read("Required reading") or "").splitlines() if ln.strip()]
    if reading:
        items["required reading"] = reading
    else:
        missing.append("required reading: not recorded (pre-register it: `kgate stub ... --reading '<doc or section>'`)")
    try:
        items["chip + lock"] = {"chip": ws.chip, "lock": str(lock(ws.chip)),
                                "run as": f"kgate lock {ws.chip} -- <command>"}
    except KgateError as exc:
        missing.append(f"chip + lock: {exc.problem} ({exc.fix})")
    plan = [e.line() for e in page.plan] if page else []
    if plan:
        items["candidate plan"] = plan
    else:
        missing.append("candidate plan: none recorded (pre-register it: `kgate stub ... --plan 'cand1: <what> — predict <signal>'`)")
    return Brief(items, tuple(missing))

