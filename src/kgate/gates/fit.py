"""The compile-only envelope (`kgate fit`): over a grid of the candidate's static keyword
arguments (block sizes, say), which points the device would accept at the op-point.

Each point is lowered for the device from shapes alone and graded by the lowering gate's
rules (the lowering succeeds, a live custom call per kernel, every output block written,
the VMEM estimate within the kernel's limit and the chip's VMEM). A point that does not fit
is a row with its reason; the command fails only when no point fits.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from kgate.backends.base import LoweredProgram
from kgate.errors import KgateError
from kgate.gates import lowering
from kgate.gates.common import Check, GateResult
from kgate.problem.oppoint import keyword_value

MAX_POINTS = 256


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """`--grid NAME=V1,V2,...` (Python literals; a bare word is a string) into {name: values}."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        values = [v.strip() for v in raw.split(",") if v.strip()]
        if not sep or not name.isidentifier() or not values:
            raise KgateError(f"--grid {item!r} is not of the form NAME=V1,V2,....",
                             "write it as --grid block_rows=8,16,32 (one keyword argument per --grid).")
        if name in grid:
            raise KgateError(f"--grid names {name!r} twice.", f"give all of {name}'s values in one --grid.")
        parsed = [keyword_value("--grid", name, value) for value in values]
        if len({repr(v) for v in parsed}) != len(parsed):
            raise KgateError(f"--grid {item!r} repeats a value.", "give each value once.")
        grid[name] = parsed
    if not grid:
        raise KgateError("no --grid given.", "name the keyword arguments to vary, e.g. --grid block_rows=8,16,32.")
    return grid


def points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the order given."""
    names = list(grid)
    combos = [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]
    if len(combos) > MAX_POINTS:
        raise KgateError(f"the grid has {len(combos)} points, more than {MAX_POINTS}.",
                         "give fewer values per --grid, or split the envelope into several runs.")
    return combos


def label(point: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in point.items())


def short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def _row(point: Mapping[str, Any], program: LoweredProgram) -> dict[str, Any]:
    graded = lowering.evaluate([program])
    failures = graded.failures
    unknown = [c for c in graded.checks if c.status in ("SKIPPED", "ADVISORY")]
    if failures:  # the row says why in short; its checks keep every word
        status, reason = "FAIL", "; ".join(f"{c.name.split('.', 1)[-1]}: {short(c.detail)}" for c in failures)
    elif graded.status == "SKIPPED":
        status, reason = "SKIPPED", graded.skipped_reason
    else:
        status, reason = "FITS", "; ".join(f"{c.name.split('.', 1)[-1]} not told: {c.detail}" for c in unknown)
    vmem = max((k.total for k in program.vmem), default=None)
    return {"point": dict(point), "label": label(point), "status": status, "reason": reason, "vmem_bytes": vmem,
            "checks": [c.to_json() for c in graded.checks]}


def evaluate(pairs: Sequence[tuple[Mapping[str, Any], LoweredProgram]]) -> GateResult:
    """One check per point (PASS: it fits; ADVISORY: it does not, or could not be told, with
    the reason), and `some_point_fits`, which FAILs when none does."""
    rows = [_row(point, program) for point, program in pairs]
    checks = []
    for row in rows:
        vmem = f"; VMEM about {lowering.size_text(row['vmem_bytes'])}" if row["vmem_bytes"] is not None else ""
        if row["status"] == "FITS":
            detail = ("fits: lowers, every kernel live, every output block written" if not row["reason"]
                      else "fits as far as told: lowers, every kernel live") + vmem
            if row["reason"]:
                detail += f" ({row['reason']})"
            checks.append(Check(row["label"], "PASS", detail))
        elif row["status"] == "FAIL":
            checks.append(Check(row["label"], "ADVISORY", f"does not fit: {row['reason']}"))
        else:
            checks.append(Check(row["label"], "ADVISORY", f"not told here: {row['reason']}"))
    fitting = [r["label"] for r in rows if r["status"] == "FITS"]
    if fitting:
        checks.append(Check("some_point_fits", "PASS", f"{len(fitting)} of {len(rows)} points fit: {', '.join(fitting)}"))
    else:
        checks.append(Check("some_point_fits", "FAIL", f"none of the {len(rows)} points fits the device",
                            "read each point's reason; change the grid (smaller blocks, multiples of the tiling) or "
                            "the kernel."))
    platform = pairs[0][1].platform if pairs else ""
    return GateResult("fit", tuple(checks), {"platform": platform, "points": rows})
