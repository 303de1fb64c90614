"""`kgate lint`: read an experiment's page, family binding, branch history and receipts,
and report each way the record falls short, with the consequence for the verdict.

`gather` does the reading (git, files); the rules are pure functions over the facts it
returns, so each can be tested on a real record or on plain values."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final

from kgate.errors import KgateError
from kgate.record import commits, git, ladder, nopeek
from kgate.record.experiment import ARTIFACT_BYTES, VERDICT_WORDS, Experiment, resolved_ledger
from kgate.record.experiment import ARTIFACT as _ARTIFACT
from kgate.record.page import PARAGRAPHS, RECEIPT_CELL, THIS_COMMIT, Page
from kgate.record.stub import criterion_repeats
from kgate.record.summary import ReportSummary
from kgate.record.verdict import Cap, Consequence
from kgate.record.workspace import Workspace

ADVISORY: Final = "advisory"
CAP: Final = "cap: inconclusive"
INVALID: Final = "invalid"
PREREGISTERED: Final = ("bar", "parity", "intervention_class", "activity", "variant", "no_peek", "reading_budget_min")


@dataclass(frozen=True)
class Finding:
    code: str
    title: str
    evidence: str
    fix: str
    consequence: Consequence

    def cap(self) -> Cap:
        return Cap(self.code, self.consequence, self.evidence)

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "title": self.title, "evidence": self.evidence, "fix": self.fix,
                "consequence": self.consequence}


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    body: str
    files: tuple[str, ...]  # paths changed by the commit
    sizes: dict[str, int] = field(default_factory=dict)  # size of each path as committed (absent: deleted)
    target_sha256: str | None = None  # the target file as of this commit
    time: int = 0  # committer time, seconds since the epoch


@dataclass(frozen=True)
class ReceiptFacts:
    candidate: str
    cell: str
    rel: str | None  # path relative to the page's folder
    data: bytes | None  # None: the file is not there
    check: str | None = None  # verify-receipt's status for sealed receipts (hash and statuses)
    check_findings: tuple[str, ...] = ()
    summary: ReportSummary | None = None  # its numbers and module hashes; None when it is not a kgate report


@dataclass(frozen=True)
class Facts:
    tag: str  # "<slug> vNNN"
    page: Page
    stub_page: Page | None  # the page as the K3 commit holds it
    filed_page: Page | None  # as the K7 commit holds it
    commits: tuple[Commit, ...]  # oldest first, from the integration branch to the experiment's tip
    pinned_reference_sha256: str
    reference_sha256_at_tip: str | None
    work_dir: str
    records_dir: str  # the page's folder, relative to the worktree
    receipts: tuple[ReceiptFacts, ...]
    ledger_shas: dict[str, str]  # candidate -> resolved SHA cell
    verdict_receipt: bytes | None = None  # the receipt the page's verdict cites
    stray_receipts: tuple[str, ...] = ()  # "<sha12> <path>": kgate receipts committed outside receipts/
    no_peek: tuple[str, ...] = ()  # "<sha12> <evidence>": candidate commits that read a no-peek item


# -- reading --------------------------------------------------------------------------------


def gather(ws: Workspace, ex: Experiment) -> Facts:
    from kgate.verify import check_receipt

    wt, fam = ex.worktree, ex.family
    on_branch = git.git(wt, "rev-parse", "--abbrev-ref", "HEAD") == ex.branch

    def read(rel: str, rev: str | None = None) -> bytes | None:
        if rev is None and on_branch:
            path = wt / rel
            return path.read_bytes() if path.is_file() else None
        out = git.run(wt, "show", f"{rev or ex.branch}:{rel}")
        return out.stdout if out.returncode == 0 else None

    page_text = read(ex.page_rel.as_posix())
    page = Page.parse(page_text.decode() if page_text else "", ex.page_path)
    listed = git.git(wt, "rev-list", "--reverse", f"{fam.integration_branch}..{ex.branch}").split()
    records = ex.records_rel.as_posix()
    history = []
    stray: list[str] = []
    for sha in listed:
        stamp, _, message = git.git(wt, "log", "-1", "--format=%ct%n%B", sha).partition("\n")
        subject, _, body = message.partition("\n")
        files = tuple(git.git(wt, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).splitlines())
        sizes = {}
        for path in files:
            size = git.run(wt, "cat-file", "-s", f"{sha}:{path}")
            if size.returncode == 0:
                sizes[path] = int(size.stdout)
        stray.extend(f"{sha[:12]} {path}" for path in files
                     if path in sizes and _is_receipt(path, sizes[path], records, lambda p: read(p, sha)))
        target = git.run(wt, "show", f"{sha}:{fam.target.as_posix()}")
        target_sha = hashlib.sha256(target.stdout).hexdigest() if target.returncode == 0 else None
        history.append(Commit(sha, subject, body.strip(), files, sizes, target_sha, int(stamp or 0)))
    k3 = next((c for c in history if commits.kind(c.subject) == "K3"), None)
    k7 = next((c for c in history if commits.kind(c.subject) == "K7"), None)  # the filing; anything later is an edit

    def page_at(c: Commit | None) -> Page | None:
        text = read(ex.page_rel.as_posix(), c.sha) if c else None
        return Page.parse(text.decode(), ex.page_path) if text else None

    ref = read(fam.reference.as_posix(), ex.branch)
    receipts = []
    ledger = page.ledger if page_text else None
    for row in ledger.rows if ledger else ():
        m = RECEIPT_CELL.match(row.receipt)
        rel = m.group(1) if m else None
        data = read(f"{records}/{rel}") if rel else None
        status: str | None = None
        found: tuple[str, ...] = ()
        summary = None
        if data is not None:
            try:
                parsed = json.loads(data)
            except (json.JSONDecodeError, UnicodeDecodeError):
                parsed = None
            if isinstance(parsed, dict) and parsed.get("kind") == "verify":
                result = check_receipt.check_data(parsed, Path(rel or ""), regenerate=False, sources=False)
                status, found = result.status, result.findings
            if isinstance(parsed, dict) and isinstance(parsed.get("gates"), dict) and "status" in parsed:
                summary = ReportSummary.from_json(parsed, Path(rel or ""), hashlib.sha256(data).hexdigest())
        receipts.append(ReceiptFacts(row.candidate, row.receipt, rel, data, status, found, summary))
    shas = {}
    if ledger:
        for row in resolved_ledger(ex, ledger, ex.branch).rows:
            shas[row.candidate] = row.sha
    cited = (page.front.get("verdict_receipt") or {}).get("path") if page_text else None
    peeked = _peeked(wt, ws.home_repo, page_at(k3) or page, history, ex) if page_text else []
    return Facts(
        verdict_receipt=read(f"{records}/{cited}") if isinstance(cited, str) else None,
        tag=ex.tag(), page=page, stub_page=page_at(k3), filed_page=page_at(k7), commits=tuple(history),
        pinned_reference_sha256=fam.reference_sha256,
        reference_sha256_at_tip=hashlib.sha256(ref).hexdigest() if ref is not None else None,
        work_dir=fam.work.as_posix(), records_dir=records, receipts=tuple(receipts), ledger_shas=shas,
        stray_receipts=_still_there(wt, ex.branch, stray), no_peek=tuple(peeked),
    )


def _peeked(wt: Path, home: Path, stub: Page, history: list[Commit], ex: Experiment) -> list[str]:
    """Each candidate commit's Python files, and the work dir at the branch's tip, read as the tree
    holds them (imports followed through that tree), against the no-peek list the stub registered."""
    listed = stub.front.get("no_peek") or []
    if not listed:
        return []
    root = wt.resolve()
    try:
        items = nopeek.parse([str(i) for i in listed] if isinstance(listed, list) else [str(listed)], root)
    except (KgateError, ValueError) as exc:
        return [f"the no-peek list cannot be read: {getattr(exc, 'problem', exc)}"]

    def tree(sha: str) -> Callable[[Path], bytes | None]:
        def at(path: Path) -> bytes | None:
            if not path.is_relative_to(root):
                return None
            shown = git.run(wt, "show", f"{sha}:{path.relative_to(root).as_posix()}")
            return shown.stdout if shown.returncode == 0 else None
        return at

    out = []
    scans = [(c.sha, [root / f for f in c.files if f.endswith(".py")]) for c in history
             if commits.kind(c.subject) == "cand"]
    tip = git.git(wt, "rev-parse", ex.branch, check=False)  # the candidates' files as the branch ends (a later hand commit)
    touched = {f for c in history if commits.kind(c.subject) == "cand" for f in c.files if f.endswith(".py")}
    scans.append((tip, [root / f for f in sorted(touched | {ex.family.target.as_posix()})]))
    for sha, files in scans:
        out += [f"{sha[:12]} {line}" for line in nopeek.violations(files, root, items, tree(sha), resolve=False,
                                                                     also=home)]
    return sorted(set(out))


def _still_there(wt: Path, branch: str, stray: list[str]) -> tuple[str, ...]:
    """Each stray receipt once (the commit that first added it), if the branch still holds it."""
    first: dict[str, str] = {}
    for entry in stray:
        first.setdefault(entry.split(" ", 1)[1], entry)
    return tuple(e for path, e in first.items() if git.run(wt, "cat-file", "-e", f"{branch}:{path}").returncode == 0)


def _is_receipt(path: str, size: int, records: str, read: Callable[[str], bytes | None]) -> bool:
    """A committed file that is a sealed kgate receipt, anywhere but the records' receipts/."""
    from kgate.verify.receipt import HASH_FIELD

    if not path.endswith(".json") or size > ARTIFACT_BYTES or PurePosixPath(path).is_relative_to(f"{records}/receipts"):
        return False
    try:
        data = json.loads(read(path) or b"")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and data.get("kind") == "verify" and HASH_FIELD in data


