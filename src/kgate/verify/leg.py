"""One device leg of `kgate verify`, run as `python -m kgate.verify.leg KIND -`, its request
the first line on its stdin (or `KIND REQUEST.json`, a file, when run by hand).

The verifying parent never imports a framework; each leg runs here, in a fresh process,
and writes its report as JSON to the result file the parent named. KIND is `reference-probes` and `candidate-probes`
(the two halves of gate, parity and verify's checks: see kgate.verify.probes), `measure`,
`coverage`, `capture`, or `inputs` (regenerate input hashes for verify-receipt).
"""

from __future__ import annotations

import json
import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from kgate.backends import import_frameworks
from kgate.errors import KgateError
from kgate.problem.module import file_sha256, load_requested_pair


def _reference_probes(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.verify.probes import reference_leg
    from kgate.verify.spawn import no_dumps

    no_dumps()  # its memory will hold expected answers
    channel = sys.stdin.buffer
    return reference_leg(req, lambda: channel.readline().strip() == b"go")


def _candidate_probes(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.verify.probes import candidate_leg

    from kgate.verify.spawn import beat

    channel = sys.stdin.buffer

    def wait_for_inputs() -> bool:
        beat("imported")
        return channel.readline().strip() == b"go"

    return candidate_leg(req, wait_for_inputs)


def _measure(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.gates.bar import parse_bar
    from kgate.problem.module import kwargs_from_wire
    from kgate.verify.measure import MeasureRequest, run_measure

    request = MeasureRequest(
        reference=Path(req["reference"]),
        candidate=Path(req["candidate"]),
        entry=req["entry"],
        reference_entry=req.get("reference_entry", "workload"),
        seed=req["seeds"][0],
        dtype=req["dtype"],
        overrides=req["overrides"],
        bar=parse_bar(req["bar"]) if req.get("bar") else None,
        budget_s=req["budget_s"],
        sessions=req["sessions"],
        reference_first=req.get("reference_first", False),
        inputs_file=Path(req["inputs_in"]) if req.get("inputs_in") else None,
        inputs_sha256=req.get("inputs_sha256"),
        inputs_file_sha256=req.get("inputs_file_sha256"),
        time_interpreted=req.get("time_interpreted", False),
        kwargs=kwargs_from_wire(req.get("kwargs")),
        weights=req.get("weights", "shared"),
        backend=req.get("backend"),
        deadline=req.get("deadline"),
        **{key: req[key] for key in MEASURE_TUNING if key in req},  # `kgate measure`'s own knobs; verify's defaults
    )
    return run_measure(request).to_json()


MEASURE_TUNING = ("target_ci", "min_rounds", "max_rounds", "per_round", "order_seed")


def _inputs(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.backends import get_backend
    from kgate.problem import load_reference

    backend = get_backend(req.get("backend", "jax"))
    hashes = {}
    with load_reference(req["reference"], overrides=req["overrides"], entry=req.get("reference_entry", "workload")) as (
        reference, _,
    ):
        for seed in req["seeds"]:
            inputs, _ = backend.create_inputs(reference, seed, req["dtype"])
            hashes[str(seed)] = backend.digest(inputs)
    return {"status": "PASS", "inputs": hashes}


def _coverage(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.backends import get_backend
    from kgate.gates import coverage

    backend = get_backend(req.get("backend", "jax"))
    if not hasattr(backend, "perturb_slice"):
        raise KgateError(f"--coverage is not built for {backend.name} problems yet.",
                         "drop --coverage; the parity probes and the firing audit still run.")
    maps = coverage.parse_spec(req["spec"])
    results, errors = [], []
    with load_requested_pair(req) as pair:
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

    folder = Path(req["artifacts"])
    try:
        backend = get_backend(req.get("backend", "jax"))
        if not hasattr(backend, "capture"):
            return {"status": "UNAVAILABLE", "reason": f"profiler capture is not built for {backend.name} problems yet"}
        with load_requested_pair(req) as pair:
            inputs, _ = backend.create_inputs(pair.reference, req["seeds"][0], req["dtype"])
            files = backend.capture(pair.candidate.entry, inputs, folder)
    except KgateError:
        raise
    except Exception as exc:  # a missing or broken profiler degrades, never blocks
        return {"status": "UNAVAILABLE", "reason": f"capture unavailable: {type(exc).__name__}: {exc}"[:300]}
    # the receipt names each artifact by path and sha256, never its content
    named = [{"path": f, "sha256": file_sha256(folder / f), "bytes": (folder / f).stat().st_size} for f in files]
    perfetto = [n for n in named if Path(n["path"]).name == "perfetto_trace.json.gz"]
    return {"status": "CAPTURED", "folder": str(folder), "files": named,
            **({"perfetto": {**perfetto[-1], "path": str(folder / perfetto[-1]["path"])}} if perfetto else {})}


def _lower(req: dict[str, Any]) -> dict[str, Any]:
    from kgate.verify.probes import lowered_programs
    from kgate.verify.seals import seal
    from kgate.verify.spawn import beat
    from kgate.verify.watch import Watch

    beat("phase importing the candidate")
    backend = _lowering_backend(req)
    import_frameworks(req["reference"], req["candidate"])
    watch = Watch(backend)
    with load_requested_pair(req, use_tiny=req["use_tiny"]) as pair:
        watch.check("at import")
        seal("result reference_changes", list(pair.reference_changes))
        beat("phase lowering the candidate for its device")
        programs = lowered_programs(backend, pair, _op_point_shapes(backend, pair, req), req)
        seal("result lowering", programs)
        watch.check("after the lowering", "deep")
        return {"status": "DONE", "lowering": programs, "changes": watch.changes,
                "reference_changes": list(pair.reference_changes), "candidate": pair.candidate.to_json(),
                "op_point": _full_op_point(pair.op_point, req["overrides"], req.get("registered"))}


def _lowering_backend(req: dict[str, Any]) -> Any:
    """The backend, when it lowers kernels for a device from shapes; else refused with why."""
    from kgate.backends import get_backend

    backend = get_backend(req.get("backend", "jax"))
    why = getattr(backend, "lowering_unavailable", "")
    if why:
        raise KgateError(f"{Path(req['reference']).name} is a {backend.name} problem: {why}.",
                         "check the candidate with `kgate gate` and `kgate parity`; lowering and VMEM fit run for "
                         "JAX/Pallas kernels.")
    return backend


def _op_point_shapes(backend: Any, pair: Any, req: dict[str, Any]) -> Any:
    """The op-point's input shapes, from create_inputs traced abstractly (nothing allocated)."""
    from kgate.errors import describe

    try:
        return backend.input_shapes(pair.reference, req["dtype"])
    except KgateError:
        raise
    except Exception as exc:
        raise KgateError(
            f"{Path(req['reference']).name}'s create_inputs cannot be traced from shapes alone: {describe(exc)}",
            "run `kgate gate`, which makes the inputs and lowers the candidate on their shapes.",
        ) from exc


def _fit(req: dict[str, Any]) -> dict[str, Any]:
    import functools

    from kgate.gates.fit import label
    from kgate.problem.module import takes_keywords
    from kgate.verify.probes import target_platform
    from kgate.verify.seals import seal
    from kgate.verify.spawn import beat
    from kgate.verify.watch import Watch

    beat("phase importing the candidate")
    backend = _lowering_backend(req)
    import_frameworks(req["reference"], req["candidate"])
    watch = Watch(backend)
    with load_requested_pair(req) as pair:
        watch.check("at import")
        seal("result reference_changes", list(pair.reference_changes))
        takes_keywords(pair.candidate.entry, req["entry"], list(req["points"][0]))
        shapes = _op_point_shapes(backend, pair, req)
        platform = target_platform(backend, functools.partial(pair.candidate.entry, **req["points"][0]), shapes, req)
        programs = []
        for point in req["points"] if platform is not None else []:
            beat(f"phase lowering the candidate at {label(point)}")
            entry = functools.partial(pair.candidate.entry, **point)
            programs.append(backend.lower_for(entry, shapes, platform, "op-point", req.get("chip_kind")).to_json())
            seal(f"programs {len(programs) - 1}", programs[-1])  # before the candidate is traced again
        watch.check("after the lowering", "deep")
        return {"status": "DONE", "programs": programs, "changes": watch.changes,
                "reference_changes": list(pair.reference_changes), "candidate": pair.candidate.to_json(),
                "op_point": pair.op_point.to_json()}


def _full_op_point(op_point: Any, overrides: dict[str, Any], registered: dict[str, Any] | None) -> dict[str, Any]:
    """The op-point without TINY (what `lower` lowers beside TINY), in OpPoint's JSON shape: its
    overrides are every update to CONFIG, the family's registered op-point and --set over it."""
    restored = op_point.without_tiny(overrides, registered)
    source = "+".join(part for part, given in (("registered", registered), ("--set", overrides)) if given) or "CONFIG"
    return {"source": source, "values": {**op_point.values, **restored},
            "overrides": {**(registered or {}), **overrides},
            "tiny": dict(op_point.values) if "TINY" in op_point.source else None}


LEGS = {
    "reference-probes": _reference_probes,
    "candidate-probes": _candidate_probes,
    "lower": _lower,
    "fit": _fit,
    "measure": _measure, "inputs": _inputs, "coverage": _coverage, "capture": _capture}


def never_trust_bytecode() -> None:
    """From here on (the problem's modules, whatever they import, anything imported late), this
    process compiles every module from its source and writes no bytecode. Python trusts a
    `__pycache__/*.pyc` whose header matches its source's time and size, so a candidate's process
    could plant one for the reference (same file, same sha256, other code) that every later
    process would run. A private cache prefix that never exists means no cached file is read."""
    import secrets
    import tempfile

    sys.dont_write_bytecode = True
    sys.pycache_prefix = str(Path(tempfile.gettempdir()) / f"kgate-no-bytecode-{secrets.token_hex(16)}")


def private_caches() -> Path:
    """Point torch's compiler and Triton at caches of this leg's own, empty now (a folder it
    removes when it ends). Their default caches are shared folders, and what a leg that ran
    candidate code wrote there (a pickled graph, a module of generated code, a compiled kernel)
    would be loaded by the next leg, before its watch's snapshot, as torch's own."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="kgate-leg-caches-"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(folder / "triton")
    return folder


def main(argv: list[str]) -> int:
    kind, request_path = argv[1], argv[2]
    from kgate.verify.spawn import HELD, HELD_ENV, beat

    caches = private_caches()

    held = os.environ.pop(HELD_ENV, "")
    if held:  # started ahead: load the problem's library (the parent named it), then wait for the request
        import importlib

        importlib.import_module(f"kgate.backends.{'torch' if held == 'torch' else 'jax'}_backend").load_lazy_modules()
        beat("phase " + HELD)
        line = sys.stdin.buffer.readline()  # its request, one line, from the parent alone
        if not line.strip():
            shutil.rmtree(caches, ignore_errors=True)
            return 0  # the run stopped before it needed this leg
        req = json.loads(line)
    else:  # the first line on stdin (kgate.verify.spawn.REQUEST_ON_STDIN), or a file named by hand
        source = sys.stdin.buffer.readline() if request_path == "-" else Path(request_path).read_bytes()
        req = json.loads(source)
    # Nothing the modules print may reach kgate's channels: stdout joins stderr, and the
    # result goes to the file the parent named.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # The array library loads here, in the phase kgate owns (STARTING), before any module of
    # the problem: the phase budget meant for the candidate's import is not spent on it.
    from kgate.backends import get_backend

    try:
        backend = get_backend(req.get("backend", "jax"))
        if hasattr(backend, "load_lazy_modules"):
            backend.load_lazy_modules()  # from their bytecode, while it is still trusted
        never_trust_bytecode()
        result = LEGS[kind](req)
    except KgateError as exc:
        result = {"status": "ERROR", "error": exc.to_json()}
    from kgate.jsonio import dumps

    from kgate.backends.base import write_new
    from kgate.verify.spawn import RESULT_BEAT, beat

    data = (dumps(result) + "\n").encode()
    write_new(Path(req["result"]), data)  # never through a link another process put at its name
    beat(RESULT_BEAT + hashlib.sha256(data).hexdigest())  # the parent reads only these bytes as the result
    # Leave now: no exit hook a module registered (atexit, a finalizer) runs after the result.
    shutil.rmtree(caches, ignore_errors=True)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
