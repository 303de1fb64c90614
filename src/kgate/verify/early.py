"""`kgate parity` and `kgate gate`: integrity, multi-seed parity and the firing audit,
run in this process against modules loaded in protocol order.

The candidate runs on every seed before any reference output exists in the process, so
it cannot find (or land on freed memory holding) the expected answer; the reference
then runs on a pristine copy of the inputs, taken before the candidate first ran.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgate.backends import HostTree, get_backend
from kgate.errors import KgateError, describe
from kgate.gates import firing, integrity, parity
from kgate.gates.common import GateResult
from kgate.gates.firing import FiringSpec
from kgate.gates.parity import ParitySpec, Probe
from kgate.problem import load_pair
from kgate.verify.lock import compile_slot
from kgate.verify.outcome import Report

DEFAULT_SEEDS: tuple[int, ...] = (42, 43)


@dataclass(frozen=True)
class CheckRequest:
    reference: Path
    candidate: Path
    entry: str = "workload"
    klass: str = "kernel-authored"
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    dtype: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    parity_spec: ParitySpec = ParitySpec("floor")
    firing_spec: FiringSpec = FiringSpec()

    def __post_init__(self) -> None:
        firing.parse_classes(self.klass)
        if not self.seeds:
            raise KgateError("no seeds given.", "pass at least one --seed, e.g. --seed 42 --seed 43.")
        if len(set(self.seeds)) != len(self.seeds):
            raise KgateError(f"seeds {list(self.seeds)} repeat.", "give distinct seeds.")



def _run(request: CheckRequest, command: str, *, use_tiny: bool, with_firing: bool) -> Report:
    started = time.perf_counter()
    backend = get_backend("jax")
    with load_pair(
        request.reference, request.candidate, entry=request.entry, overrides=request.overrides, use_tiny=use_tiny
    ) as pair:
        notes: list[str] = []
        if use_tiny and not vars(pair.reference.module).get("TINY") and not request.overrides:
            notes.append("the reference defines no TINY op-point: the gate ran at the full CONFIG (slow).")
        # 1. Inputs for every seed, then the candidate on every seed, before any reference output exists.
        inputs: dict[int, tuple[Any, ...]] = {}
        seeding: dict[int, str] = {}
        created: dict[int, str] = {}
        pristine: dict[int, tuple[Any, ...]] = {}
        for seed in request.seeds:
            inputs[seed], seeding[seed] = backend.create_inputs(pair.reference, seed, request.dtype)
            created[seed] = backend.digest(inputs[seed])
            pristine[seed] = backend.copy_inputs(inputs[seed])
        candidate_out: dict[int, HostTree | None] = {}
        candidate_err: dict[int, str] = {}
        after: dict[int, str] = {}
        for seed in request.seeds:
            try:
                candidate_out[seed] = backend.run(pair.candidate.entry, inputs[seed])
            except Exception as exc:  # the candidate's failure is evidence, not a crash
                candidate_out[seed], candidate_err[seed] = None, describe(exc)
            try:
                after[seed] = backend.digest(inputs[seed])
            except Exception:
                after[seed] = ""
        prefill: str | None = None
        first = request.seeds[0]
        if backend.interpreted and candidate_out[first] is not None:
            try:
                zero = backend.run(pair.candidate.entry, inputs[first], uninitialized="zero")
                prefill = parity.compare_prefill(candidate_out[first], zero)  # type: ignore[arg-type]
            except Exception as exc:
                prefill = f"the candidate failed when fresh buffers were zero-filled: {describe(exc)}"
        # 2. The reference and its oracle, on the pristine copy.
        probes: list[Probe] = []
        hashes: list[integrity.InputHashes] = []
        for seed in request.seeds:
            clean = pristine[seed]
            hashes.append(integrity.InputHashes(seed, created[seed], after[seed], backend.digest(clean)))
            try:
                ref_out = backend.run(pair.reference.entry, clean)
                oracle = backend.run_oracle(pair.reference.entry, clean, "float32")
                oracle_kind = "float32"
                if parity.floor_is_degenerate(ref_out, oracle):
                    oracle, oracle_kind = backend.run_oracle(pair.reference.entry, clean, "float64"), "float64"
            except Exception as exc:
                raise KgateError(
                    f"the reference {pair.reference.path.name} failed on seed {seed}: {describe(exc)}",
                    "fix the reference module; kgate cannot grade against a reference that does not run.",
                ) from exc
            probes.append(
                Probe(
                    seed=seed,
                    inputs=backend.to_host(clean),
                    reference=ref_out,
                    oracle=oracle,
                    oracle_kind=oracle_kind,
                    candidate=candidate_out[seed],
                    candidate_error=candidate_err.get(seed, ""),
                )
            )
        gates: dict[str, GateResult] = {
            "integrity": integrity.evaluate(pair.reference_changes, pair.config_mismatches, hashes),
            "parity": parity.evaluate(request.parity_spec, probes, prefill),
        }
        # 3. The firing audit, on the first seed's inputs.
        if with_firing:
            gates["firing"] = _firing(backend, pair, request, inputs[first])
        context = {
            "class": request.klass,
            "reference": pair.reference.to_json(),
            "candidate": pair.candidate.to_json(),
            "op_point": pair.op_point.to_json(),
            "seeds": list(request.seeds),
            "seeding": {str(s): seeding[s] for s in request.seeds},
            "input_sha256": {str(s): created[s] for s in request.seeds},
            "output_sha256": {
                str(s): (out.sha256() if (out := candidate_out[s]) is not None else None) for s in request.seeds
            },
            "dtype": request.dtype,
            "device": backend.device().to_json(),
            "interpreted": backend.interpreted,
            "wall_s": round(time.perf_counter() - started, 3),
        }
        if all(how == "none" for how in seeding.values()):
            notes.append(
                "create_inputs takes no seed and makes no jax.random/numpy key kgate could intercept; "
                "every seed sees the same inputs."
            )
        return Report(command, gates, context, tuple(notes))


def _firing(backend: Any, pair: Any, request: CheckRequest, inputs: tuple[Any, ...]) -> GateResult:
    try:
        facts = backend.inspect(pair.candidate.entry, inputs)
    except Exception as exc:
        return firing.audit(request.klass, None, trace_error=describe(exc))
    reference_compiled = None
    if request.klass != "kernel-authored":
        reference_compiled = backend.compiled_text(pair.reference.entry, inputs)
    return firing.audit(request.klass, facts, spec=request.firing_spec, reference_compiled=reference_compiled)


# These runs are compile-dominated (every probe jits): each holds one of the host's
# compile slots, so at most two compile at once per host.


def run_parity(request: CheckRequest) -> Report:
    """Integrity + multi-seed parity at the op-point (CONFIG with `--set` overrides)."""
    with compile_slot():
        return _run(request, "parity", use_tiny=False, with_firing=False)


def run_screen_checks(request: CheckRequest) -> Report:
    """verify's checks leg: integrity + multi-seed parity + firing, at the op-point (not TINY)."""
    with compile_slot():
        return _run(request, "checks", use_tiny=False, with_firing=True)


def run_gate(request: CheckRequest) -> Report:
    """The early-kill gate: integrity + parity at TINY (or `--set`) + the firing audit."""
    with compile_slot():
        return _run(request, "gate", use_tiny=True, with_firing=True)
