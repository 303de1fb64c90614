"""`kgate fit`: the compile-only envelope over a grid of the candidate's keyword arguments,
lowered in a fresh process that imports the candidate, graded here."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from kgate.backends.base import LoweredProgram
from kgate.gates import fit, integrity
from kgate.gates.common import Check, GateResult
from kgate.verify import spawn
from kgate.verify.early import CheckRequest, run_shape_leg, unfinished
from kgate.verify.outcome import Report


def run_fit(request: CheckRequest, grid: Mapping[str, Sequence[Any]]) -> Report:
    """Lower the candidate at the op-point for every point of `grid`; one row per point."""
    started = time.perf_counter()
    points = fit.points(grid)
    result = run_shape_leg("fit", request, {"points": points})
    gates: dict[str, GateResult] = {}
    if result.get("status") != "DONE":
        gates["fit"] = unfinished("fit", result)
    else:
        gates["integrity"] = integrity.evaluate(tuple(result.get("reference_changes", [])), (), (),
                                                process_changes=tuple(result.get("changes", [])))
        programs = [LoweredProgram.from_json(p) for p in result.get("programs", [])]
        gates["fit"] = fit.evaluate(list(zip(points, programs))) if programs else GateResult("fit", (Check(
            "kernel_present", "FAIL", "the candidate's program calls no kernel: there is nothing to fit on a device",
            "`kgate fit` varies a kernel-authored candidate's keyword arguments (its block sizes, say).",
        ),))
    context = {
        "class": request.klass,
        "reference": {"path": str(request.reference)},
        "candidate": result.get("candidate", {"path": str(request.candidate)}),
        "op_point": result.get("op_point", {}),
        "dtype": request.dtype,
        "grid": {k: list(v) for k, v in grid.items()},
        "chip_kind": request.firing_spec.chip_kind,
        "wall_s": round(time.perf_counter() - started, 3),
    }
    if isinstance(result.get("parent_clock"), Mapping):
        context["seconds"] = {"legs": {"candidate leg": spawn.phase_seconds(result["parent_clock"])}}
    return Report("fit", gates, context)
