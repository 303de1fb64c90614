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
    # Paths, op-point values and evidence quote user text: printed as text, never as rich markup
    # (a kernel line such as `x_ref[pl.ds(i, 8), :]` would otherwise lose its brackets).
    console.print(f"  reference  {_shown(ctx.get('reference', {}).get('path'))}", markup=False)
    klass = f"  [{ctx['class']}]" if ctx.get("class") else ""
    if "candidate" in ctx:
        console.print(f"  candidate  {_shown(ctx['candidate'].get('path'))}{klass}", markup=False)
    seeds = f"   seeds {ctx['seeds']}" if "seeds" in ctx else f"   seed {ctx['seed']}" if "seed" in ctx else ""
    console.print(f"  op-point   {_op_point(ctx)}{seeds}", markup=False)
    if ctx.get("timed_op_point"):
        console.print(f"  timed at   {_op_point({'op_point': ctx['timed_op_point']})}", markup=False)
    candidate_kwargs = (ctx.get("candidate") or {}).get("kwargs")
    if candidate_kwargs:
        console.print(f"  kwargs     {', '.join(f'{k}={v!r}' for k, v in candidate_kwargs.items())}", markup=False)
    if device:
        console.print(f"  device     {device.get('platform')} ({device.get('kind')}), {mode}", markup=False)
    if "lowering" in report.gates and report.command == "lower":
        platform = report.gates["lowering"].details.get("platform", ctx.get("lower_for"))
        console.print(f"  lowered    for {platform}, from shapes alone (nothing allocated, no kernel run)", markup=False)
    if "timing" in report.gates and "speedup" in report.gates["timing"].details:
        _render_timing(report, console)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("gate")
    table.add_column("check")
    table.add_column("status")
    table.add_column("evidence", overflow="fold")
    for name, gate in report.gates.items():
        if gate.status == "SKIPPED":
            table.add_row(Text(name), "-", Text("SKIPPED", _STYLE["SKIPPED"]), Text(gate.skipped_reason))
        for check in gate.checks:
            table.add_row(Text(name), Text(check.name), Text(check.status, _STYLE.get(check.status, "")), Text(check.detail))
    console.print(table)
    for name, gate in report.gates.items():  # an error the gotcha table knows: its row and fix, spelled out
        for check in gate.checks:
            if check.gotcha and check.status == "FAIL":
                console.print(Text.assemble(("gotcha", "bold"), f" for {name}.{check.name}: {check.fix}"), soft_wrap=True)
    _render_seconds(ctx, console)
    for advisory in report.advisories:
        console.print(Text(f"advisory: {advisory}", _STYLE["ADVISORY"]), soft_wrap=True)
    console.print(Text(f"next: {report.next_step}", "bold" if status != "PASS" else ""), soft_wrap=True)


def _render_seconds(ctx: dict[str, Any], console: Console) -> None:
    """Where the seconds went: one line per leg, its phases in the order they began."""
    seconds = ctx.get("seconds")
    if not isinstance(seconds, dict) or not seconds.get("legs"):
        return
    wall = seconds.get("wall_s", ctx.get("wall_s"))
    console.print(Text("where the seconds went" + (f" ({_f(wall, '.1f')} s of wall time)" if wall is not None else "")
                       + ":", "bold"))
    for leg, phases in seconds["legs"].items():
        total = sum(float(s) for _, s in phases)
        parts = " · ".join(f"{name} {float(s):.1f}" for name, s in phases if float(s) >= 0.05)
        console.print(f"  {leg}, {total:.1f} s: {parts}", soft_wrap=True, markup=False)
    if "grading_s" in seconds:
        console.print(f"  grading here: {float(seconds['grading_s']):.1f} s", markup=False)


def _f(value: Any, spec: str) -> str:
    """Format a number; JSON-round-tripped reports spell inf/nan as strings."""
    return value if isinstance(value, str) else format(value, spec)


