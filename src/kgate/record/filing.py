"""`kgate verdict`: the filing step. The verdict is derived from a `verify --mode full`
receipt of the final candidate by the rules in `verdict`, capped by lint, written on the
page with the receipt it cites, appended to RESULTS.tsv and committed as K7."""

from __future__ import annotations

import datetime as dt
import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.jsonio import as_json, write_atomic
from kgate.record.summary import ReportSummary
from kgate.problem.module import file_sha256
from kgate.record import commits, lint as lints
from kgate.record.experiment import (
    Experiment, classify_changes, commit_record, current, require_in_progress, resolved_ledger,
)
from kgate.record.family import RESULTS_COLUMNS
from kgate.record.page import Page
from kgate.record.verdict import Decision, Evidence, decide


@dataclass(frozen=True)
class Filing:
    decision: Decision
    findings: tuple[lints.Finding, ...]
    sha: str
    message: str
    page: Path
    results_row: dict[str, str]
    receipt_rel: str


def check_receipt_fits(ex: Experiment, page: Page, path: Path) -> dict[str, Any]:
    """The receipt, checked: sealed, OK, full mode, this target, this bar, parity and variant."""
    from kgate.verify import check_receipt

    data = check_receipt.load(path)
    result = check_receipt.check_data(data, path, regenerate=True)
    if result.status != "OK":
        raise KgateError(
            f"receipt {path} is {result.status}: {'; '.join(result.findings) or 'see kgate verify-receipt'}.",
            "file with an intact receipt of the final candidate: `kgate verify --mode full ...`.",
        )
    if data.get("kind") != "verify" or data.get("mode") != "full":
        raise KgateError(f"receipt {path} is a {data.get('kind')} receipt of mode {data.get('mode')!r}.",
                         "a verdict needs `kgate verify --mode full` on the final candidate.")
    target = ex.worktree / ex.family.target
    if not target.is_file() or data["modules"]["candidate"]["sha256"] != file_sha256(target):
        raise KgateError(
            f"receipt {path} is for candidate sha256 {data['modules']['candidate']['sha256'][:12]}, not the final "
            f"candidate committed at {ex.family.target}.",
            f"verify the committed target: `kgate verify --mode full -c {target} ...`.",
        )
    from kgate.gates.parity import ParitySpec

    if data.get("bar") != page.front.get("bar"):
        raise KgateError(f"receipt {path} was graded against the bar {data.get('bar')!r}; the stub registered "
                         f"{page.front.get('bar')!r}.", f"re-run verify with --bar '{page.front.get('bar')}'.")
    if ParitySpec.parse(str(data.get("parity_spec"))).describe() != ParitySpec.parse(str(page.front.get("parity"))).describe():
        raise KgateError(f"receipt {path} checked parity with {data.get('parity_spec')!r}; the stub registered "
                         f"{page.front.get('parity')!r}.", f"re-run verify with --parity '{page.front.get('parity')}'.")
    op_point = dict(ex.family.op_point)
    if as_json(dict(data.get("overrides") or {})) != as_json(op_point):  # a tuple in family.toml, a list in JSON
        sets = " ".join(f"--set {k}={v}" for k, v in op_point.items()) or "no --set"
        raise KgateError(f"receipt {path} ran at op-point overrides {data.get('overrides') or {}}; the family's op-point is "
                         f"{op_point or 'CONFIG as shipped'}.", f"re-run verify with {sets}.")
    policy = (data["modules"]["reference"].get("model") or {}).get("weights", {}).get("policy", "shared")
    if policy != ex.family.weights:
        raise KgateError(f"receipt {path} ran with the reference's weights {policy}; the family registered "
                         f"{ex.family.weights}.", f"re-run verify with --weights {ex.family.weights}.")
    ReportSummary.from_json(data, path, "").check_dtype(ex.family.graded_dtype)
    ReportSummary.from_json(data, path, "").check_backend(ex.family)
    device = data.get("device", {})
    variant = f"{device.get('platform')}:{device.get('kind')}"
    if variant != page.front.get("variant"):
        raise KgateError(f"receipt {path} ran on {variant}; the experiment was registered for {page.front.get('variant')}.",
                         "verify on the device the stub was written for.")
    return data