# -- the rules --------------------------------------------------------------------------------

Rule = Callable[[Facts], list[Finding]]


def _attestation(f: Facts) -> list[Finding]:
    if f.page.ledger.loaded is not None:
        return []
    first = (f.page.section("Candidate ledger") or "").splitlines()
    return [Finding("L01", "no loaded: attestation",
                    f"the ledger's first line is {first[0]!r}" if first else "the page has no Candidate ledger",
                    "record what was read: `kgate ledger SLUG --loaded 'section, section'`", CAP)]


def _filed_blocked(f: Facts) -> bool:
    """Filed blocked by kgate: the K7 commit says so and holds the page as filed (not a page edited to say it)."""
    k7 = next((c for c in f.commits if commits.kind(c.subject) == "K7"), None)
    return (k7 is not None and f.filed_page is not None and "): blocked — " in k7.subject
            and f.filed_page.front.get("verdict") == "blocked")


def _ran(row: Any) -> bool:
    return row.sha != "—"


def _receipts(f: Facts) -> list[Finding]:
    out = []
    rows = {r.candidate: r for r in f.page.ledger.rows}
    target_at = {c.sha: c.target_sha256 for c in f.commits}
    for r in f.receipts:
        if not _ran(rows[r.candidate]):
            continue
        fix = f"re-run kgate on {r.candidate}'s commit and record the report (`kgate cand ... --receipt`)"
        if r.rel is None:
            if _filed_blocked(f):  # the attempts a blocked filing rests on: the tool failed, there is no receipt
                continue
            out.append(Finding("L02", "ledger row without a receipt", f"{r.candidate}: receipt cell {r.cell!r}", fix, CAP))
            continue
        if r.data is None:
            out.append(Finding("L02", "receipt missing", f"{r.candidate}: {f.records_dir}/{r.rel} does not exist", fix, CAP))
            continue
        actual = hashlib.sha256(r.data).hexdigest()
        cited = RECEIPT_CELL.match(r.cell).group(2)  # type: ignore[union-attr]
        if not actual.startswith(cited):
            out.append(Finding("L02", "receipt TAMPERED", f"{r.candidate}: {r.rel} hashes {actual[:12]}, the ledger cites {cited}",
                               "restore the receipt from the candidate's commit; a receipt is never edited", INVALID))
            continue
        if r.check == "TAMPERED":
            out.append(Finding("L02", "receipt TAMPERED", f"{r.candidate}: {r.rel}: {'; '.join(r.check_findings)}",
                               "a sealed receipt is never edited: verify again", INVALID))
            continue
        if r.check == "INCOMPLETE":
            out.append(Finding("L02", "receipt INCOMPLETE", f"{r.candidate}: {r.rel}: {'; '.join(r.check_findings)}", fix, CAP))
            continue
        if r.summary is None:
            out.append(Finding("L02", "receipt unreadable", f"{r.candidate}: {r.rel} is not a kgate report", fix, CAP))
            continue
        cand_sha = r.summary.candidate_sha256
        sha = f.ledger_shas.get(r.candidate, "")
        committed = next((t for s, t in target_at.items() if sha and s.startswith(sha)), None)
        if committed is not None and cand_sha != committed:
            out.append(Finding("L02", "receipt for another file",
                               f"{r.candidate}: the receipt's candidate sha256 {str(cand_sha)[:12]} is not the target "
                               f"committed at {sha} ({committed[:12]})", fix, CAP))
    return out


