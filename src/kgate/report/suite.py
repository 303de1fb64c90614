"""`kgate suite` rendered for a terminal: one row per candidate, then the summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table


def _speedup(row: Any) -> str:
    sp = row.speedup
    if sp is None:
        return "-"
    text = f"{sp['estimate']:.3f}x [{sp['low']:.3f}, {sp['high']:.3f}]"
    return text + (" (interpreted)" if row.interpreted else "")


def render_suite(rows: Sequence[Any], summary: Any, console: Console) -> None:
    table = Table(box=None, pad_edge=False, show_edge=False)
    for column in ("problem", "candidate", "status", "speedup [95% CI]", "why"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row.problem, row.candidate, row.status, _speedup(row), row.reason or "")
    console.print(f"kgate suite: {summary.candidates} candidate(s) of {summary.problems} problem(s)", soft_wrap=True)
    console.print(table)
    console.print(f"correct: {summary.correct}/{summary.candidates} ({summary.correct_rate:.0%}); timed (compiled "
                  f"programs): {summary.timed}; correct but interpreted (never counted as speedups): {summary.interpreted}",
                  soft_wrap=True)
    console.print("fast_p (correct and the interval's lower end above p, over all candidates): "
                  + ", ".join(f"fast_{p:g} = {v:.3f}" for p, v in summary.fast_p.items()), soft_wrap=True)
    g = summary.geomean
    console.print("geometric-mean speedup over timed correct candidates: "
                  + ("none (no candidate was timed)" if not g else f"{g['estimate']:.3f}x (one problem: no interval "
                     "across problems)" if "low" not in g else f"{g['estimate']:.3f}x [95% CI {g['low']:.3f}, "
                     f"{g['high']:.3f}] (bootstrap over {int(g['problems'])} problems)"), soft_wrap=True)
