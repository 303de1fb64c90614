"""How often does an honest kernel fail the floor parity rule on a random seed, with each probe
graded against its own floor, against the floor the seed probes of its shape share, and against
that shared floor measured twice (the reference as written, and with its sums taken in
sequence: kgate.backends.reorder)? Side by side, on the same draws. Run by hand:

    .venv/bin/python benchmarks/floor_sharing.py [--draws N]

Each draw is what `kgate gate` grades: seeds 42 and 43 plus one random seed, at one shape.
The reference, its float64 oracle and the candidate run here through kgate's own backend (a
Pallas candidate in interpret mode); kgate's parity gate grades the three seed probes, once
one by one (each its own floor) and once together (the shared floor). A draw fails when any
of its probes' error checks fails. The edge probes, made from seed 42's inputs as the gate
makes them (the spikes edge placed by the drawn seed), are counted apart: graded alone, and
graded with the seed probes, whose floor they receive. The first two columns of each grade
the reference's own order only, as kgate did before the reordered measurement. Both candidates
are honest: a failure is a false alarm.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import replace
from pathlib import Path

from kgate.backends.jax_backend import JaxBackend
from kgate.gates.common import GateResult
from kgate.gates.parity import EDGE_PREFIX, ParitySpec, Probe, evaluate
from kgate.problem.module import load_pair

EX = Path(__file__).resolve().parent.parent / "examples"
CASES = [
    ("softmax/pallas.py", {"rows": 16, "cols": 256}),  # the gate's TINY
    ("softmax/xla_rewrite.py", {"rows": 16, "cols": 256}),
    ("softmax/xla_rewrite.py", {"rows": 64, "cols": 1024}),  # parity_multiplier.py's op-point
    ("softmax/xla_rewrite.py", {"rows": 256, "cols": 2048}),  # rows as long as the example's CONFIG
]


def probes(backend: JaxBackend, candidate: str, shape: dict[str, int], seeds: list[int]) -> list[Probe]:
    out = []
    with load_pair(EX / "softmax/reference.py", EX / candidate, overrides=shape) as pair:
        for seed in seeds:
            inputs, _ = backend.create_inputs(pair.reference, seed, None)
            host = backend.to_host(inputs)
            out.append(Probe(seed, host, backend.run(pair.reference.entry, inputs),
                             backend.run_oracle(pair.reference.entry, inputs, "float64"), "float64",
                             backend.run(pair.candidate.entry, inputs),
                             reordered=backend.run_reordered(pair.reference.entry, inputs)))
    return out


def edge_probes(backend: JaxBackend, candidate: str, shape: dict[str, int], seed: int) -> list[Probe]:
    out = []
    with load_pair(EX / "softmax/reference.py", EX / candidate, overrides=shape) as pair:
        inputs, _ = backend.create_inputs(pair.reference, 42, None)
        for label, edge in backend.edge_inputs(inputs, seed=seed):
            out.append(Probe(42, backend.to_host(edge), backend.run(pair.reference.entry, edge),
                             backend.run_oracle(pair.reference.entry, edge, "float64"), "float64",
                             backend.run(pair.candidate.entry, edge), label=label,
                             reordered=backend.run_reordered(pair.reference.entry, edge)))
    return out


def _edge_failed(result: GateResult) -> bool:
    return any(c.status == "FAIL" and c.name.startswith(EDGE_PREFIX) for c in result.checks)


def _as_written(probes: list[Probe]) -> list[Probe]:
    """The probes without the reordered measurement: the reference's own order only."""
    return [replace(p, reordered=None) for p in probes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=100, help="random seeds per case (each with 42 and 43)")
    draws = parser.parse_args().draws
    backend, spec, rng = JaxBackend(), ParitySpec("floor"), random.SystemRandom()
    print(f"{'':45}{'seed probes fail':>36}{'edge probes fail':>36}")
    print(f"{'candidate':26}{'shape':>12}{'draws':>7}" + 2 * f"{'own floor':>12}{'shared':>12}{'+reordered':>12}")
    for candidate, shape in CASES:
        fixed = probes(backend, candidate, shape, [42, 43])
        counts = [0] * 6
        for _ in range(draws):
            seed = rng.randrange(1, 2**31 - 1)
            draw, edges = fixed + probes(backend, candidate, shape, [seed]), edge_probes(backend, candidate, shape, seed)
            plain, plain_edges = _as_written(draw), _as_written(edges)
            counts[0] += any(evaluate(spec, [p]).status == "FAIL" for p in plain)
            counts[1] += evaluate(spec, plain).status == "FAIL"
            counts[2] += evaluate(spec, draw).status == "FAIL"
            counts[3] += any(_edge_failed(evaluate(spec, [e])) for e in plain_edges)
            counts[4] += _edge_failed(evaluate(spec, plain + plain_edges))
            counts[5] += _edge_failed(evaluate(spec, draw + edges))
        size = "x".join(str(v) for v in shape.values())
        rates = "".join(f"{n / draws:>12.1%}" for n in counts)
        print(f"{candidate:26}{size:>12}{draws:>7}{rates}", flush=True)


if __name__ == "__main__":
    main()
