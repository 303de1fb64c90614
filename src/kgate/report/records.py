"""Terminal rendering of experiment records: the candidate ledger and the author's brief."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from kgate.record.page import Ledger


def render_ledger(title: str, ledger: Ledger, console: Console) -> None:
    if ledger.loaded is None:
        console.print("loaded: (no attestation: set it with `kgate ledger SLUG --loaded ...`)", style="yellow", soft_wrap=True)
    else:
        console.print(f"loaded: [{', '.join(ledger.loaded)}]", markup=False, soft_wrap=True)
    if not ledger.rows:
        console.print(f"{title}: no candidates yet", soft_wrap=True)
        return
    console.print(title, style="bold", markup=False, soft_wrap=True)
    for line in ledger.lines()[2 if ledger.loaded is not None else 0:]:  # the Markdown table, as on the page
        console.print(line, markup=False, soft_wrap=True, highlight=False)


def render_brief(slug: str, items: dict[str, Any], missing: tuple[str, ...], console: Console) -> None:
    console.print(f"brief for {slug}", style="bold")
    for key, value in items.items():
        if isinstance(value, dict):
            console.print(f"- {key}:", soft_wrap=True)
            for k, v in value.items():
                console.print(f"    {k}: {v}", markup=False, soft_wrap=True)
        elif isinstance(value, list):
            console.print(f"- {key}:", soft_wrap=True)
            for v in value:
                console.print(f"    {v}", markup=False, soft_wrap=True)
        else:
            console.print(f"- {key}: {value}", markup=False, soft_wrap=True)
    for item in missing:
        console.print(f"MISSING {item}", style="bold red", markup=False, soft_wrap=True)


_CONSEQUENCE_STYLE = {"advisory": "yellow", "cap: inconclusive": "bold yellow", "invalid": "bold red"}


def render_findings(tag: str, findings: list[Any], console: Console) -> None:
    if not findings:
        console.print(f"lint {tag}: clean", style="green")
        return
    for f in findings:
        console.print(f"{f.code} [{f.consequence}] {f.title}: {f.evidence}", style=_CONSEQUENCE_STYLE[f.consequence],
                      markup=False, soft_wrap=True)
        console.print(f"     fix: {f.fix}", markup=False, soft_wrap=True)
    worst = "invalid" if any(f.consequence == "invalid" for f in findings) else \
        "cap: inconclusive" if any(f.consequence == "cap: inconclusive" for f in findings) else "advisory"
    console.print(f"lint {tag}: {len(findings)} finding(s); worst consequence: {worst}", markup=False, soft_wrap=True)


def render_filing(filed: Any, console: Console) -> None:
    d = filed.decision
    for rule in d.fired:
        console.print(f"rule {rule.code}: {rule.text} -> {rule.verdict}", markup=False, soft_wrap=True)
    style = {"supported": "bold green", "refuted": "bold", "inconclusive": "bold yellow", "invalid": "bold red",
             "blocked": "bold yellow"}[d.verdict]
    console.print(f"verdict: {d.verdict}", style=style)
    console.print(f"kgate verdict: committed {filed.sha[:12]} {filed.message}", markup=False, soft_wrap=True)
    console.print(f"kgate verdict: RESULTS.tsv row {filed.results_row['exp_id']} {filed.results_row['status']}",
                  markup=False, soft_wrap=True)
