"""How often does an honest kernel fail the floor parity rule on a random seed, with each probe
graded against its own floor and against the floor the seed probes of its shape share?
Side by side, on the same draws. Run by hand:

    .venv/bin/python benchmarks/floor_sharing.py [--draws N]

Each draw is what `kgate gate` grades: seeds 42 and 43 plus one random seed, at one shape.
The reference, its float64 oracle and the candidate run here through kgate's own backend (a
Pallas candidate in interpret mode); kgate's parity gate grades the three seed probes, once
one by one (each its own floor) and once together (the shared floor). A draw fails when any
of its probes' error checks fails. The edge probes, made from seed 42's inputs as the gate
makes them (the spikes edge placed by the drawn seed), are counted apart: graded alone, and
graded with the seed probes, whose floor they receive. Both candidates are honest: a failure
is a false alarm.
"""

from __future__ import annotations

import argparse
import random
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
]


def probes(backend: JaxBackend, candidate: str, shape: dict[str, int], seeds: list[int]) -> list[Probe]:
    out = []
    with load_pair(EX / "softmax/reference.py", EX / candidate, overrides=shape) as pair:
        for seed in seeds:
            inputs, _ = backend.create_inputs(pair.reference, seed, None)
            host = backend.to_host(inputs)
            out.append(Probe(seed, host, backend.run(pair.reference.entry, inputs),
                             backend.run_oracle(pair.reference.entry, inputs, "float64"), "float64",
                             backend.run(pair.candidate.entry, inputs)))
    return out


def edge_probes(backend: JaxBackend, candidate: str, shape: dict[str, int], seed: int) -> list[Probe]:
    out = []
    with load_pair(EX / "softmax/reference.py", EX / candidate, overrides=shape) as pair:
        inputs, _ = backend.create_inputs(pair.reference, 42, None)
        for label, edge in backend.edge_inputs(inputs, seed=seed):
            out.append(Probe(42, backend.to_host(edge), backend.run(pair.reference.entry, edge),
                             backend.run_oracle(pair.reference.entry, edge, "float64"), "float64",
                             backend.run(pair.candidate.entry, edge), label=label))
    return out


def _edge_failed(result: GateResult) -> bool:
    return any(c.status == "FAIL" and c.name.startswith(EDGE_PREFIX) for c in result.checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=100, help="random seeds per case (each with 42 and 43)")
    draws = parser.parse_args().draws
    backend, spec, rng = JaxBackend(), ParitySpec("floor"), random.SystemRandom()
    print(f"{'':45}{'seed probes fail':>24}{'edge probes fail':>24}")
    print(f"{'candidate':26}{'shape':>12}{'draws':>7}{'own floor':>12}{'shared':>12}{'own floor':>12}{'shared':>12}")
    for candidate, shape in CASES:
        fixed = probes(backend, candidate, shape, [42, 43])
        own = shared = edge_own = edge_shared = 0
        for _ in range(draws):
            seed = rng.randrange(1, 2**31 - 1)
            draw, edges = fixed + probes(backend, candidate, shape, [seed]), edge_probes(backend, candidate, shape, seed)
            own += any(evaluate(spec, [p]).status == "FAIL" for p in draw)
            shared += evaluate(spec, draw).status == "FAIL"
            edge_own += any(_edge_failed(evaluate(spec, [e])) for e in edges)
            edge_shared += _edge_failed(evaluate(spec, draw + edges))
        size = "x".join(str(v) for v in shape.values())
        rates = "".join(f"{n / draws:>12.1%}" for n in (own, shared, edge_own, edge_shared))
        print(f"{candidate:26}{size:>12}{draws:>7}{rates}", flush=True)


if __name__ == "__main__":
    main()
