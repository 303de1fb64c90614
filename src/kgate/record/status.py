"""`kgate status`: where each family's experiment stands, and the next command, from the records alone.

The stages follow the authoring contract in order: a workspace, a family (binding), a
pre-registered experiment (the stub), a complete brief, the `loaded:` attestation, one
candidate per plan item (each gated, then committed with `kgate cand`), the verdict filed from
a full verification, then the report. The first stage that is not done is where the
experiment stands; its next command is what to run, and what blocks it is named. An agent
that runs `kgate status` and does what it says reaches a filed verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from shlex import quote
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.record import experiment, git, lint as lints
from kgate.record.family import load as load_family
from kgate.record.page import Page
from kgate.record.workspace import Workspace

STAGES = ("workspace", "family", "stub", "brief", "loaded", "candidates", "verdict", "report")


@dataclass(frozen=True)
class Status:
    """One family's place in the loop."""

    slug: str
    exp: str | None  # vNNN, or None before a stub
    stage: str  # the first stage not done (STAGES), or "pivoted"
    done: tuple[str, ...]  # what the records already hold, in order
    next: str  # the command to run next
    why: str  # why that is next
    blocked_by: tuple[str, ...] = field(default_factory=tuple)  # what must be fixed first

    def to_json(self) -> dict[str, Any]:
        return {"slug": self.slug, "exp": self.exp, "stage": self.stage, "done": list(self.done), "next": self.next,
                "why": self.why, "blocked_by": list(self.blocked_by)}


def no_workspace(where: Path) -> Status:
    return Status("", None, "workspace", (), "kgate init",
                  f"there is no kgate.toml at {where} or above it: a workspace comes first")


def no_family(ws: Workspace) -> Status:
    return Status("", None, "family", ("workspace",),
                  "kgate family new SLUG --reference PATH --target PATH",
                  f"the workspace has no family under {ws.experiments}: bind one reference and its kernel's ship path")


def families(ws: Workspace) -> list[str]:
    return sorted(p.parent.name for p in ws.experiments.glob("*/family.toml"))


def of(ws: Workspace, slug: str, lock: Callable[[int], Path]) -> Status:
    """The family's stage, from its binding, worktree branch, page, ledger and lint."""
    family = load_family(ws, slug)
    done = ["workspace", "family"]
    try:
        ex = experiment.current(ws, slug)
    except KgateError as exc:
        if not family.worktree.is_dir():
            return Status(slug, None, "stub", tuple(done), f"git worktree add {family.worktree} {family.integration_branch}",
                          "the family's worktree is missing", (exc.problem,))
        branch = git.git(family.worktree, "rev-parse", "--abbrev-ref", "HEAD", check=False)
        if branch != family.integration_branch:  # not simply before a stub: say what is wrong, suggest no stub
            return Status(slug, None, "stub", tuple(done), exc.fix, f"the family's worktree is on {branch!r}",
                          (exc.problem,))
        return Status(slug, None, "stub", tuple(done),
                      f"kgate stub {quote(slug)} --bar BAR --hypothesis H --mechanism M --predicted P --criterion C "
                      "--diagnosis D --reading R --plan 'cand1: <what> — predict <signal>'",
                      "no experiment is pre-registered on the family's worktree: the stub comes before any candidate")
    page = Page.load(ex.page_path)
    done.append(f"stub {ex.exp}")
    state = page.front.get("status")
    if state == "pivoted":
        to = (page.front.get("pivot") or {}).get("to", "<class>")
        return Status(slug, ex.exp, "pivoted", tuple(done), f"kgate stub {quote(slug)} --class {quote(str(to))} ...",
                      f"{ex.tag()} was pivoted to {to}: its plan is closed, the new class needs its own stub")
    if state == "filed":
        done += ["brief", "loaded", "candidates", f"verdict {page.front.get('verdict')}"]
        return Status(slug, ex.exp, "report", tuple(done), f"kgate report {quote(slug)} {ex.exp} --html report.html",
                      f"{ex.tag()} is filed ({page.front.get('verdict')}): the report is the output contract's last "
                      f"piece; a new experiment starts with `kgate stub {slug} ...`")
    if state != "in_progress":
        return Status(slug, ex.exp, "stub", tuple(done), f"kgate lint {quote(slug)}",
                      f"{ex.tag()} has status {state!r}, which no kgate command writes", (f"status {state!r}",))
    brief = experiment.brief(ws, slug, lock)
    if brief.missing:
        return Status(slug, ex.exp, "brief", tuple(done), f"kgate brief {quote(slug)}",
                      "the brief is incomplete: each missing item is supplied from the records, never improvised",
                      brief.missing)
    done.append("brief")
    ledger = page.ledger
    if ledger.loaded is None:
        reading = brief.items.get("required reading", [])
        return Status(slug, ex.exp, "loaded", tuple(done),
                      f"kgate ledger {quote(slug)} --loaded {quote(', '.join(reading) or 'what you read')}",
                      "attest what was read before the first candidate (`loaded:` heads the ledger)")
    done.append("loaded")
    open_items = [e for e in page.plan if e.state == "open"]
    if open_items:
        item = open_items[0]
        target = family.worktree / family.target
        recorded = len([e for e in page.plan if e.state != "open"])
        receipt = quote(f"{item.cand}.json")
        # two commands, the second whatever the first's exit code: a candidate that FAILs is recorded too
        return Status(slug, ex.exp, "candidates", tuple(done),
                      f"kgate gate --family {quote(slug)} -o {receipt}; kgate cand {quote(slug)} {item.cand} "
                      f"--receipt {receipt} --why '<kept or rejected, and why>'",
                      f"{recorded} of {len(page.plan)} plan items recorded; next {item.cand}: {item.text} (write it at "
                      f"{target}, gate it under the family's registered terms, then commit it as one candidate, "
                      "kept or rejected)")
    done.append("candidates")
    findings = lints.lint(lints.gather(ws, ex))
    blocking = tuple(f"{f.code} {f.title}: {f.evidence} (fix: {f.fix})" for f in findings
                     if f.consequence == lints.INVALID)
    return Status(slug, ex.exp, "verdict", tuple(done), f"kgate verdict {quote(slug)} {ex.exp} --verify",
                  "every plan item is recorded: verify the final candidate in full under the registered terms and "
                  "file the verdict the receipt gives", blocking)
