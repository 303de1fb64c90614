"""One device leg of `kgate verify`, run as `python -m kgate.verify.leg KIND REQUEST.json`.

The verifying parent never imports a framework; each leg runs here, in a fresh process,
and prints its report as JSON on stdout. KIND is `checks` (integrity + parity + firing
at the op-point), `measure`, or `inputs` (regenerate input hashes for verify-receipt).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kgate.errors import KgateError


def _checks(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.gates.firing import FiringSpec
    from kgate.gates.parity import ParitySpec
    from kgate.verify.early import CheckRequest, run_screen_checks

    request = CheckRequest(
        reference=Path(req["reference"]),
        candidate=Path(req["candidate"]),
        entry=req["entry"],
        klass=req["class"],
        seeds=tuple(req["seeds"]),
        dtype=req["dtype"],
        overrides=req["overrides"],
        parity_spec=ParitySpec.parse(req["parity"]),
        firing_spec=FiringSpec(
            expect_hlo=tuple(req["firing"]["expect_hlo"]),
            forbid_hlo=tuple(req["firing"]["forbid_hlo"]),
            kernel_calls=req["firing"]["kernel_calls"],
            forbid_shapes=tuple(req["firing"]["forbid_shapes"]),
        ),
    )
    report = run_screen_checks(request).to_json()
    if req.get("inputs_out"):
        # Hand the first seed's inputs to the measure leg: same values, no second create_inputs.
        from kgate.backends import get_backend
        from kgate.problem import load_pair

        backend = get_backend("jax")
        with load_pair(request.reference, request.reference, overrides=request.overrides) as pair:
            inputs, _ = backend.create_inputs(pair.reference, request.seeds[0], request.dtype)
            digest = backend.digest(inputs)
            # Only inputs identical to the ones just checked are handed over.
            if digest == report["input_sha256"][str(request.seeds[0])] and backend.save_inputs(
                inputs, Path(req["inputs_out"])
            ):
                report["handoff_sha256"] = digest
    return report


def _measure(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.gates.bar import parse_bar
    from kgate.verify.measure import MeasureRequest, run_measure

    request = MeasureRequest(
        reference=Path(req["reference"]),
        candidate=Path(req["candidate"]),
        entry=req["entry"],
        seed=req["seeds"][0],
        dtype=req["dtype"],
        overrides=req["overrides"],
        bar=parse_bar(req["bar"]) if req.get("bar") else None,
        budget_s=req["budget_s"],
        sessions=req["sessions"],
        reference_first=req.get("reference_first", False),
        inputs_file=Path(req["inputs_in"]) if req.get("inputs_in") else None,
        inputs_sha256=req.get("inputs_sha256"),
    )
    return run_measure(request).to_json()


def _inputs(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.backends import get_backend
    from kgate.problem import load_pair

    backend = get_backend("jax")
    hashes = {}
    with load_pair(req["reference"], req["reference"], overrides=req["overrides"]) as pair:
        for seed in req["seeds"]:
            inputs, _ = backend.create_inputs(pair.reference, seed, req["dtype"])
            hashes[str(seed)] = backend.digest(inputs)
    return {"status": "PASS", "inputs": hashes}


def _coverage(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.backends import get_backend
    from kgate.gates import coverage
    from kgate.problem import load_pair

    backend = get_backend("jax")
    maps = coverage.parse_spec(req["spec"])
    results, errors = [], []
    with load_pair(req["reference"], req["candidate"], entry=req["entry"], overrides=req["overrides"]) as pair:
        inputs, _ = backend.create_inputs(pair.reference, req["seeds"][0], req["dtype"])
        base = backend.run(pair.candidate.entry, inputs)
        for m in maps:
            try:
                size_in = inputs[m.input_index].shape[m.input_axis]
                size_out = base.leaves[m.output_index].shape[m.output_axis]
            except (IndexError, AttributeError):
                errors.append(f"spec {m.text()} names an input, output or axis the problem does not have")
                continue
            if size_in != size_out:
                errors.append(f"spec {m.text()}: input axis has {size_in} slices, output axis {size_out}")
                continue
            probes = []
            for position in coverage.probe_indices(size_in):
                out = backend.run(pair.candidate.entry, backend.perturb_slice(inputs, m.input_index, m.input_axis, position))
                probes.append(
                    coverage.slice_effect(base.leaves[m.output_index], out.leaves[m.output_index], m.output_axis, position)
                )
            results.append((m, probes))
    return {"gates": {"coverage": coverage.evaluate(results, errors).to_json()}}


def _capture(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.backends import get_backend
    from kgate.problem import load_pair

    folder = Path(req["artifacts"])
    try:
        backend = get_backend("jax")
        with load_pair(req["reference"], req["candidate"], entry=req["entry"], overrides=req["overrides"]) as pair:
            inputs, _ = backend.create_inputs(pair.reference, req["seeds"][0], req["dtype"])
            files = backend.capture(pair.candidate.entry, inputs, folder)
    except KgateError:
        raise
    except Exception as exc:  # a missing or broken profiler degrades, never blocks
        return {"status": "UNAVAILABLE", "reason": f"capture unavailable: {type(exc).__name__}: {exc}"[:300]}
    return {"status": "CAPTURED", "folder": str(folder), "files": files}


LEGS = {"checks": _checks, "measure": _measure, "inputs": _inputs, "coverage": _coverage, "capture": _capture}


def main(argv: list[str]) -> int:
    kind, request_path = argv[1], argv[2]
    try:
        result = LEGS[kind](json.loads(Path(request_path).read_text()))
    except KgateError as exc:
        result = {"status": "ERROR", "error": exc.to_json()}
    from kgate.jsonio import dumps

    sys.stdout.write(dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