def _speedup(data: dict[str, Any]) -> str:
    sp = data.get("gates", {}).get("timing", {}).get("speedup")
    if not isinstance(sp, dict):
        return "not timed"
    low, estimate, high = (float(sp[k]) for k in ("low", "estimate", "high"))  # JSON spells an open end "inf"
    text = f"{estimate:.3f}x [{low:.3f}, {high:.3f}]"
    return text + (" (interpreted)" if data.get("interpreted", True) else "")


def _ms(value: Any) -> str:
    return f"{value:.4g} ms" if isinstance(value, (int, float)) else "not timed"


def _section(decision: Decision, findings: list[lints.Finding], data: dict[str, Any], rel: str, sha: str) -> list[str]:
    timing = data.get("gates", {}).get("timing", {})
    bar = data.get("gates", {}).get("bar", {})
    parity = data.get("gates", {}).get("parity", {})
    lines = [
        f"**{decision.verdict}** (from the evidence: {decision.from_evidence}), derived by `kgate verdict`.",
        "",
        f"Receipt: `{rel}` (sha256 `{sha}`), `verify --mode full`, {data.get('timestamp', '?')}, "
        f"{data.get('device', {}).get('platform')}:{data.get('device', {}).get('kind')}, "
        f"{'interpreted' if data.get('interpreted', True) else 'device'} timings.",
        "",
        f"- speedup vs the reference: {_speedup(data)}",
        f"- p50: reference {_ms(timing.get('reference', {}).get('p50_ms'))}, "
        f"candidate {_ms(timing.get('candidate', {}).get('p50_ms'))}",
        f"- bar {data.get('bar')!r}: {bar.get('outcome', 'not graded')}",
        *(f"  - {c['text']}: {c['outcome']} — {c['arithmetic']}" for c in bar.get("clauses", [])),
        f"- parity {parity.get('status', 'not evaluated')} ({data.get('parity_spec')}); "
        f"firing {data.get('gates', {}).get('firing', {}).get('status', 'not evaluated')}; "
        f"integrity {data.get('gates', {}).get('integrity', {}).get('status', 'not evaluated')}",
        "",
        "Rules that fired:",
        "",
        *(f"- {r.code}: {r.text} → {r.verdict}" for r in decision.fired),
    ]
    advisories = [f for f in findings if f.consequence == lints.ADVISORY]
    if advisories:
        lines += ["", "Lint advisories:", "", *(f"- {f.code} {f.title}: {f.evidence}" for f in advisories)]
    return lines


def _results_row(ex: Experiment, page: Page, decision: Decision, data: dict[str, Any]) -> dict[str, str]:
    timing = data.get("gates", {}).get("timing", {})
    p50 = timing.get("candidate", {}).get("p50_ms")
    sp = timing.get("speedup", {}).get("estimate")
    first_sentence = (page.section("Hypothesis") or "").split(". ")[0].strip().rstrip(".")
    mark = " (interpreted)" if data.get("interpreted", True) else ""  # never to be read as a device number
    row = {
        "exp_id": ex.exp, "date": dt.date.today().isoformat(),
        "p50_ms": f"{p50:.6g}{mark}" if isinstance(p50, (int, float)) else "—",
        "speedup": f"{sp:.4f}{mark}" if isinstance(sp, (int, float)) else "—",
        # from the receipt's roofline (the reference's declared get_flops / get_bytes and the device's peaks);
        # never filled in by hand, and never from interpreter timings (measure computes none for them)
        **_roofline_cells(timing.get("roofline", {}).get("legs", {}).get("candidate", {})),
        "parity": str(data.get("gates", {}).get("parity", {}).get("status", "—")),
        "class": str(page.front.get("intervention_class")), "activity": str(page.front.get("activity")),
        "status": decision.verdict,
        "description": first_sentence + (" (interpreted timings)" if data.get("interpreted", True) else ""),
    }
    return {k: " ".join(str(v).split()) for k, v in row.items()}


def _roofline_cells(leg: dict[str, Any]) -> dict[str, str]:
    def cell(key: str, digits: int) -> str:
        value = leg.get(key)
        return f"{value:.{digits}g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"

    return {"tflops": cell("tflops", 4), "roofline_util": cell("roofline_util", 3)}


def _fileable(ws: Any, slug: str, exp: str) -> tuple[Experiment, Page]:
    ex = current(ws, slug)
    if ex.exp != exp:
        raise KgateError(f"the family worktree is on {ex.branch}, not on the {exp} experiment.",
                         f"check out kernel/{slug}-{exp} in {ex.worktree}, or pass {ex.exp}.")
    page = Page.load(ex.page_path)
    require_in_progress(ex, page)
    if classify_changes(ex):
        raise KgateError("the work dir has uncommitted changes: the final candidate is what is committed.",
                         f"record them (`kgate cand {slug} candN ...`) or discard them before filing.")
    return ex, page


