"""`kgate parity` and `kgate gate` (and verify's checks): integrity, multi-seed parity and
the firing audit, graded here from evidence produced in two other processes.

The reference leg (a process that never imports the candidate) makes each probe's
inputs, and the reference's and the oracle's outputs only once the candidate's process
is gone. The candidate leg imports the candidate first, and only then receives the inputs
(never a seed, never an expected answer). This process imports neither module and no
framework: it reads both legs' arrays and computes every verdict. Each run adds a probe
seed drawn here from the OS's entropy, recorded in the report so it can be regenerated.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from kgate.backends import ProgramFacts, backend_for, wire
from kgate.backends.base import floating_dtypes, write_new
from kgate.problem.module import kwargs_to_wire
from kgate.problem.model import weights_mismatch
from kgate.problem.oppoint import shown
from kgate.backends.base import Ablation, Arithmetic, LoweredProgram, count_moved
from kgate.clock import draw_seed
from kgate.errors import KgateError
from kgate.gates import firing, integrity, lowering, parity
from kgate.gates.common import Check, GateResult, error_check, skipped
from kgate.gates.firing import FiringSpec
from kgate.gates.parity import DRAWN_LABEL, ODD_LABEL, PAST_LABEL, ParitySpec, Probe, SharedFloor
from kgate.verify import refcache, seals, spawn
from kgate.verify.spawn import no_dumps
from kgate.verify.lock import compile_slot
from kgate.verify.outcome import EAGER_NOTE, Report
from kgate.verify.probes import AUDITED_EDGES, INPUT_BEAT, INPUTS_DONE_BEAT, PROBE_KEY, SEALED_KEYS

DEFAULT_SEEDS: tuple[int, ...] = (42, 43)
PHASE_BUDGET_S = 300.0  # per phase of a leg (importing, making inputs, tracing, compiling, running ...)


def check_phase_budget(seconds: float) -> None:
    if not seconds > 0:
        raise KgateError(f"--phase-budget {seconds:g} is not a positive number of seconds.",
                         f"give e.g. --phase-budget {PHASE_BUDGET_S:g}.")


@dataclass(frozen=True)
class CheckRequest:
    reference: Path
    candidate: Path
    entry: str = "workload"
    klass: str = "kernel-authored"
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    reference_entry: str = "workload"
    phase_budget_s: float = PHASE_BUDGET_S
    dtype: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    registered: Mapping[str, Any] = field(default_factory=dict)  # a family's op-point: under TINY and `overrides`
    parity_spec: ParitySpec = ParitySpec("floor")
    firing_spec: FiringSpec = FiringSpec()
    kwargs: Mapping[str, Any] = field(default_factory=dict)  # the candidate's entry bound with these (--kwarg)
    weights: str = "shared"  # a Model reference's weights: shared | random:SEED (`--weights`)
    backend: str | None = None  # `--backend`: the framework to run the problem with; None: from its imports

    def __post_init__(self) -> None:
        # the backend, chosen once for the whole run (every leg and the receipt take this one): read
        # again later, the reference file could have changed under a running candidate
        object.__setattr__(self, "backend", backend_for(self.reference, self.backend))
        firing.parse_classes(self.klass)
        check_phase_budget(self.phase_budget_s)
        if not self.seeds:
            raise KgateError("no seeds given.", "pass at least one --seed, e.g. --seed 42 --seed 43.")
        if len(set(self.seeds)) != len(self.seeds):
            raise KgateError(f"seeds {list(self.seeds)} repeat.", "give distinct seeds.")



def run_probe_legs(
    request: CheckRequest, *, use_tiny: bool, with_firing: bool, env: Mapping[str, str] | None = None,
    workdir: Path | None = None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], tuple[int, ...]]:
    """Run the reference leg and the candidate leg; their results, both legs' arrays, and the seeds used.

    Both start at once. The reference's process makes the inputs and waits; the candidate's
    imports the candidate, then receives the inputs at the op-point's shapes and runs them while
    the reference's makes the other shapes' inputs, handed over next. Only when the candidate's
    process group is gone does the reference's compute its answers, sent here over a pipe."""
    no_dumps()  # this process will hold expected answers
    seeds = (*request.seeds, draw_seed(request.seeds))
    common = {
        "reference": str(Path(request.reference).resolve()),
        "candidate": str(Path(request.candidate).resolve()),
        "entry": request.entry,
        "reference_entry": request.reference_entry,
        "overrides": dict(request.overrides),
        "registered": dict(request.registered),
        "kwargs": kwargs_to_wire(request.kwargs),
        "weights": request.weights,
        "backend": request.backend,
        "use_tiny": use_tiny,
        "dtype": request.dtype,
    }
    with tempfile.TemporaryDirectory(prefix="kgate-probes-") as scratch:
        folder = Path(workdir) if workdir is not None else Path(scratch)
        ref_dir, cand_dir = folder / "reference", folder / "candidate"
        ref_req = {**common, "seeds": list(seeds), "workdir": str(ref_dir), "edges": True,
                   "odd": True if use_tiny else "tiny",  # other shapes: from the op-point (TINY), or from TINY
                   "programs": refcache.SHARED.offer(env),
                   "reference_compiled": with_firing and request.klass != "kernel-authored",
                   "reference_arithmetic": with_firing and request.klass == "kernel-authored"}
        cand_req = {**common, "workdir": str(cand_dir), "with_firing": with_firing,
                    "probes_file": str(cand_dir / "probes.json"),
                    "lower_for": request.firing_spec.lower_for if _lowers(request, with_firing) else "none",
                    "chip_kind": request.firing_spec.chip_kind}
        reference_leg = spawn.start("reference-probes", ref_req, ref_dir, env=env, waits=True, data=True, beats=True)
        candidate = spawn.start("candidate-probes", cand_req, cand_dir, env=env, waits=True, beats=True,
                                own_session=True)
        try:
            # the probes at the op-point's shapes first; the candidate runs them while the reference's
            # process makes the other shapes' inputs, handed over next
            first_batch = _wait_for_inputs(reference_leg, 0, request.phase_budget_s)
            _hand_over(first_batch, ref_dir, cand_dir / "probes.json")
            candidate.wait_beat("imported", budget_s=request.phase_budget_s)
            candidate.go()
            _hand_over(_wait_for_inputs(reference_leg, 1, request.phase_budget_s), ref_dir,
                       cand_dir / "probes-shapes.json")
            drawn: list[dict[str, Any]] = []
            if with_firing and request.backend in EDGE_AUDIT_BACKENDS and candidate.wait_until(
                    lambda line: line.startswith(GRADED_SEAL), request.phase_budget_s, timeout_s=math.inf):
                drawn = _draw_audited_edges(first_batch, cand_dir)  # only now: nothing graded can depend on it
            cand_result = candidate.wait_phased(request.phase_budget_s)
            cand_result["drawn_edges"] = drawn  # what this process drew, beside what the leg says it audited
        finally:
            candidate.kill_group()
        arrays: dict[str, Any] = {}
        if cand_result.get("status") == "DONE":
            try:
                outputs = _candidate_outputs(cand_dir / "candidate.npz", cand_result)
            except KgateError as exc:
                cand_result = {"status": "CRASHED", "error": {"problem": exc.problem}}
            else:
                arrays.update(outputs)
                # what the leg reports, held to what it sealed as it made it: a rewrite is a change
                lines = [line for _, line in cand_result.get("parent_clock", {}).get("beats", [])]
                cand_result["changes"] = [*cand_result.get("changes", []),
                                          *seals.problems(cand_result, lines, outputs, SEALED_KEYS, lists=("edge_audit",))]
        reference_leg.go()
        reference = reference_leg.wait_phased(request.phase_budget_s)
        if reference.get("status") != "DONE":
            raise _leg_error("reference", reference)
        refcache.SHARED.accept(env, reference.get("programs"))
        arrays.update(wire.read_trees(bytes(reference_leg.data)))
        return reference, cand_result, arrays, seeds


