"""Terminal rendering of a report with rich: a header, one row per check, the next step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kgate.verify.outcome import Report

_STYLE = {"PASS": "green", "FAIL": "bold red", "ANOMALY": "bold magenta", "ADVISORY": "yellow", "SKIPPED": "dim"}


def _op_point(context: dict[str, Any]) -> str:
    op = context.get("op_point") or {}
    values = ", ".join(f"{k}={v}" for k, v in (op.get("values") or {}).items())
    return f"{op.get('source', '?')} ({values})" if values else str(op.get("source", "?"))


def _shown(path: str | None) -> str:
    """A path relative to the working directory when it lies below it."""
    if not path:
        return "?"
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def render_report(report: Report, console: Console) -> None:
    ctx = report.context
    status = report.status
    console.print(Text.assemble(f"kgate {report.command}: ", (status, _STYLE[status])))
    device = ctx.get("device", {})
    mode = "interpret mode" if ctx.get("interpreted") else "compiled"
    console.print(f"  reference  {_shown(ctx.get('reference', {}).get('path'))}")
    console.print(f"  candidate  {_shown(ctx.get('candidate', {}).get('path'))}  \\[{ctx.get('class')}]")
    console.print(f"  op-point   {_op_point(ctx)}   seeds {ctx.get('seeds')}")
    console.print(f"  device     {device.get('platform')} ({device.get('kind')}), {mode}")
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("gate")
    table.add_column("check")
    table.add_column("status")
    table.add_column("evidence", overflow="fold")
    for name, gate in report.gates.items():
        if gate.status == "SKIPPED":
            table.add_row(name, "-", Text("SKIPPED", _STYLE["SKIPPED"]), gate.skipped_reason)
        for check in gate.checks:
            table.add_row(name, check.name, Text(check.status, _STYLE.get(check.status, "")), check.detail)
    console.print(table)
    for advisory in report.advisories:
        console.print(Text(f"advisory: {advisory}", _STYLE["ADVISORY"]), soft_wrap=True)
    console.print(Text(f"next: {report.next_step}", "bold" if status != "PASS" else ""), soft_wrap=True)


def render_error(problem: str, fix: str, console: Console) -> None:
    # soft_wrap: an agent greps these lines, so never break them at the terminal width.
    console.print(Text.assemble(("error: ", "bold red"), problem), soft_wrap=True)
    console.print(Text.assemble(("  fix: ", "bold"), fix), soft_wrap=True)