def _render_timing(report: Report, console: Console) -> None:
    t = report.gates["timing"].details
    interpreted = report.context.get("interpreted")
    platform = report.context.get("device", {}).get("platform", "device")
    label = "interpreter timings, NOT device timings" if interpreted else f"compiled timings on the {platform}"
    console.print(Text(f"timing ({label})", "bold yellow" if interpreted else "bold"))
    legs = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("leg", "p50 ms", "mean ms", "std ms", "min ms", "IQR ms", "n"):
        legs.add_column(col, justify="left" if col == "leg" else "right")
    for name, label in zip(("reference", "candidate"), t.get("legs", ("reference", "candidate"))):
        leg = t[name]
        legs.add_row(
            f"  {label}",
            *(f"{_f(leg[k], '.4g')}" for k in ("p50_ms", "mean_ms", "std_ms", "min_ms", "iqr_ms")),
            str(leg["n"]),
        )
    console.print(legs)
    sp = t["speedup"]
    console.print(
        f"  speedup {_f(sp['estimate'], '.4f')}x  [95% CI {_f(sp['low'], '.4f')}, {_f(sp['high'], '.4f')}]  "
        + ("(reference p50 / candidate p50 per session, geometric mean; the interval is anytime-valid)"
           if t.get("method", {}).get("interval_method") else "(reference p50 / candidate p50)"),
        soft_wrap=True, markup=False,
    )
    console.print(
        f"  run-to-run sigma of the per-round p50 difference: {_f(t['sigma_ms'], '.4g')} ms; minimum detectable speedup "
        f"at {t['sigma_k']:g} sigma: {_f(t['minimum_detectable_speedup'], '.4f')}x",
        soft_wrap=True,
    )
    if isinstance(t.get("power"), dict):
        pw = t["power"]
        console.print(
            f"  power: a run of {_f(pw['budget_s'], 'g')} s holds about {pw['sessions_in_budget']} sessions here and "
            f"detects a speedup of {_f(pw['detectable_speedup'], '.4f')}x (or the same slowdown) with "
            f"{pw['power']:.0%} power (estimated from {pw['sessions_seen']} sessions' scatter)",
            soft_wrap=True,
        )
    m = t["method"]
    console.print(
        f"  method: {m['rounds']} rounds x {m['pairs_per_round']} interleaved pairs in {m.get('sessions', 1)} sessions "
        f"(fresh compile and fresh input values each), coin-flip order, synchronized calls, {m.get('cache', 'no cache flush')}; "
        + (f"looked at {'once' if len(m['looks']) == 1 else str(len(m['looks'])) + ' times'}; "
           if isinstance(m.get("looks"), list) else "")
        + f"stopped: {m['stop_reason']}"
        + (f"; the measurement took {report.context['wall_s']:.1f} s of wall time (loading, compiling and "
           "checking included)" if isinstance(report.context.get("wall_s"), (int, float)) else ""),
        soft_wrap=True,
    )
    if "calibration" in report.gates:
        c = report.gates["calibration"].details
        console.print(
            f"  noise floor (run-to-run sigma / p50): {_f(c['noise_floor'], '.2%')}; dispatch floor {_f(c['dispatch_floor_ms'], '.4g')} ms "
            f"(workload = {_f(c['workload_over_dispatch'], '.1f')}x dispatch)",
            soft_wrap=True,
        )
    if "bar" in report.gates:
        bar = report.gates["bar"].details
        style = {"MET": "green", "MISSED": "bold red", "UNDECIDED": "yellow"}[bar["outcome"]]
        console.print(Text.assemble(f"bar {bar['bar']!r}: ", (bar["outcome"], style)))
        for clause in bar["clauses"]:
            console.print(f"  {clause['text']}: {clause['outcome']} — {clause['arithmetic']}", soft_wrap=True, markup=False)


def render_error(problem: str, fix: str, console: Console) -> None:
    # soft_wrap: an agent greps these lines, so never break them at the terminal width.
    console.print(Text.assemble(("error: ", "bold red"), problem), soft_wrap=True)
    console.print(Text.assemble(("  fix: ", "bold"), fix), soft_wrap=True)