def _candidate_commits(f: Facts) -> list[Finding]:
    out = []
    cand_commits: dict[str, list[Commit]] = {}
    for c in f.commits:
        if commits.kind(c.subject) == "cand":
            cand_commits.setdefault(c.subject.split("(", 1)[0], []).append(c)
    ran = [r for r in f.page.ledger.rows if _ran(r)]
    executed = [c for cs in cand_commits.values() for c in cs if " — abandoned: " not in c.subject]
    if len(ran) > len(executed):
        out.append(Finding("L03", "more rows than candidate commits",
                           f"{len(ran)} ledger rows ran, {len(executed)} candidate commits on the branch",
                           "every row that ran is one `kgate cand` commit", CAP))
    for row in ran:
        sha = f.ledger_shas.get(row.candidate, row.sha)
        if sha == THIS_COMMIT or not any(c.sha.startswith(sha) for c in cand_commits.get(row.candidate, [])):
            out.append(Finding("L03", "row without its commit",
                               f"{row.candidate}: SHA {sha} is not a {row.candidate}({f.tag}) commit on the branch",
                               "record candidates only with `kgate cand`", CAP))
    rows = {r.candidate for r in f.page.ledger.rows}
    for cand, cs in cand_commits.items():
        if cand not in rows:
            out.append(Finding("L03", "commit without a row", f"{cs[0].sha[:12]} {cs[0].subject}",
                               "record candidates only with `kgate cand` (it writes the row)", CAP))
        if len(cs) > 1:
            out.append(Finding("L03", "two commits for one candidate", ", ".join(c.sha[:12] for c in cs),
                               "one commit per candidate: use the next id", CAP))
    return out


