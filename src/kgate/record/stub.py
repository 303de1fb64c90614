"""`kgate stub`: the pre-registration. An experiment page (Markdown with front-matter)
holding the hypothesis, mechanism, predicted signal, falsification criterion, bar and
candidate plan, committed on its own branch before any candidate exists."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgate.errors import KgateError
from kgate.gates.bar import parse_bar
from kgate.problem.module import file_sha256
from kgate.record import git, nopeek
from kgate.record.family import Family, load as load_family
from kgate.record.page import INTERVENTION_CLASSES, PARAGRAPHS, PlanEntry, format_front
from kgate.record.workspace import Workspace

ACTIVITIES = ("optimization", "capability-eval")
# What separates the what from the prediction: an em dash as written by kgate, or what people
# type (an en dash, "--", "-"), always with spaces around it and "predict" after it.
PLAN_SEPARATOR = r"\s+(?:—|–|--|-)\s+predict\s+"


def planned_what(text: str) -> str:
    """A plan item's text before its prediction: what the candidate is (`kgate cand`'s default --what)."""
    return re.split(PLAN_SEPARATOR, text)[0].strip()


_PLAN_ITEM = re.compile(rf"^(cand[0-9]+):\s*(.+?){PLAN_SEPARATOR}(.+)$")
_PAGE = re.compile(r"^\d{4}-\d{2}-\d{2}-v(\d{3})-[a-z0-9-]+\.md$")


@dataclass(frozen=True)
class StubRequest:
    slug: str
    hypothesis: str
    mechanism: str
    predicted: str
    criterion: str
    bar: str
    plan: tuple[str, ...]
    intervention_class: str = "kernel-authored"
    activity: str = "optimization"
    category: str = "kernel"
    diagnosis: str = ""  # what profiling said about the reference; `kgate brief` needs it
    reading: tuple[str, ...] = ()  # required reading; `kgate brief` needs it
    no_peek: tuple[str, ...] = ()  # what candidates must not read (paths or modules): checked by `kgate cand`
    reading_budget_min: float | None = None  # minutes of reading before the first candidate: `kgate lint` checks it


def parse_plan(items: Sequence[str]) -> list[PlanEntry]:
    if not items:
        raise KgateError("the candidate plan is empty.", "give at least one --plan 'cand1: <what> — predict <signal>'.")
    plan, seen = [], set()
    for raw in items:
        m = _PLAN_ITEM.match(raw.strip().removeprefix("- [ ]").strip())
        if not m:
            raise KgateError(
                f"plan item {raw!r} is not of the form 'candN: <what> — predict <signal>'.",
                "write e.g. 'cand1: fuse the reduction into one pass - predict 1.3x at seq 4096' (the separator "
                "before 'predict' may be ' — ', ' – ', ' -- ' or ' - ').",
            )
        if "<what>" in m.group(2) or "<signal>" in m.group(3):
            raise KgateError(f"plan item {raw!r} still holds the template's placeholders.", "write what the candidate does.")
        if m.group(1) in seen:
            raise KgateError(f"plan item {m.group(1)} appears twice.", "number the candidates cand1, cand2, ...")
        seen.add(m.group(1))
        plan.append(PlanEntry(m.group(1), "open", f"{m.group(2)} — predict {m.group(3)}"))
    return plan


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9%.]+", " ", text.lower()).split())


def criterion_repeats(predicted: str, criterion: str) -> bool:
    """The falsification criterion restates the predicted signal (one contains the other)."""
    p, c = _norm(predicted), _norm(criterion)
    return p == c or bool(p and p in c) or bool(c and c in p)


def validate(request: StubRequest) -> list[PlanEntry]:
    for label, text in zip(PARAGRAPHS, (request.hypothesis, request.mechanism, request.predicted, request.criterion)):
        if not text.strip():
            raise KgateError(f"the {label} paragraph is empty.", f"write the {label} (it is part of the pre-registration).")
    if criterion_repeats(request.predicted, request.criterion):
        raise KgateError(
            "the falsification criterion repeats the predicted signal.",
            "state what observation would refute the hypothesis, not what you expect to see.",
        )
    if request.intervention_class not in INTERVENTION_CLASSES:
        raise KgateError(f"class {request.intervention_class!r} is not an intervention class.", f"use one of {', '.join(INTERVENTION_CLASSES)}.")
    if request.activity not in ACTIVITIES:
        raise KgateError(f"activity {request.activity!r} is not one of {', '.join(ACTIVITIES)}.", "pass --activity optimization.")
    parse_bar(request.bar)
    for item in request.reading:  # each is attested later as one item of `loaded: [a, b]`
        if any(ch in item for ch in "[],"):
            raise KgateError(f"--reading {item!r} holds a bracket or a comma, which the ledger's `loaded: [...]` "
                             "attestation cannot carry.", "write it without them, e.g. --reading 'Pallas guide: pipelining'.")
    budget = request.reading_budget_min
    if budget is not None and not (0 < budget <= 10080):
        raise KgateError(f"--reading-budget {budget:g} is not a number of minutes from 0 to a week.",
                         "pass the minutes of reading you allow before the first candidate, e.g. --reading-budget 30.")
    return parse_plan(request.plan)


def next_experiment(worktree: Path, pages_dir: Path, slug: str, say: Callable[[str], None]) -> int:
    """One past the highest page number; branches already taken are skipped (and said)."""
    pages = [int(m.group(1)) for p in pages_dir.glob("*.md") if (m := _PAGE.match(p.name))]
    number = max(pages, default=0) + 1
    while git.branch_exists(worktree, f"kernel/{slug}-v{number:03d}"):
        say(f"branch kernel/{slug}-v{number:03d} already exists (it is left as it is): using v{number + 1:03d}")
        number += 1
    return number


def from_markdown(text: str) -> dict[str, object]:
    """The four labelled paragraphs and the plan items from a Markdown draft (## headings)."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        heading = re.match(r"^##\s+(.+?)\s*$", line)
        if heading:
            current = heading.group(1).strip().lower()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    get = lambda name: "\n".join(sections.get(name.lower(), [])).strip()  # noqa: E731
    plan = [ln.strip() for ln in sections.get("candidate plan", []) if ln.strip().startswith("- [")]
    return {
        "hypothesis": get("Hypothesis"),
        "mechanism": get("Mechanism"),
        "predicted": get("Predicted signal"),
        "criterion": get("Falsification criterion"),
        "plan": tuple(plan),
        "diagnosis": get("Diagnosis"),
        "reading": tuple(
            item for ln in sections.get("required reading", [])
            if (item := ln.strip().removeprefix("-").strip()) and not item.startswith("<")  # the template's placeholder
        ),
    }


TEMPLATE = """## Diagnosis

## Required reading

- <document or section>

## Hypothesis

## Mechanism

## Predicted signal

## Falsification criterion

## Candidate plan

- [ ] cand1: <what> — predict <signal>
"""


def render(request: StubRequest, plan: Sequence[PlanEntry], *, exp: str, variant: str, branch: str,
           family: Family, target_sha: str | None, today: str) -> str:
    front = {
        "status": "in_progress", "exp": exp, "slug": request.slug, "date": today, "variant": variant,
        "intervention_class": request.intervention_class, "activity": request.activity, "category": request.category,
        "bar": request.bar, "parity": family.parity, "branch": branch,
        "reference": {"path": family.reference.as_posix(), "sha256": family.reference_sha256},
        "target": {"path": family.target.as_posix(), "sha256": target_sha},
        **({"no_peek": list(request.no_peek)} if request.no_peek else {}),
        **({"reading_budget_min": request.reading_budget_min} if request.reading_budget_min is not None else {}),
    }
    head = [*format_front(front), "", f"# {request.slug} {exp}", ""]
    body = ["## Diagnosis", "", request.diagnosis.strip(), ""] if request.diagnosis.strip() else []
    if request.reading:
        body += ["## Required reading", "", *(f"- {item}" for item in request.reading), ""]
    for label, text in zip(PARAGRAPHS, (request.hypothesis, request.mechanism, request.predicted, request.criterion)):
        body += [f"## {label}", "", text.strip(), ""]
    body += ["## Candidate plan", "", *(item.line() for item in plan), ""]
    return "\n".join(head + body)


def create(ws: Workspace, request: StubRequest, variant: str, say: Callable[[str], None] = lambda _: None) -> Path:
    """Write and commit the stub on a new branch kernel/<slug>-vNNN in the family worktree."""
    plan = validate(request)
    family = load_family(ws, request.slug)
    worktree = family.worktree
    if git.git(worktree, "status", "--porcelain"):
        raise KgateError(f"the family worktree {worktree} has uncommitted changes.", "commit or discard them first.")
    current = git.git(worktree, "rev-parse", "--abbrev-ref", "HEAD")
    if current == "HEAD":
        raise KgateError(f"the family worktree {worktree} is on a detached HEAD.", f"check out {family.integration_branch} there.")
    reference = worktree / family.reference
    if not reference.is_file() or file_sha256(reference) != family.reference_sha256:
        raise KgateError(
            f"the reference module {family.reference} no longer matches the family's pinned sha256.",
            "restore it, or start a new family: results against a changed reference are not comparable.",
        )
    nopeek.parse(request.no_peek, worktree, must_exist=True)  # each entry a path or module of the repository
    target = worktree / family.target
    pages = worktree / family.records_rel(ws.home_repo)
    number = next_experiment(worktree, pages, request.slug, say)
    exp = f"v{number:03d}"
    branch = f"kernel/{request.slug}-{exp}"
    today = dt.date.today().isoformat()
    page = pages / f"{today}-{exp}-{request.slug}.md"
    text = render(request, plan, exp=exp, variant=variant, branch=branch, family=family,
                  target_sha=file_sha256(target) if target.is_file() else None, today=today)
    git.git(worktree, "checkout", "-q", "-b", branch, family.integration_branch)
    if variant.startswith("cpu:") and request.intervention_class == "kernel-authored":
        say(f"note: this experiment's variant is {variant}: here a kernel-authored candidate runs in interpret mode, "
            "its timings are interpreter timings, and the verdict can only be inconclusive (rule V4). For a "
            "device-backed verdict, write the stub on the target device (a TPU or GPU host): the variant is read "
            "from the device there.")
    try:
        pages.mkdir(parents=True, exist_ok=True)
        page.write_text(text)
        git.git(worktree, "add", str(page))
        git.git(worktree, "commit", "-q", "-m", f"K3({request.slug} {exp}): stub — {request.slug}")
    except BaseException:
        page.unlink(missing_ok=True)
        git.git(worktree, "reset", "-q", "--hard", check=False)
        git.git(worktree, "checkout", "-q", current, check=False)
        git.git(worktree, "branch", "-D", branch, check=False)
        raise
    say(f"committed the stub on {branch}: K3({request.slug} {exp}): stub — {request.slug}")
    return page