def verify_and_file(ws: Any, slug: str, exp: str, *, budget_s: float = 20.0, lock_dir: Path | None = None,
                    say: Callable[[str], None] = lambda _: None) -> Filing:
    """Run `verify --mode full` on the committed final candidate, under the registered terms
    (bar, parity, op-point, class), and file from that receipt: the run that counts is the
    one made at filing time, so no earlier run can be picked for being the luckiest."""
    from kgate.verify import receipt as receipts
    from kgate.verify.screen import VerifyRequest, run_verify

    ex, page = _fileable(ws, slug, exp)
    with tempfile.TemporaryDirectory(prefix="kgate-verdict-") as tmp:
        request = VerifyRequest(
            reference=ex.worktree / ex.family.reference, candidate=ex.worktree / ex.family.target,
            klass=str(page.front.get("intervention_class")), overrides=dict(ex.family.op_point), dtype=ex.family.run_dtype,
            parity=str(page.front.get("parity")), bar=str(page.front.get("bar")), budget_s=budget_s, chip=ws.chip,
            lock_dir=lock_dir, mode="full", argv=("kgate", "verdict", slug, exp, "--verify"),
            artifacts=Path(tmp) / "artifacts", weights=ex.family.weights,
            backend=ex.family.forced_backend,
        )
        _, sealed = run_verify(request, say)
        path = Path(tmp) / f"{ex.exp}-verify.json"
        receipts.write(path, sealed)
        return file_verdict(ws, slug, exp, path)


def file_verdict(ws: Any, slug: str, exp: str, receipt: Path) -> Filing:
    ex, page = _fileable(ws, slug, exp)
    if not receipt.is_file():
        raise KgateError(f"receipt {receipt} does not exist.", "pass the receipt `kgate verify --mode full` wrote.")
    data = check_receipt_fits(ex, page, receipt)
    findings = lints.lint(lints.gather(ws, ex))
    caps = [f.cap() for f in findings if f.consequence != lints.ADVISORY]
    decision = decide(Evidence.from_receipt(data, ex.family.reference_sha256), caps)
    raw = receipt.read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    rel = f"receipts/{ex.exp}-verify.json"
    speed = _speedup(data)
    message = commits.checked("K7", f"K7({ex.tag()}): {decision.verdict} — {speed}")
    filed = (
        page.with_front(status="filed", verdict=decision.verdict, verdict_receipt={"path": rel, "sha256": sha})
        .with_ledger(resolved_ledger(ex, page.ledger))
        .with_section("Verdict", _section(decision, findings, data, rel, sha))
    )
    row = _results_row(ex, page, decision, data)
    results = ex.family.folder / "RESULTS.tsv"
    before = results.read_text() if results.is_file() else "\t".join(RESULTS_COLUMNS) + "\n"
    body = f"{message}\n\nexp: {ex.page_rel.as_posix()}"
    commit_sha = commit_record(ex, filed, body, [], {ex.records_rel / rel: raw})
    write_atomic(results, before + "\t".join(row[c] for c in RESULTS_COLUMNS) + "\n")
    return Filing(decision, tuple(findings), commit_sha, message, ex.page_path, row, rel)


BLOCKED_REASONS = ("tooling", "compiler", "device")
TRANSCRIPT_BYTES = 1024 * 1024