def _grammar(f: Facts) -> list[Finding]:
    return [Finding("L04", "commit outside the grammars", f"{c.sha[:12]} {c.subject!r}",
                    "experiment branches hold only K3, candN, pivot, lead and K7 commits made by kgate", CAP)
            for c in f.commits if commits.kind(c.subject) is None]


def _stub_first(f: Facts) -> list[Finding]:
    kinds = [commits.kind(c.subject) for c in f.commits]
    if "K3" not in kinds:
        return [Finding("L05", "no stub commit", "the branch has no K3 commit: nothing was pre-registered",
                        "pre-register with `kgate stub` before any candidate", INVALID)]
    first = kinds.index("K3")
    early = [c for c in f.commits[:first] if commits.kind(c.subject) in ("cand", "pivot", "K7")]
    out = [Finding("L05", "stub after a candidate", f"{c.sha[:12]} {c.subject} precedes the stub",
                   "the stub must be committed before any candidate or result", INVALID) for c in early]
    if kinds.count("K3") > 1:
        out.append(Finding("L05", "more than one stub", f"{kinds.count('K3')} K3 commits on the branch",
                           "one pre-registration per experiment branch", INVALID))
    return out


def _plan(f: Facts) -> list[Finding]:
    out = []
    registered = {e.cand: e for e in f.stub_page.plan} if f.stub_page else {}
    current = {e.cand: e for e in f.page.plan}
    for e in f.page.plan:
        if e.state == "open":
            out.append(Finding("L06", "plan item not reached", f"{e.line()}",
                               f"run it (`kgate cand ... {e.cand}`) or abandon it with a reason (`--abandon --reason`)", CAP))
        if registered and e.cand not in registered and "— extension: " not in e.text:
            out.append(Finding("L06", "extra candidate without a reason", e.line(),
                               "candidates outside the plan are recorded with `kgate cand ... --reason`", CAP))
    for cand in registered:
        if cand not in current:
            out.append(Finding("L06", "plan item removed", f"{cand} was pre-registered and is gone from the plan",
                               "restore the plan: pre-registered items are executed or abandoned, never deleted", CAP))
    return out


def _paragraphs(f: Facts) -> list[Finding]:
    out = []
    for label in PARAGRAPHS:
        if not (f.page.section(label) or "").strip():
            out.append(Finding("L07", "missing paragraph", f"## {label} is missing or empty",
                               "pre-register it in a new stub", CAP))
    predicted, criterion = f.page.section("Predicted signal") or "", f.page.section("Falsification criterion") or ""
    if predicted and criterion and criterion_repeats(predicted, criterion):
        out.append(Finding("L07", "criterion repeats the prediction", "the falsification criterion restates the predicted signal",
                           "state the observation that would refute the hypothesis", CAP))
    if f.stub_page is not None:
        changed = [label for label in PARAGRAPHS if (f.page.section(label) or "") != (f.stub_page.section(label) or "")]
        changed += [key for key in PREREGISTERED if f.page.front.get(key) != f.stub_page.front.get(key)]
        if changed:
            out.append(Finding("L07", "pre-registration edited", f"changed since the K3 commit: {', '.join(changed)}",
                               "the stub is the pre-registration: restore it, and pre-register changes as a new stub", INVALID))
    return out


