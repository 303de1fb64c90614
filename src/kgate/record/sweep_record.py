"""`kgate sweep --record SLUG`: a plan's tile sweep run and recorded by one command. The open
experiment's next plan item is the sweep; each point becomes one candidate commit (the records'
grammar, `kgate cand`'s checks) with its own receipt and ledger row: the first point under the
plan item's id, the others as extensions that name the sweep. What `kgate cand` would refuse
for the work dir as it is (the page, the branch, the reference pin, files outside the work dir,
the no-peek list) is checked before any point runs. A sweep in which a point was an ANOMALY is
not recorded. If a commit fails part-way (a hook, a full disk), the points committed before it
stay (each commit is whole) and the report says which, and why the rest were not."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.record import experiment
from kgate.record.experiment import VERDICT_WORDS
from kgate.record.page import Page, PlanEntry
from kgate.record.stub import planned_what
from kgate.record.workspace import Workspace


@dataclass(frozen=True)
class SweepItem:
    """The plan item a recorded sweep executes, and where its points are committed."""

    ws: Workspace
    slug: str
    item: PlanEntry
    what: str  # the plan item's text before its prediction
    taken: frozenset[int]  # candidate numbers the plan and the ledger already use


def prepare(ws: Workspace, slug: str, candidate: Path) -> SweepItem:
    """Refuse now what would refuse a point's commit later: no open experiment, a page that takes
    no candidates, no open plan item, a candidate that is not the family's target."""
    ex = experiment.current(ws, slug)
    page = Page.load(ex.page_path)
    experiment.require_in_progress(ex, page)
    experiment.reference_pinned(ex)  # what the first point's commit would refuse, refused before any run
    changed = experiment.classify_changes(ex)
    experiment.refuse_peeking(ex, page, changed)
    target = (ex.worktree / ex.family.target).resolve()
    if Path(candidate).resolve() != target:
        raise KgateError(f"--record commits the family's target ({target}), and the sweep's candidate is {candidate}.",
                         f"write the kernel at {ex.family.target} and sweep it (drop -c), or sweep without --record.")
    item = next((e for e in page.plan if e.state == "open"), None)
    if item is None:
        raise KgateError(f"{ex.tag()} has no open plan item for the sweep to execute.",
                         "a sweep is a plan item (`cand2: tile sweep ...`): pre-register it in the next stub.")
    ids_used = [e.cand for e in page.plan] + [r.candidate for r in page.ledger.rows]
    taken = {int(text[4:]) for text in ids_used if experiment.CAND_ID.match(text)}
    return SweepItem(ws, slug, item, planned_what(item.text), frozenset(taken))


def ids(item: SweepItem, count: int) -> list[str]:
    """The plan item's id for the first point, then the next free ids."""
    out, n = [item.item.cand], max(item.taken, default=0)
    while len(out) < count:
        n += 1
        out.append(f"cand{n}")
    return out


def why(outcome: Any, best: Any) -> str:
    """The why-column of a point (`outcome`, `best`: gates.sweep.PointOutcome): empty for a point
    that failed with a receipt (cand writes `rejected: <command> FAIL at <check>` from it), else
    kept or rejected against the best timed point, in words the intervals support."""
    if not outcome.passed:  # an error's own words may hold a verdict word, which cells never carry
        return f"rejected: {VERDICT_WORDS.sub('[…]', outcome.reason)}" if outcome.reason.startswith("could not") else ""
    if outcome.speedup is None:
        return "kept: passes its gate; not timed here"
    if best is None:
        return "kept: passes; timed in an interpreter, so no point is the best"
    if outcome.label == best.label:
        return "kept: the best point of the sweep"
    if outcome.speedup["high"] < best.speedup["low"]:
        return f"rejected: slower than the best point, {best.label} (the intervals do not overlap)"
    return f"kept: not told apart from the best point, {best.label} (the intervals overlap)"


def record(item: SweepItem, points: Sequence[Any], best: Any,
           say: Callable[[str], None] = lambda _: None, done: list[Mapping[str, Any]] | None = None,
           ) -> list[Mapping[str, Any]]:
    """Commit every point (a verify.sweep.PointRecord), in grid order; what was committed is
    appended to `done` as it happens (so a caller still knows it when a later commit fails)."""
    from kgate.verify import receipt as receipts

    names = ids(item, len(points))
    done = [] if done is None else done
    with tempfile.TemporaryDirectory(prefix="kgate-sweep-record-") as scratch:
        for n, (cand, rec) in enumerate(zip(names, points), 1):
            path: Path | None = Path(scratch) / f"{cand}.json"
            if rec.receipt is not None:
                receipts.write(path, rec.receipt)
            elif rec.report is not None:
                path.write_text(rec.report + "\n")
            else:
                path = None
            reason = "" if n == 1 else f"point {n}/{len(points)} of the {names[0]} sweep"
            out = experiment.cand(item.ws, experiment.CandRequest(
                item.slug, cand, f"{item.what}, {rec.outcome.label}", path, why(rec.outcome, best), reason,
                point=dict(rec.outcome.point)))
            say(f"committed {out.sha[:12]} {out.message}")
            done.append({"candidate": cand, "point": dict(rec.outcome.point), "sha": out.sha, "message": out.message})
    return done
