"""`kgate calibrate`: measure the rig itself before registering a bar.

The reference against a separately loaded and compiled copy of itself (A/A), with the
same sessions, cache flush and interval as `kgate measure`, plus the dispatch floor of
one trivial op on the same buffers; then which speedups this machine can resolve.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgate import clock as kclock
from kgate.backends import backend_for, get_backend
from kgate.gates import stats
from kgate.gates.bar import Bar
from kgate.gates.common import Check, GateResult
from kgate.problem import load_pair
from kgate.verify.lock import compile_slot
from kgate.verify.measure import (
    CPU_BUDGET_S,
    CPU_MAX_ROUNDS,
    LegPair,
    collect,
    timing_gate,
)
from kgate.verify.spawn import beat, phase_seconds, phases_here
from kgate.verify.outcome import NOT_TIMED, NOT_TIMED_NOTE, Report, not_timed_gates


@dataclass(frozen=True)
class CalibrateRequest:
    reference: Path
    reference_entry: str = "workload"
    seed: int = 42
    dtype: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    bar: Bar | None = None
    budget_s: float = 10.0
    per_round: int = 0
    sessions: int = 3
    order_seed: int | None = None
    time_interpreted: bool = False  # time a reference that runs a kernel in an interpreter; default: skip
    weights: str = "shared"  # a Model reference's weights: shared | random:SEED (`--weights`)
    backend: str | None = None  # `--backend`: the framework to run the problem with; None: from its imports


def run_calibrate(request: CalibrateRequest, progress: Callable[[int, float], None] | None = None) -> Report:
    """Measure the rig: the reference against a separately loaded copy of itself (A/A),
    and the dispatch floor of one trivial op on the same buffers."""
    with phases_here() as clock:
        report = _calibrate(request, progress)
    report.context["seconds"] = {"legs": {"this process": phase_seconds(clock)}}
    return report


def _calibrate(request: CalibrateRequest, progress: Callable[[int, float], None] | None) -> Report:
    started = time.perf_counter()
    clock = kclock.perf_counter_ns
    backend = get_backend(backend_for(request.reference, request.backend))
    beat("phase importing the reference and its copy")
    with load_pair(request.reference, request.reference, overrides=request.overrides, entry=request.reference_entry,
                   reference_entry=request.reference_entry, weights=request.weights) as pair:
        backend.refuse_ineffective(pair.reference, request.dtype, pair.op_point, dict(request.overrides))
        # the reference's and its copy's outputs beside one set of inputs: as measure counts, ~2 probes
        backend.ensure_fits(pair.reference, request.dtype, 2, dict(pair.reference.config or {}))
        beat("phase making inputs")
        inputs, _ = backend.create_inputs(pair.reference, request.seed, request.dtype)
        beat("phase tracing the reference for kernels")
        interpreted = backend.interprets(pair.reference.entry, inputs, pair.reference.eager)
        context = {
            "reference": pair.reference.to_json(),
            "op_point": pair.op_point.to_json(),
            "seed": request.seed,
            "device": backend.device().to_json(),
            "interpreted": interpreted,
        }
        if interpreted and not request.time_interpreted:  # an interpreter's noise says nothing about the device
            gates = {"calibration": GateResult("calibration", (), {}, "not calibrated: " + NOT_TIMED.split(": ", 1)[1]),
                     **not_timed_gates(None)}
            return Report("calibrate", gates, {**context, "wall_s": round(time.perf_counter() - started, 3)},
                          (NOT_TIMED_NOTE,))
        flush, flush_text = backend.cache_flusher()
        beat("phase compiling the reference and its copy")
        with compile_slot():
            copy = backend.compile_timed(pair.candidate.entry, inputs, clock, flush, eager=pair.reference.eager)
        copy.output()
        with compile_slot():
            ref = backend.compile_timed(pair.reference.entry, inputs, clock, flush, eager=pair.reference.eager)
        ref.output()
        budget = min(request.budget_s, CPU_BUDGET_S) if backend.interpreted else request.budget_s  # the CPU stand-in
        max_rounds = CPU_MAX_ROUNDS if backend.interpreted else 200

        def make_legs(session: int) -> tuple[Any, Any]:
            if session == 0:
                return ref, copy
            fresh = backend.copy_inputs(inputs)
            with compile_slot():
                return (
                    backend.compile_timed(pair.reference.entry, fresh, clock, flush, eager=pair.reference.eager),
                    backend.compile_timed(pair.candidate.entry, fresh, clock, flush, eager=pair.reference.eager),
                )

        samples, stop_reason, per_round, per_call_s, looks = collect(
            make_legs,
            sessions=request.sessions,
            per_round=request.per_round,
            min_rounds=min(8, max_rounds),
            max_rounds=max_rounds,
            budget_s=budget,
            target_ci=1e-9,  # calibration spends its whole budget: the noise is what we want
            rng=random.Random(request.order_seed),
            progress=progress,
        )
        beat("phase timing the dispatch floor")
        with compile_slot():
            probe = backend.compile_timed(backend.dispatch_probe(inputs), inputs, clock, flush)
        for _ in range(3):
            probe()
        floor_ms = float(np.median([probe() / 1e6 for _ in range(max(20, per_round * 4))]))
        k = request.bar.sigma_k if request.bar and request.bar.sigma_k else 3.0
        timing, numbers = timing_gate(
            samples, stop_reason, interpreted, k, LegPair("reference", "reference copy"), per_call_s, flush_text,
            looks, request.sessions, min(8, max_rounds), budget, max_rounds,
        )
        interval = numbers["interval"]
        ref_p50 = timing.details["reference"]["p50_ms"]
        calibration: dict[str, Any] = {
            "aa_speedup": interval.to_json(),
            "noise_floor": numbers["sigma"] / ref_p50 if ref_p50 else math.inf,
            "ci_half_width": (interval.high - interval.low) / 2.0,
            "minimum_detectable_speedup": timing.details["minimum_detectable_speedup"],
            # what `kgate measure` with this budget detects with 90% power: the A/A sessions' scatter,
            # and as many sessions as this budget held (calibration spends all of it)
            "power": timing.details["power"],
            "detectable_speedup": timing.details["power"]["detectable_speedup"],
            "dispatch_floor_ms": floor_ms,
            "workload_over_dispatch": ref_p50 / floor_ms if floor_ms > 0 else math.inf,
        }
        checks = [
            Check(
                "aa_unbiased",
                "PASS" if interval.contains(1.0) else "FAIL",
                f"A/A speedup {interval.estimate:.4f} [95% CI {interval.low:.4f}, {interval.high:.4f}]"
                + (" contains 1.0" if interval.contains(1.0) else " excludes 1.0: identical legs time differently"),
                "" if interval.contains(1.0) else "the rig is biased (thermal drift, another process, frequency "
                "scaling): fix the machine before trusting any comparison.",
            ),
        ]
        if calibration["workload_over_dispatch"] < 3:
            checks.append(
                Check(
                    "above_dispatch",
                    "ADVISORY",
                    f"the workload takes {calibration['workload_over_dispatch']:.1f}x the dispatch floor: most of "
                    "what is timed is launch overhead, not the kernel",
                    "enlarge the op-point to measure the kernel rather than the dispatch.",
                )
            )
        thresholds = [c.value for c in request.bar.clauses if c.kind == "threshold"] if request.bar else [1.02]
        power = calibration["power"]
        for t in thresholds:
            detectable = calibration["detectable_speedup"]
            measurable = stats.resolves(t, detectable)
            calibration.setdefault("bar_measurable", {})[f"{t:.4f}"] = measurable
            checks.append(
                Check(
                    "bar_measurable",
                    "PASS" if measurable else "ADVISORY",
                    f"a bar at {t:.4f}x is {'measurable' if measurable else 'NOT measurable'} in a "
                    f"{power['budget_s']:g} s run here: about {power['sessions_in_budget']} sessions detect a speedup of "
                    f"{detectable:.4f}x with {power['power']:.0%} power (A/A scatter per session "
                    f"{power['session_sd_log']:.2%}); minimum detectable speedup at {k:g} sigma of the rounds "
                    f"{calibration['minimum_detectable_speedup']:.4f}x",
                    "" if measurable else "raise the bar, raise --budget, enlarge the op-point, or measure on a "
                    "quieter machine.",
                )
            )
        gates = {"calibration": GateResult("calibration", tuple(checks), calibration), "timing": timing}
        return Report("calibrate", gates, {**context, "wall_s": round(time.perf_counter() - started, 3)})