def _reference(f: Facts) -> list[Finding]:
    out = []
    pin = f.pinned_reference_sha256
    page_sha = (f.page.front.get("reference") or {}).get("sha256")
    if page_sha != pin:
        out.append(Finding("L08", "reference differs from the pin", f"the page records {str(page_sha)[:12]}, the family pins {pin[:12]}",
                           "results against a changed reference are not comparable: new family or restore", INVALID))
    if f.reference_sha256_at_tip != pin:
        out.append(Finding("L08", "reference differs from the pin",
                           f"the branch's reference module hashes {str(f.reference_sha256_at_tip)[:12]}, the family pins {pin[:12]}",
                           "restore the reference module: it is never edited on an experiment branch", INVALID))
    for r in f.receipts:
        ref = r.summary.reference_sha256 if r.summary else None
        if ref is not None and ref != pin:
            out.append(Finding("L08", "receipt against another reference", f"{r.candidate}: {r.rel} used reference {ref[:12]}",
                               "re-run against the pinned reference", INVALID))
    return out


def _files(f: Facts) -> list[Finding]:
    out = []
    work, records = PurePosixPath(f.work_dir), PurePosixPath(f.records_dir)
    outside = sorted({p for c in f.commits for p in c.files
                      if not PurePosixPath(p).is_relative_to(work) and not PurePosixPath(p).is_relative_to(records)})
    if outside:
        out.append(Finding("L09", "files changed outside the work dir", ", ".join(outside),
                           f"a candidate changes only {f.work_dir}/; revert the others on the branch", CAP))
    for stray in f.stray_receipts:
        out.append(Finding("L09", "receipt committed outside receipts/", stray,
                           "git rm it from the branch; pass a receipt with `kgate cand --receipt FILE`, which files a copy "
                           "under receipts/ (verify without -o writes to .kgate/receipts/, which git ignores)", ADVISORY))
    for c in f.commits:
        for path, size in c.sizes.items():
            if _ARTIFACT.search(path) or size > ARTIFACT_BYTES:
                out.append(Finding("L09", "large artifact committed", f"{c.sha[:12]} adds {path} ({size} bytes)",
                                   "keep profiles and traces out of git (kgate verify --artifacts writes them elsewhere)", ADVISORY))
    return out


def _verdict_words(f: Facts) -> list[Finding]:
    out = []
    for row in f.page.ledger.rows:
        for name, cell in zip(("candidate", "class", "parity", "p50", "vs naive", "receipt", "why"),
                              (row.candidate, row.klass, row.parity, row.p50_ms, row.vs_naive, row.receipt, row.why)):
            if m := VERDICT_WORDS.search(cell):
                out.append(Finding("L10", "verdict language in the ledger", f"{row.candidate} {name}: {m.group(0)!r} in {cell!r}",
                                   "author-side cells say kept/rejected; the verdict comes from `kgate verdict`", ADVISORY))
    return out


def _filed(f: Facts) -> list[Finding]:
    if f.page.front.get("status") != "filed" and f.filed_page is None:
        return []
    if f.filed_page is None:
        return [Finding("L11", "filed without a K7 commit", "status: filed, but no K7 commit on the branch",
                        "file only with `kgate verdict`", INVALID)]
    k7 = min(i for i, c in enumerate(f.commits) if commits.kind(c.subject) == "K7")
    page_rel = f"{f.records_dir}/{f.page.path.name}"
    later = [c for c in f.commits[k7 + 1:] if page_rel in c.files]
    out = [Finding("L11", "page edited after filing", f"{c.sha[:12]} {c.subject!r} changes the filed page",
                   "a filed page is final: revert the edit", INVALID) for c in later]
    if f.page.text() != f.filed_page.text() and not later:  # an uncommitted edit
        out.append(Finding("L11", "page edited after filing", "the page differs from the K7 commit's",
                           "a filed page is final: `git checkout` it back", INVALID))
    return out


