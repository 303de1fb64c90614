"""`kgate suite` rendered for a terminal (one row per candidate, then the summary) and as a
self-contained HTML page with plots."""

from __future__ import annotations

import math
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
        table.add_row(row.problem, row.candidate, row.status, _speedup(row), row.why)
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


# -- HTML ---------------------------------------------------------------------------------

def to_html(rows: Sequence[Any], summary: Any, title: str = "kgate suite") -> str:
    """One self-contained page (no scripts, no external files): the summary, the speedup of
    every timed candidate with its interval, the fast_p curve, and every row."""
    import html

    from kgate.report.author import CSS, SpeedupPoint, speedup_svg

    e = html.escape
    points = tuple(SpeedupPoint(f"{r.problem}/{r.candidate}", r.speedup["estimate"], r.speedup["low"],
                                r.speedup["high"], r.interpreted, None)
                   for r in rows if r.correct and r.speedup is not None)
    g = summary.geomean
    geomean = ("none (no candidate was timed)" if not g else f"{g['estimate']:.3f}x (one problem: no interval across "
               "problems)" if "low" not in g else f"{g['estimate']:.3f}x [95% CI {g['low']:.3f}, {g['high']:.3f}] "
               f"(bootstrap over {int(g['problems'])} problems)")
    facts = [f"{summary.candidates} candidate(s) of {summary.problems} problem(s)",
             f"correct: {summary.correct}/{summary.candidates} ({summary.correct_rate:.0%})",
             f"timed on a device clock (compiled programs): {summary.timed}",
             f"correct but interpreted (never counted as speedups): {summary.interpreted}",
             "fast_p (correct and the interval's lower end above p, over all candidates): "
             + ", ".join(f"fast_{p:g} = {v:.3f}" for p, v in summary.fast_p.items()),
             f"geometric-mean speedup over timed correct candidates: {geomean}"]
    table = ["<table><tr>", *(f"<th>{h}</th>" for h in ("problem", "candidate", "status", "speedup [95% CI]", "why")),
             "</tr>"]
    for r in rows:
        table += [f'<tr data-status="{e(r.status)}">', *(f"<td>{e(c)}</td>" for c in (
            r.problem, r.candidate, r.status, _speedup(r), r.why)), "</tr>"]
    table.append("</table>")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{e(title)}</title>",
        f"<style>{CSS}</style></head><body>", f"<h1>{e(title)}</h1>",
        "<ul>", *(f"<li>{e(f)}</li>" for f in facts), "</ul>",
        "<h2>Speedups</h2>", "<figure>", speedup_svg(points),
        "<figcaption>Speedup vs the reference of each correct candidate that was timed: point estimate and 95% "
        "interval (orange: interpreted timings, never counted); dashed: 1.0x.</figcaption></figure>",
        "<h2>fast_p</h2>", "<figure>", fast_p_svg(rows, summary),
        "<figcaption>The share of all candidates that are correct and whose interval's lower end exceeds p, as p "
        "grows; the dots are the reported fast_p values.</figcaption></figure>",
        "<h2>Rows</h2>", "".join(table),
        "</body></html>",
    ])


def fast_p_svg(rows: Sequence[Any], summary: Any) -> str:
    """fast_p as a step curve over p, from 0 to past the largest lower end (or 2.5x)."""
    from kgate.report.author import ticks
    from kgate.suite.summary import fast_p

    width, height, left, bottom, top = 640, 240, 50, 35, 15
    lows = [r.speedup["low"] for r in rows if r.timed and r.speedup is not None and math.isfinite(r.speedup["low"])]
    p_max = max([2.5, *(1.1 * low for low in lows)])
    x = lambda p: left + p / p_max * (width - left - 15)  # noqa: E731
    y = lambda share: height - bottom - share * (height - bottom - top)  # noqa: E731
    steps = sorted({0.0, *(low for low in lows if low < p_max), p_max})
    path = []
    for i, p in enumerate(steps[:-1]):  # fast_p is constant on [p, next p): a lower end equal to p does not count
        share = fast_p(rows, p)
        path.append(f"{'M' if i == 0 else 'L'}{x(p):.1f} {y(share):.1f} L{x(steps[i + 1]):.1f} {y(share):.1f}")
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" data-plot="fast_p" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="fast_p against p">',
             f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - 15}" y2="{y(0):.1f}" stroke="#888"/>',
             f'<line x1="{left}" y1="{y(0):.1f}" x2="{left}" y2="{y(1):.1f}" stroke="#888"/>',
             f'<line x1="{x(1.0):.1f}" y1="{y(0):.1f}" x2="{x(1.0):.1f}" y2="{y(1):.1f}" stroke="#888" '
             'stroke-dasharray="4 3"/>',
             *(f'<text x="{left - 6}" y="{y(s) + 4:.1f}" font-size="11" text-anchor="end">{s:g}</text>'
               for s in (0, 0.5, 1)),
             *(f'<text x="{x(t):.1f}" y="{height - bottom + 15}" font-size="11" text-anchor="middle">{t:g}x</text>'
               for t in ticks(0.0, p_max)),
             f'<text x="{(left + width) / 2:.0f}" y="{height - 5}" font-size="11" text-anchor="middle">p</text>',
             f'<path d="{" ".join(path)}" fill="none" stroke="#1f5fa8" stroke-width="2"/>']
    for p, share in summary.fast_p.items():
        parts.append(f'<circle data-p="{p:g}" cx="{x(p):.1f}" cy="{y(share):.1f}" r="4" fill="#1f5fa8">'
                     f'<title>fast_{p:g} = {share:.3f}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)