GRADED_SEAL = seals.SEAL_BEAT + '["result graded_runs"'  # the candidate leg's graded runs are over


# of the edge battery's probes at the first probe's shapes (ten on a softmax, the large edge left out):
# with five, a repair that shows on five of ten edges is met in 251 runs of 252, one that shows on four in 41 of 42
AUDITED_EDGE_COUNT = 5
# Edges the audit does not draw: it counts an output element as moved against one allowance per probe,
# and the `large` edge's rows span eighteen octaves, so a perturbation of its smaller rows' results
# is under the allowance its largest rows set (an honest kernel's read as not mattering there).
UNAUDITED_EDGES = ("large",)
# Where the firing audit's ablation runs again on drawn edges: torch's launches are recorded per run;
# a JAX program's arithmetic outside its kernels is counted on the traced program, every branch in it.
EDGE_AUDIT_BACKENDS = ("torch",)


def edge_choice(edges: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """`AUDITED_EDGE_COUNT` of `edges`, from the operating system's randomness (afresh in every run)."""
    return random.SystemRandom().sample(list(edges), min(AUDITED_EDGE_COUNT, len(edges)))


def _draw_audited_edges(manifest: Sequence[Mapping[str, Any]], cand_dir: Path) -> list[dict[str, Any]]:
    """Draw the edge probes (at the first probe's shapes) the firing audit's ablation runs on too,
    and tell the candidate's leg: after its graded runs, so the candidate could not know which."""
    edges = [p for p in manifest if str(p.get("label", "")).startswith(parity.EDGE_PREFIX) and not p.get("config")
             and str(p.get("label", "")).split("-")[1] not in UNAUDITED_EDGES]
    drawn = [{"key": e.get("key"), "label": e.get("label", "")} for e in (edge_choice(edges) if edges else [])]
    write_new(cand_dir / AUDITED_EDGES, json.dumps(drawn).encode())
    return drawn


def _candidate_outputs(path: Path, result: Mapping[str, Any]) -> dict[str, Any]:
    """The candidate leg's outputs, read once and only when they hash to the digest its result
    names (the result itself is bound by the digest the leg beat): a file another process
    rewrote after the leg wrote it is never graded."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KgateError(f"the candidate leg's outputs cannot be read ({exc.strerror}).",
                         "re-run; a candidate that removes kgate's files is an integrity failure.") from exc
    if hashlib.sha256(data).hexdigest() != result.get("outputs_file_sha256"):
        raise KgateError("the candidate leg's outputs are not the ones it wrote (their digest differs from the one "
                         "in its result): another process rewrote them after the leg; they are not graded.",
                         "a candidate that leaves a process behind to rewrite kgate's files fails; remove it.")
    return wire.read_trees(data)


def _wait_for_inputs(leg: spawn.LegProcess, batch: int, budget_s: float) -> list[dict[str, Any]]:
    """The reference leg's `batch`-th list of probes whose inputs it has made, from its beat
    channel (a pipe only this process reads), once it has made them."""
    while not (done := _announced(leg.beats, batch)):
        if leg.proc.poll() is not None:
            leg._join()  # its last beats, then its result
            if not (done := _announced(leg.beats, batch)):
                raise _leg_error("reference", leg.wait())
            break
        stopped = leg.stop_if_overrun(budget_s)
        if stopped is not None:
            raise _leg_error("reference", stopped)
        time.sleep(0.005)
    return done[0]


def _announced(beats: list[tuple[int, str]], batch: int) -> list[list[dict[str, Any]]]:
    """[the probes of batch `batch`] once the leg has said the batch is complete; [] before."""
    batches: list[list[dict[str, Any]]] = [[]]
    for _, line in list(beats):
        if line.startswith(INPUT_BEAT):
            try:
                probe = json.loads(line[len(INPUT_BEAT):])
            except ValueError:
                probe = None
            if not (isinstance(probe, dict) and PROBE_KEY.fullmatch(str(probe.get("key")))
                    and isinstance(probe.get("file_sha256"), str)):
                raise KgateError("the reference leg's list of probe inputs came through broken.", "re-run the command.")
            batches[-1].append(probe)
        elif line.startswith(INPUTS_DONE_BEAT):
            if len(batches) - 1 == batch:
                if line != f"{INPUTS_DONE_BEAT}{batch} {len(batches[-1])}":  # a line lost on the way
                    raise KgateError("the reference leg's list of probe inputs came through broken.",
                                     "re-run the command.")
                return [batches[-1]]
            batches.append([])
    return []


def _hand_over(manifest: list[dict[str, Any]], ref_dir: Path, probes_file: Path) -> None:
    """Move the probes' input files to the candidate's folder and list them there: values and
    the shape probes' sizes, never a seed."""
    try:
        for p in manifest:
            os.replace(ref_dir / f"inputs-{p['key']}.pkl", probes_file.parent / f"inputs-{p['key']}.pkl")
        write_new(probes_file, json.dumps(
            [{"key": p["key"], "file_sha256": p["file_sha256"], **({"config": p["config"]} if "config" in p else {})}
             for p in manifest]).encode())
    except OSError as exc:  # only a process of this run could have put something in the way
        raise KgateError(f"the probes' inputs could not be handed over ({describe(exc)}): a process of this run (the "
                         "candidate's, which can write the probe folders) changed them.",
                         "run the candidate on its own to see what it writes; kgate grades no run it could not hand "
                         "its inputs to.") from exc


def _leg_error(role: str, result: Mapping[str, Any]) -> KgateError:
    error = result.get("error", {})
    if result.get("status") == "ERROR":
        return KgateError(str(error.get("problem")), str(error.get("fix")))
    return KgateError(
        f"the {role} leg did not finish: {error.get('problem', result.get('status'))}",
        error.get("fix", "run the reference module by hand (`python -c 'import ...'`) to see the full error."),
    )


def _run(request: CheckRequest, command: str, *, use_tiny: bool, with_firing: bool,
         env: Mapping[str, str] | None = None, workdir: Path | None = None) -> Report:
    started = time.perf_counter()
    ref, cand, arrays, seeds = run_probe_legs(
        request, use_tiny=use_tiny, with_firing=with_firing, env=env, workdir=workdir
    )
    legs_done = time.perf_counter()
    notes: list[str] = []
    if ref.get("odd_note"):
        notes.append(str(ref["odd_note"]))
    notes.extend(dict.fromkeys(str(p["oracle_note"]) for p in ref["probes"] if p.get("oracle_note")))
    notes.extend(dict.fromkeys(str(p["reordered_note"]) for p in ref["probes"] if p.get("reordered_note")))
    if ref["reference"].get("eager"):
        notes.append(EAGER_NOTE)
    if use_tiny and not ref.get("has_tiny") and not request.overrides:
        keys = list(ref["op_point"].get("values", {}))
        small = f"--set{' ' + keys[0] + '=...' if keys else ' KEY=VALUE'} (keys: {', '.join(keys) or 'none'})"
        if request.registered:  # --family: its op-point is registered, and a --set may not move it
            notes.append("the reference defines no TINY op-point: the gate ran at the family's registered op-point "
                         "(slow). Under --family the op-point does not move (a --set must agree with it): for a quick "
                         f"check outside the family's terms, run with -r/-c and {small}; a TINY dict in the reference "
                         "needs a new family (its reference is pinned).")
        else:
            notes.append("the reference defines no TINY op-point: the gate ran at the full op-point (slow); give a small "
                         f"one with {small} or a module-level TINY dict of them.")
    random_seed = seeds[-1]
    if cand.get("status") == "ERROR":
        raise _leg_error("candidate", cand)
    if cand.get("status") != "DONE":
        crashed = _candidate_crashed(command, request, ref, cand, seeds, random_seed, notes)
        if workdir is not None:
            crashed.context["handoff"] = _handoff(ref, workdir)
        return crashed
    runs = {r["key"]: r for r in cand.get("runs", [])}
    probes: list[Probe] = []
    skipped: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    hashes: list[integrity.InputHashes] = []
    for p in ref["probes"]:
        key, label = p["key"], p.get("label", "")
        run = runs.get(key, {})
        hashes.append(integrity.InputHashes(label or p["seed"], p["input_sha256"], run.get("after_sha256", ""),
                                            run.get("received_sha256", "")))
        if p.get("reference_error"):
            skipped.append((label, f"the reference itself fails here ({p['reference_error']})"))
            continue
        if p.get("config") and run.get("error"):  # a kernel may refuse a shape it does not support: said, not failed
            refused.append((label, f"{shown(p['config'])}: {run['error']}"))
            continue
        if label and not parity.all_finite(arrays[f"{key}-reference"]):
            skipped.append((label, "the reference itself is not finite here"))
            continue
        cand_out = arrays.get(f"{key}-candidate")
        probes.append(Probe(
            seed=p["seed"],
            inputs=arrays[f"{key}-inputs"],
            reference=arrays[f"{key}-reference"],
            oracle=arrays[f"{key}-oracle"],
            oracle_kind=p["oracle_kind"],
            reordered=arrays.get(f"{key}-reordered"),
            candidate=cand_out,
            candidate_error=run.get("error", "" if cand_out is not None else "the candidate leg returned no output"),
            unsupported=bool(run.get("unsupported")),
            label=label,
        ))
    gates: dict[str, GateResult] = {
        "integrity": integrity.evaluate(
            (*cand.get("reference_changes", []), *weights_mismatch(ref["reference"], cand.get("candidate", {}))),
            tuple(cand.get("config_mismatches", [])), hashes,
            process_changes=tuple(cand.get("changes", [])), config_labels=tuple(cand.get("config_labels", [])),
        ),
        "parity": parity.evaluate(request.parity_spec, probes, cand.get("prefill"), skipped_edges=skipped,
                                  refused=refused),
    }
    marginal = _marginal(request.parity_spec, gates["parity"]) if use_tiny else ""
    if marginal:
        notes.append(marginal)
    if with_firing:
        shared = parity.shared_floors(request.parity_spec, probes).get(probes[0].name, ())
        facts = _facts(request.parity_spec, probes[0], shared, arrays, cand,
                       [runs[p["key"]] for p in ref["probes"] if not p.get("config") and p["key"] in runs])
        gates["firing"] = firing.audit(
            request.klass, facts, spec=request.firing_spec, reference_compiled=ref.get("reference_compiled"),
            reference_essential=ref.get("reference_essential") or "",
            reference_uncompiled=ref.get("reference_uncompiled", ""),
            trace_error=cand.get("trace_error", "the candidate leg ran no probe"),
            bypass=_bypass(request.parity_spec, probes[0], shared, arrays, cand),
            transplant=_transplant(request.parity_spec, probes, arrays, cand,
                                   {p["key"]: p["seed"] for p in ref["probes"] if not p.get("label")},
                                   strict=request.backend != "jax"),
            audit_error=str(cand.get("experiments_error", "")),
            reference_arithmetic=Arithmetic.from_json(ref.get("reference_arithmetic")),
            edges=_edge_audit(request.parity_spec, probes, arrays, cand, runs),
        )
    if _lowers(request, with_firing):
        gates["lowering"] = _lowering(cand, request.firing_spec.lower_for)
    seed_probes = [p for p in ref["probes"] if not p.get("label")]
    seeding = {str(p["seed"]): p["seeding"] for p in seed_probes}
    context = {
        "class": request.klass,
        "reference": ref["reference"],
        "candidate": cand.get("candidate", {"path": str(request.candidate)}),
        "op_point": ref["op_point"],
        "seeds": list(seeds),
        "random_seed": random_seed,
        "seeding": seeding,
        "input_sha256": {str(p["seed"]): p["input_sha256"] for p in seed_probes},
        "output_sha256": {str(p["seed"]): runs.get(p["key"], {}).get("output_sha256") for p in seed_probes},
        # the candidate's program on the first probe's inputs (verify's measure leg times those)
        "timed_program": runs.get(ref["probes"][0]["key"], {}).get("timed_program") if ref["probes"] else None,
        "edge_probes": [p["label"] for p in ref["probes"] if p.get("label") and not p.get("config")],
        "odd_op_point": next((p["config"] for p in ref["probes"] if p.get("label") == ODD_LABEL), None),
        "drawn_op_points": [p["config"] for p in ref["probes"] if str(p.get("label", "")).startswith(DRAWN_LABEL)],
        "past_op_point": next((p["config"] for p in ref["probes"] if p.get("label") == PAST_LABEL), None),
        "dtype": request.dtype,
        "backend": request.backend,
        "static_inputs": ref.get("static_inputs", []),
        "reference_self_check": ref.get("reference_self_check", "not run"),
        "input_dtypes": floating_dtypes(arrays[f"{ref['probes'][0]['key']}-inputs"].leaves) if ref["probes"] else [],
        "device": ref["device"],
        "interpreted": bool(cand.get("interprets", ref["interpreted"])),
        "isolation": "reference and oracle in a process that never imported the candidate; the candidate in a "
        "process that never held an expected output; verdicts graded in a process that imported neither",
        "wall_s": round(time.perf_counter() - started, 3),
        "seconds": _seconds(ref, cand, time.perf_counter() - legs_done),
    }
    if workdir is not None:  # verify hands the first probe's inputs to its measure leg
        context["handoff"] = _handoff(ref, workdir)
    if all(how == "none" for how in seeding.values()):
        notes.append(
            "create_inputs (or a Model module's get_inputs) takes no seed and makes no jax.random/numpy key kgate "
            "could intercept; every seed sees the same inputs."
        )
    return Report(command, gates, context, tuple(notes))


def run_lower(request: CheckRequest) -> Report:
    """`kgate lower`: the lowering gate alone, from shapes (no inputs made, no kernel run), with
    the candidate in a fresh process and the grading here."""
    started = time.perf_counter()
    lower_for = request.firing_spec.lower_for
    result = run_shape_leg("lower", request, {"use_tiny": True})
    gates: dict[str, GateResult] = {}
    if result.get("status") == "DONE":
        gates["integrity"] = integrity.evaluate(tuple(result.get("reference_changes", [])), (), (),
                                                process_changes=tuple(result.get("changes", [])))
        gates["lowering"] = _lowering(result, lower_for) if result.get("lowering") else GateResult("lowering", (Check(
            "kernel_present", "FAIL", "the candidate's program calls no kernel: there is nothing to lower for a device",
            "`kgate lower` checks a kernel-authored candidate; an xla-rewrite or flag candidate is checked by `kgate gate`.",
        ),))
        unavailable = [str(p.get("unavailable")) for p in result.get("lowering", []) if p.get("unavailable")]
        if unavailable and len(unavailable) == len(result["lowering"]):  # lowering is all this command does
            gates["lowering"] = GateResult("lowering", (Check(
                "lowering_evaluated", "FAIL", f"nothing could be lowered here: {unavailable[0]}",
                "run where jaxlib can lower for that platform (for GPU: the CUDA plugin installed), or choose another "
                "with --lower-for.",
            ), *gates["lowering"].checks), gates["lowering"].details)
    else:
        gates["lowering"] = unfinished("lowering", result)
    context = {
        "class": request.klass,
        "reference": {"path": str(request.reference)},
        "candidate": result.get("candidate", {"path": str(request.candidate)}),
        "op_point": result.get("op_point", {}),
        "dtype": request.dtype,
        "lower_for": lower_for,
        "wall_s": round(time.perf_counter() - started, 3),
    }
    if isinstance(result.get("parent_clock"), Mapping):
        context["seconds"] = {"legs": {"candidate leg": spawn.phase_seconds(result["parent_clock"])}}
    return Report("lower", gates, context)


def run_shape_leg(kind: str, request: CheckRequest, extra: Mapping[str, Any]) -> dict[str, Any]:
    """Run a leg that lowers the candidate from shapes (`lower`, `fit`) in a fresh process: its
    result; the leg's own refusal (bad input) raised here."""
    if request.firing_spec.lower_for == "none":
        raise KgateError(f"`kgate {kind} --lower-for none` would lower nothing.",
                         "give the platform to lower for (tpu, cuda), or auto for the kernels' own.")
    with tempfile.TemporaryDirectory(prefix=f"kgate-{kind}-") as folder:
        result = spawn.run(kind, {
            "reference": str(Path(request.reference).resolve()), "candidate": str(Path(request.candidate).resolve()),
            "entry": request.entry, "reference_entry": request.reference_entry, "overrides": dict(request.overrides),
            "registered": dict(request.registered),
            "kwargs": kwargs_to_wire(request.kwargs), "weights": request.weights, "dtype": request.dtype,
            "backend": request.backend, "lower_for": request.firing_spec.lower_for,
            "chip_kind": request.firing_spec.chip_kind, **extra,
        }, Path(folder), beats=True, phase_budget_s=request.phase_budget_s)
    if result.get("status") == "ERROR":
        raise _leg_error("candidate", result)
    if result.get("status") == "DONE":  # held to what the leg sealed as it made it (kgate.verify.seals)
        lines = [line for _, line in result.get("parent_clock", {}).get("beats", [])]
        result["changes"] = [*result.get("changes", []), *seals.problems(
            result, lines, {}, ("reference_changes", "lowering"), lists=("programs",))]
    return result


def unfinished(gate: str, result: Mapping[str, Any]) -> GateResult:
    """The gate of a leg whose process did not finish: it could not be evaluated, so it FAILs."""
    error = result.get("error", {})
    problem = str(error.get("problem", result.get("status")))
    return GateResult(gate, (error_check(
        f"{gate}_evaluated", f"the candidate's process did not finish: {problem}", problem,
        str(error.get("fix") or "run the candidate module by hand to see the full error."),
    ),))


def _lowers(request: CheckRequest, with_firing: bool) -> bool:
    """The lowering gate runs with the firing audit, for a kernel-authored candidate."""
    return with_firing and request.klass == "kernel-authored"


def _lowering(cand: Mapping[str, Any], lower_for: str) -> GateResult:
    """The lowering gate, graded from what the candidate leg lowered."""
    if lower_for == "none":
        return skipped("lowering", "not lowered for a device (--lower-for none)")
    if cand.get("lowering_skipped"):
        return skipped("lowering", str(cand["lowering_skipped"]))
    if cand.get("lowering_error"):
        return GateResult("lowering", (error_check(
            "lowering_evaluated", f"the candidate could not be lowered: {cand['lowering_error']}",
            str(cand["lowering_error"]),
            "fix the error; a kernel kgate cannot lower for its device cannot pass the lowering gate.",
        ),))
    programs = [LoweredProgram.from_json(p) for p in cand.get("lowering", [])]
    return lowering.evaluate(programs, "the candidate's program calls no kernel: nothing to lower"
                             if "lowering" in cand else "the candidate leg ran no probe")


def _seconds(ref: Mapping[str, Any], cand: Mapping[str, Any], grading_s: float) -> dict[str, Any]:
    """Where the wall time went: each leg's phases on this process's clock (the two legs run
    at once), then the grading here."""
    legs = {f"{role} leg": spawn.phase_seconds(leg["parent_clock"]) for role, leg in (("reference", ref), ("candidate", cand))
            if isinstance(leg.get("parent_clock"), Mapping)}
    seconds: dict[str, Any] = {"legs": legs, "grading_s": round(grading_s, 3)}
    programs = ref.get("programs")
    if isinstance(programs, Mapping):  # the reference leg's compiles: loaded (an earlier reference leg's) or made
        seconds["reference_programs"] = {"loaded": programs.get("hits"), "compiled": programs.get("misses")}
    return seconds


def _marginal(spec: ParitySpec, gate: GateResult) -> str:
    """Why a parity FAIL at TINY may not hold at the op-point: every failure is an error (or the
    relative grade of one, which a float output's max-abs FAIL always brings with it) within 2x
    of the limit (few elements, a coarse floor). The FAIL stands; this says so."""
    failed = gate.failures
    if not failed or spec.kind != "floor" or not all(c.name.endswith((".error", ".relative_error")) for c in failed):
        return ""
    ratios = [float(ratio) for probe in gate.details.get("probes", []) for out in probe.get("outputs", [])
              for ratio in (out.get("max_abs_over_floor"), (out.get("relative") or {}).get("ratio"))
              if isinstance(ratio, (int, float))]
    worst = max(ratios, default=float("inf"))
    if not worst <= 2 * spec.multiplier:
        return ""
    return (f"the parity FAIL at TINY is marginal (worst {worst:.3g}x the floor, limit {spec.multiplier:g}x): TINY "
            "has few elements and a coarse floor, so `kgate parity` at the op-point may PASS; the gate's FAIL stands.")


def _facts(spec: ParitySpec, probe: Probe, shared: Sequence[SharedFloor | None], arrays: Mapping[str, Any],
           cand: Mapping[str, Any], graded: Sequence[Mapping[str, Any]]) -> ProgramFacts | None:
    """The candidate's program facts, with the ablation counted here: an element moved only
    when it moved by more than what parity allows on the first probe (its shared floor); and,
    where the audit runs the candidate again (torch), that run held here to the graded runs at
    its shapes (`graded`, the first the audit's inputs') by what each sealed as it ended."""
    if not cand.get("facts"):
        return None
    facts = ProgramFacts.from_json(cand["facts"])
    if "ablation-moves" in arrays:
        ablation = count_moved(arrays["ablation-moves"].leaves, parity.allowance(spec, probe, shared))
    else:
        ablation = Ablation(False, str(cand.get("ablation_error", "no ablation run")))
    if facts.graded_consistency is None:
        return replace(facts, ablation=ablation)
    ran = [run for run in graded if "error" not in run]
    sealed = firing.graded_record_differs(
        sorted({site.name for site in facts.kernel_sites}), [run.get("launches", []) for run in ran],
        facts.audited_sha256, ran[0].get("output_sha256", "") if ran and ran[0] is graded[0] else "")
    # the sealed record first: the one kept in the candidate's process (what the audit compared
    # in there) could have been rewritten by the candidate before the audit read it
    return replace(facts, ablation=ablation, graded_consistency=sealed or facts.graded_consistency)


def _edge_audit(spec: ParitySpec, probes: Sequence[Probe], arrays: Mapping[str, Any], cand: Mapping[str, Any],
                runs: Mapping[str, Mapping[str, Any]]) -> list[firing.EdgeAudit]:
    """The ablation the leg ran again on the edge probes this process drew (torch), each counted
    here with that probe's parity allowance, its unperturbed run held to the graded run's sealed
    digest."""
    audited, drawn = cand.get("edge_audit"), cand.get("drawn_edges") or []
    if not drawn or not cand.get("facts") or cand.get("experiments_error"):
        return []  # nothing drawn (a JAX leg reads no draw), or no audit to run it beside (said elsewhere)
    said = [(e.get("key"), e.get("label")) for e in audited] if isinstance(audited, list) else audited
    if said != [(d["key"], d["label"]) for d in drawn]:
        return [firing.EdgeAudit("the drawn edges", error=f"the leg audited {said} where this process drew "
                                 f"{[(d['key'], d['label']) for d in drawn]}: the draw was changed on its way")]
    found = []
    for edge in audited:
        label = str(edge.get("label", ""))
        graded = runs.get(str(edge.get("key")), {}).get("output_sha256")
        probe = next((p for p in probes if p.label == label), None)
        moves = arrays.get(f"edge-ablation-{edge.get('key')}")
        graded_out = arrays.get(f"{edge.get('key')}-candidate")
        if edge.get("skipped"):
            found.append(firing.EdgeAudit(label, reason=str(edge["skipped"])))
        elif graded_out is not None and not parity.all_finite(graded_out):  # nothing moves a NaN: parity says it
            found.append(firing.EdgeAudit(label, reason="the candidate's output there is not finite (parity FAILs it)"))
        elif edge.get("error"):
            found.append(firing.EdgeAudit(label, error=str(edge["error"])))
        elif graded and edge.get("audited_sha256") != graded:
            found.append(firing.EdgeAudit(label, differs=True))
        elif probe is None or moves is None:
            found.append(firing.EdgeAudit(label, reason="the probe was not graded (the reference is not finite there, "
                                          "or it raised)"))
        else:
            shared = parity.shared_floors(spec, probes).get(probe.name, ())
            allowed = parity.allowance(spec, probe, shared)
            measured, left_out = _measurable(spec, moves.leaves, probe, allowed)
            if any(m.size for m in measured):
                found.append(firing.EdgeAudit(label, count_moved(measured, allowed), left_out=left_out))
            else:
                found.append(firing.EdgeAudit(label, reason=f"the answer is zero to the output's resolution at every "
                                              f"output element there ({left_out}): nothing a kernel returns moves it"))
    return found


def _measurable(spec: ParitySpec, moves: Sequence[Any], probe: Probe, allowed: float) -> tuple[list[Any], int]:
    """The ablation's moves of the elements it can measure, and how many it cannot: those whose
    answer (what parity grades against) is zero to the output's resolution (under the vanishing
    grade's bound, `parity.clear_of_underflow`, and parity's allowance). An output the edge
    saturates there (a probability an outlier drives to zero) moves with nothing the kernel
    returns, and an answer there from elsewhere is zero too: neither shows, so neither counts."""
    expected = probe.oracle if spec.kind == "floor" and probe.oracle is not None else probe.reference
    out, left_out = [], 0
    for k, moved in enumerate(moves):
        moved = np.asarray(moved)
        answer = np.asarray(expected.leaves[k]) if k < len(expected.leaves) else None
        if answer is not None and answer.shape == moved.shape and parity.graded_relative(answer.dtype):
            # not merely small (parity grades a small element by its own size): zero to the output's resolution
            zero = np.abs(answer.astype(np.float64)) <= min(allowed, parity.clear_of_underflow(answer.dtype))
            left_out += int(zero.sum())
            moved = moved[~zero]
        out.append(moved)
    return out, left_out


def _bypass(spec: ParitySpec, probe: Probe, shared: Sequence[SharedFloor | None], arrays: Mapping[str, Any],
            cand: Mapping[str, Any]) -> dict[str, bool] | str:
    """For each stand-in that replaced the kernels, whether the output still passed parity on the first probe."""
    if cand.get("bypass_error"):
        return str(cand["bypass_error"])
    runs = {k.split("-", 1)[1]: tree for k, tree in arrays.items() if k.startswith("bypass-")}
    if not runs:
        return "the program has no kernel to replace"
    return dict(zip(runs, parity.passes_each(spec, [(replace(probe, candidate=tree, candidate_error=""), shared)
                                                    for tree in runs.values()])))


def _transplant(spec: ParitySpec, probes: Sequence[Probe], arrays: Mapping[str, Any],
                cand: Mapping[str, Any], seeds: Mapping[str, int], strict: bool) -> firing.Transplant | str | None:
    """Whether the output with every kernel's results taken from another probe's run passes
    parity against that probe's answer, and whether it still passes against the first probe's
    own; why it could not be evaluated; a skipped one, and why (a JAX program whose two runs
    take other steps or branches); None where none was run (no second probe at the first's shapes)."""
    if cand.get("transplant_error"):
        return str(cand["transplant_error"])
    if cand.get("transplant_skipped"):
        return firing.Transplant(carries=False, stays=False, strict=strict, skipped=str(cand["transplant_skipped"]))
    runs = [(k.split("-", 1)[1], tree) for k, tree in arrays.items() if k.startswith("transplant-")]
    if not runs:
        return None
    key, tree = runs[0]
    donor = next((p for p in probes if not p.label and p.seed == seeds.get(key)), None)
    if donor is None:
        return "the other probe was not graded"
    floors = parity.shared_floors(spec, probes)
    carries = parity.passes(spec, replace(donor, candidate=tree, candidate_error=""), floors.get(donor.name, ()))
    first = probes[0]
    stays = not carries and parity.passes(spec, replace(first, candidate=tree, candidate_error=""),
                                          floors.get(first.name, ()))
    return firing.Transplant(carries=carries, stays=stays, strict=strict)


def _handoff(ref: Mapping[str, Any], workdir: Path) -> dict[str, str]:
    """Where the first probe's inputs lie, for verify's measure leg, and their hashes."""
    first = ref["probes"][0]
    return {
        "path": str(Path(workdir) / "candidate" / f"inputs-{first['key']}.pkl"),
        "file_sha256": first["file_sha256"],
        "input_sha256": first["input_sha256"],
    }


def _candidate_crashed(command: str, request: CheckRequest, ref: Mapping[str, Any], cand: Mapping[str, Any],
                       seeds: tuple[int, ...], random_seed: int, notes: list[str]) -> Report:
    """The candidate's process died (a segfault, an exit, an out-of-memory): a FAIL, with its last words."""
    error = cand.get("error", {})
    problem = error.get("problem", cand.get("status"))
    crashed = error_check("candidate_ran", f"the candidate's process did not finish: {problem}", str(problem),
                          error.get("fix", "run the candidate on the probe inputs by hand and fix the crash."))
    gates = {"parity": GateResult("parity", (crashed,), {"spec": request.parity_spec.describe()})}
    context = {"class": request.klass, "reference": ref["reference"], "candidate": {"path": str(request.candidate)},
               "op_point": ref["op_point"], "seeds": list(seeds), "random_seed": random_seed,
               "device": ref["device"], "interpreted": ref["interpreted"], "seconds": _seconds(ref, cand, 0.0)}
    return Report(command, gates, context, tuple(notes))


# These runs are compile-dominated (every probe jits): each holds one of the host's
# compile slots, so at most two compile at once per host.


def run_parity(request: CheckRequest) -> Report:
    """Integrity + multi-seed parity at the op-point (CONFIG with `--set` overrides)."""
    with compile_slot():
        return _run(request, "parity", use_tiny=False, with_firing=False)


def run_screen_checks(request: CheckRequest, env: Mapping[str, str], workdir: Path) -> Report:
    """verify's checks: integrity + multi-seed parity + firing, at the op-point (not TINY), with
    verify's environment for the legs; the first probe's inputs stay in `workdir` for timing."""
    with compile_slot():
        return _run(request, "checks", use_tiny=False, with_firing=True, env=env, workdir=workdir)


def run_gate(request: CheckRequest) -> Report:
    """The early-kill gate: integrity + parity at TINY (or `--set`) + the firing audit."""
    with compile_slot():
        return _run(request, "gate", use_tiny=True, with_firing=True)
