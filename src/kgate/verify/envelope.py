"""`kgate fit`: the compile-only envelope over a grid of the candidate's keyword arguments,
lowered in a fresh process that imports the candidate, graded here."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kgate.backends.base import LoweredProgram
from kgate.errors import KgateError
from kgate.gates import fit, integrity
from kgate.gates.common import Check, GateResult
from kgate.verify import spawn
from kgate.verify.early import CheckRequest, _leg_error
from kgate.verify.outcome import Report


def run_fit(request: CheckRequest, grid: Mapping[str, Sequence[Any]]) -> Report:
    """Lower the candidate at the op-point for every point of `grid`; one row per point."""
    started = time.perf_counter()
    points = fit.points(grid)
    lower_for = request.firing_spec.lower_for
    if lower_for == "none":
        raise KgateError("`kgate fit --lower-for none` would lower nothing.",
                         "give the platform to lower for (tpu, cuda), or auto for the kernels' own.")
    with tempfile.TemporaryDirectory(prefix="kgate-fit-") as folder:
        result = spawn.run("fit", {
            "reference": str(Path(request.reference).resolve()), "candidate": str(Path(request.candidate).resolve()),
            "entry": request.entry, "reference_entry": request.reference_entry, "overrides": dict(request.overrides),
            "dtype": request.dtype, "lower_for": lower_for, "chip_kind": request.firing_spec.chip_kind,
            "points": points,
        }, Path(folder), beats=True, phase_budget_s=request.phase_budget_s)
    if result.get("status") == "ERROR":
        raise _leg_error("candidate", result)
    gates: dict[str, GateResult] = {}
    if result.get("status") != "DONE":
        error = result.get("error", {})
        gates["fit"] = GateResult("fit", (Check(
            "fit_evaluated", "FAIL", f"the candidate's process did not finish: {error.get('problem', result.get('status'))}",
            str(error.get("fix") or "run the candidate module by hand to see the full error."),
        ),))
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
