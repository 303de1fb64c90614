"""The cost ladder: flag → xla-rewrite → kernel-authored. A candidate climbs a rung only after a
candidate of the rung below missed the registered bar; `kgate cand --escalate FROM->TO` records the
climb in the ledger's why-column, and `kgate lint` checks every climb (L16). Pure logic: the
rows and their receipts' numbers come in, a reason (or None) goes out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kgate.errors import KgateError, article
from kgate.record.summary import ReportSummary

LADDER: Final = ("flag", "xla-rewrite", "kernel-authored")  # cheapest first; `refute` is not a rung
MARK: Final = re.compile(r"\(escalated (?P<src>[a-z-]+)→(?P<dst>[a-z-]+): (?P<reason>[^()]*)\)")


def rung(klass: str) -> int | None:
    return LADDER.index(klass) if klass in LADDER else None


def parse(transition: str) -> tuple[str, str]:
    """`FROM->TO` (or `FROM→TO`): two rungs of the ladder, going up."""
    src, sep, dst = transition.replace("->", "→").partition("→")
    src, dst = src.strip(), dst.strip()
    if not sep or rung(src) is None or rung(dst) is None:
        raise KgateError(f"--escalate {transition!r} is not FROM->TO over the ladder {' → '.join(LADDER)}.",
                         "name two rungs, e.g. --escalate xla-rewrite->kernel-authored.")
    if rung(dst) <= rung(src):  # type: ignore[operator]
        raise KgateError(f"--escalate {src}->{dst} does not climb the ladder ({' → '.join(LADDER)}).",
                         "an escalation goes to a costlier class; a cheaper candidate needs only --class.")
    if rung(dst) != rung(src) + 1:  # type: ignore[operator]
        skipped = LADDER[rung(src) + 1]  # type: ignore[operator]
        raise KgateError(f"--escalate {src}->{dst} skips the {skipped} rung.",
                         f"climb one rung at a time: {article(skipped)} {skipped} candidate that misses the bar first "
                         f"(--escalate {src}->{skipped}, then {skipped}->{dst}).")
    return src, dst


def mark(src: str, dst: str, reason: str) -> str:
    reason = " ".join(reason.replace("(", "[").replace(")", "]").split())
    return f"(escalated {src}→{dst}: {reason})"


@dataclass(frozen=True)
class Earlier:
    """A recorded candidate before the escalation: its id, class, and its receipt's numbers (if any)."""

    candidate: str
    klass: str
    summary: ReportSummary | None


def earlier(rows: Sequence[Any], summaries: Mapping[str, ReportSummary | None]) -> list[Earlier]:
    """The ledger rows (page.LedgerRow) with their receipts' numbers, as `unbacked` reads them."""
    return [Earlier(row.candidate, row.klass, summaries.get(row.candidate)) for row in rows]


def same_bar(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and " ".join(a.split()) == " ".join(b.split())


def unbacked(src: str, bar: str | None, earlier: Sequence[Earlier]) -> str | None:
    """Why an escalation from `src` is not backed, or None when an earlier `src` candidate's
    receipt graded the registered bar MISSED on device-backed timings (a miss against another bar,
    an UNDECIDED one, interpreter timings, a wrong candidate or no receipt do not count: a cheaper
    class is left only when it failed). A flag's miss comes from `kgate flags`, the only command
    that times a flag against its absence."""
    lower = [e for e in earlier if e.klass == src]
    if not lower:
        return f"no earlier candidate of class {src} was recorded"
    if any(_missed(e.summary, src, bar) for e in lower):
        return None
    seen = "; ".join(f"{e.candidate}: {_graded(e.summary, bar)}" for e in lower)
    return f"no {src} candidate missed the registered bar ({bar or 'none registered'}): {seen}"


def _missed(summary: ReportSummary | None, src: str, bar: str | None) -> bool:
    return (summary is not None and summary.bar_outcome == "MISSED" and same_bar(summary.bar, bar)
            and not summary.interpreted and (src != "flag" or summary.command == "flags"))


def _graded(summary: ReportSummary | None, bar: str | None) -> str:
    if summary is None:
        return "no receipt"
    if summary.interpreted:
        return "interpreter timings (they say nothing of the device)"
    if summary.bar_outcome is None:
        return f"its {summary.command} report graded no bar"
    if not same_bar(summary.bar, bar):
        return f"graded another bar ({summary.bar}: {summary.bar_outcome})"
    if summary.bar_outcome == "MISSED":
        return f"its {summary.command} report missed the bar, but a flag's miss comes from `kgate flags`"
    return f"bar {summary.bar_outcome}"


def climbs(page_class: str, rows: Sequence[tuple[str, str, str]]) -> list[tuple[int, str, str | None]]:
    """Each row (candidate, class, why) that climbs above the page's class or the last recorded
    rung: (index, candidate, the escalation's FROM class, or None when the climb was not recorded)."""
    reached = rung(page_class)
    out = []
    for i, (candidate, klass, why) in enumerate(rows):
        m = MARK.search(why)
        if m and m["dst"] == klass and (top := rung(klass)) is not None:
            out.append((i, candidate, m["src"]))
            reached = top if reached is None else max(reached, top)
        elif reached is not None and (r := rung(klass)) is not None and r > reached:
            out.append((i, candidate, None))
    return out
