"""Terminal rendering of experiment records: the candidate ledger and the author's brief."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from kgate.record.page import LEDGER_COLUMNS, Ledger


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