def _interpreted_support(f: Facts) -> list[Finding]:
    if f.page.front.get("verdict") != "supported":
        return []
    cited = f.page.front.get("verdict_receipt") or {}
    try:
        data = json.loads(f.verdict_receipt) if f.verdict_receipt else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or hashlib.sha256(f.verdict_receipt or b"").hexdigest() != cited.get("sha256"):
        return [Finding("L12", "supported claim without its receipt", f"the verdict cites {cited.get('path')!r}, "
                        "which is missing or does not hash as cited", "file only with `kgate verdict`", INVALID)]
    if data.get("interpreted", True):
        return [Finding("L12", "interpreted timings back a supported claim",
                        f"verdict supported cites {cited.get('path')}, whose timings were interpreted",
                        "a supported claim needs device timings: verify on the target device", INVALID)]
    return []


_GOTCHA = re.compile(r"\(gotcha ([^)\s]+)\)")


def _gotchas(f: Facts) -> list[Finding]:
    """A ledger row may say which gotcha row fired on its candidate: the row must exist."""
    from kgate import gotchas

    return [Finding("L13", "unknown gotcha row", f"{row.candidate} why: gotcha {m.group(1)!r} is not in the table",
                    "name a row `kgate gotcha --list` lists (kgate cand --gotcha checks it)", ADVISORY)
            for row in f.page.ledger.rows for m in _GOTCHA.finditer(row.why) if not gotchas.known(m.group(1))]


def _reading_budget(f: Facts) -> list[Finding]:
    """The knowledge-purchase budget the stub set (minutes of reading before the first candidate),
    checked from the commit times: the stub's commit to the first candidate's."""
    budget = (f.stub_page or f.page).front.get("reading_budget_min")  # as pre-registered
    k3 = next((c for c in f.commits if commits.kind(c.subject) == "K3"), None)
    first = next((c for c in f.commits if commits.kind(c.subject) == "cand" and " — abandoned: " not in c.subject), None)
    if not isinstance(budget, (int, float)) or isinstance(budget, bool) or k3 is None or first is None:
        return []
    spent = (first.time - k3.time) / 60
    if spent <= budget:
        return []
    return [Finding("L15", "reading over its budget", f"{spent:.0f} min from the stub ({k3.sha[:12]}) to the first "
                    f"candidate ({first.sha[:12]}); the stub set {budget:g} min",
                    "buy knowledge within the budget, or pre-register a larger one in the next stub", ADVISORY)]


def _ladder(f: Facts) -> list[Finding]:
    """The cost ladder: every climb above the page's class is recorded (`kgate cand --escalate`) and
    follows a candidate of the rung below whose receipt missed the registered bar."""
    stub = f.stub_page or f.page
    rows = f.page.ledger.rows
    summaries = {r.candidate: r.summary for r in f.receipts}
    out = []
    for i, candidate, src in ladder.climbs(str(stub.front.get("intervention_class")), [(r.candidate, r.klass, r.why) for r in rows]):
        if src is None:
            out.append(Finding("L16", "unrecorded escalation", f"{candidate} is {rows[i].klass}, above the registered "
                               f"class {stub.front.get('intervention_class')}, and no escalation was recorded",
                               "climb with `kgate cand --escalate FROM->TO --reason ...` after the cheaper class missed "
                               "the bar, or pre-register the class in a new stub", CAP))
            continue
        if (why := ladder.unbacked(src, stub.front.get("bar"), ladder.earlier(rows[:i], summaries))) is not None:
            out.append(Finding("L16", "escalation without a miss", f"{candidate} escalated from {src}: {why}",
                               "the ladder is climbed only after the cheaper class missed the bar", CAP))
    return out


def _no_peek(f: Facts) -> list[Finding]:
    return [Finding("L14", "no-peek violation", evidence, "a candidate may not read what the stub's no-peek list "
                    "names: the capability evaluation is void; start a new experiment", INVALID) for evidence in f.no_peek]


RULES: Final[tuple[Rule, ...]] = (
    _attestation, _receipts, _candidate_commits, _grammar, _stub_first, _plan, _paragraphs, _reference, _files,
    _verdict_words, _filed, _interpreted_support, _gotchas, _no_peek, _reading_budget, _ladder,
)


def lint(facts: Facts) -> list[Finding]:
    return [finding for rule in RULES for finding in rule(facts)]


def exit_code(findings: list[Finding]) -> int:
    if any(f.consequence != ADVISORY for f in findings):
        return 2
    return 1 if findings else 0