def file_blocked(ws: Any, slug: str, exp: str, reason: str, transcript: Path) -> Filing:
    """The honorable exit: a tool failed in a way the author could not fix, after at least two
    recorded attempts (candidates committed with the error in their why-column). Filed as
    `blocked` with the transcript, never as a result: the page says why, the transcript is
    committed beside the receipts with its sha256, RESULTS.tsv has the row, the commit is K7."""
    from kgate.record.verdict import Rule

    ex, page = _fileable(ws, slug, exp)
    if reason not in BLOCKED_REASONS:
        raise KgateError(f"--blocked {reason!r} is not one of {', '.join(BLOCKED_REASONS)}.",
                         "say what failed: --blocked tooling (kgate or jax), compiler, or device.")
    if not transcript.is_file() or transcript.stat().st_size == 0:
        raise KgateError(f"the transcript {transcript} does not exist or is empty.",
                         "pass the file holding the failing command and its full error output.")
    if transcript.stat().st_size > TRANSCRIPT_BYTES:
        raise KgateError(f"the transcript {transcript} is over {TRANSCRIPT_BYTES // 1024} KiB.",
                         "keep the failing command, its error and the two retries; not whole logs.")
    facts = lints.gather(ws, ex)
    findings = lints.lint(facts)
    void = [f for f in findings if f.consequence == lints.INVALID or f.code == "L03"]
    if void:  # a record lint voids, or whose ledger does not match its commits, is not filed blocked either
        raise KgateError("the record cannot be filed blocked: " + "; ".join(f"{f.code} {f.title}: {f.evidence}"
                                                                          for f in void[:3]) + ".",
                         f"fix what `kgate lint {slug}` names first.")
    passed = {r.candidate for r in facts.receipts if r.summary is not None and r.summary.status == "PASS"}

    work = facts.work_dir.rstrip("/") + "/"

    def committed(row: Any) -> bool:
        """Its ledger SHA is a commit of the branch that records this very candidate and changes the
        work dir (kgate cand commits nothing else: a candidate is a change)."""
        sha = facts.ledger_shas.get(row.candidate, "")
        return bool(sha) and any(c.sha.startswith(sha) and c.subject.startswith(f"{row.candidate}(")
                                 and any(f.startswith(work) for f in c.files)
                                 for c in facts.commits if commits.kind(c.subject) == "cand")

    # an attempt: a candidate committed on the branch, run (not abandoned), that did not pass
    attempts = [row for row in page.ledger.rows if "not run" not in row.p50_ms and committed(row)
                and row.candidate not in passed]
    if len(attempts) < 2:
        raise KgateError(f"{ex.tag()} has {len(attempts)} recorded attempt(s) that did not pass: blocked is filed only "
                         "after two.",
                         "retry with the error pasted into the why-column (`kgate cand SLUG candN --why '<error>'`), "
                         "twice; then file blocked.")
    raw = transcript.read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    rel = f"receipts/{ex.exp}-blocked-transcript.txt"
    decision = Decision("blocked", "blocked", (Rule("B1", f"{reason} failed after {len(attempts)} recorded attempts "
                                                      f"({', '.join(r.candidate for r in attempts)}): filed blocked, "
                                                      "with the transcript; no result", "blocked"),))
    message = commits.checked("K7", f"K7({ex.tag()}): blocked — {reason}")
    section = [f"**blocked** ({reason}), filed by `kgate verdict --blocked`: no result.", "",
               f"- attempts: {', '.join(f'{r.candidate} ({r.why})' for r in attempts)}",
               f"- transcript: `{rel}` (sha256 {sha})"]
    filed = (page.with_front(status="filed", verdict="blocked", blocked={"reason": reason, "transcript": rel,
                                                                         "sha256": sha})
             .with_ledger(resolved_ledger(ex, page.ledger)).with_section("Verdict", section))
    first_sentence = (page.section("Hypothesis") or "").split(". ")[0].strip().rstrip(".")
    row = {"exp_id": ex.exp, "date": dt.date.today().isoformat(), "p50_ms": "—", "speedup": "—", "tflops": "—",
           "roofline_util": "—", "parity": "—", "class": str(page.front.get("intervention_class")),
           "activity": str(page.front.get("activity")), "status": "blocked",
           "description": f"{first_sentence} (blocked: {reason})"}
    row = {k: " ".join(str(v).split()) for k, v in row.items()}
    results = ex.family.folder / "RESULTS.tsv"
    before = results.read_text() if results.is_file() else "\t".join(RESULTS_COLUMNS) + "\n"
    commit_sha = commit_record(ex, filed, f"{message}\n\nexp: {ex.page_rel.as_posix()}", [], {ex.records_rel / rel: raw})
    write_atomic(results, before + "\t".join(row[c] for c in RESULTS_COLUMNS) + "\n")
    return Filing(decision, (), commit_sha, message, ex.page_path, row, rel)


def decision_json(filing: Filing) -> dict[str, Any]:
    return {
        **filing.decision.to_json(),
        "findings": [f.to_json() for f in filing.findings],
        "commit": filing.sha,
        "message": filing.message,
        "page": str(filing.page),
        "receipt": filing.receipt_rel,
        "results_row": filing.results_row,
    }

