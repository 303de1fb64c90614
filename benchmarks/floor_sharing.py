"""How often does an honest kernel fail the floor parity rule on a random seed, with each seed
probe graded against its own floor and against the floor the seed probes of its shape share?
Side by side, on the same draws. Run by hand:

    .venv/bin/python benchmarks/floor_sharing.py [--draws N]

Each draw is what `kgate gate` grades: seeds 42 and 43 plus one random seed, at one shape.
The reference, its float64 oracle and the candidate run here through kgate's own backend (a
Pallas candidate in interpret mode); kgate's parity gate grades the three seed probes, once
one by one (each its own floor) and once together (the shared floor). A draw fails when any
of its probes' error checks fails. Both candidates are honest: a failure is a false alarm.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from kgate.backends.jax_backend import JaxBackend
from kgate.gates.parity import ParitySpec, Probe, evaluate
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=100, help="random seeds per case (each with 42 and 43)")
    draws = parser.parse_args().draws
    backend, spec, rng = JaxBackend(), ParitySpec("floor"), random.SystemRandom()
    print(f"{'candidate':26}{'shape':>12}{'draws':>7}{'own floor fails':>17}{'shared floor fails':>20}")
    for candidate, shape in CASES:
        fixed = probes(backend, candidate, shape, [42, 43])
        own = shared = 0
        for _ in range(draws):
            draw = fixed + probes(backend, candidate, shape, [rng.randrange(2**31)])
            own += any(evaluate(spec, [p]).status == "FAIL" for p in draw)
            shared += evaluate(spec, draw).status == "FAIL"
        size = "x".join(str(v) for v in shape.values())
        print(f"{candidate:26}{size:>12}{draws:>7}{own / draws:>17.1%}{shared / draws:>20.1%}")


if __name__ == "__main__":
    main()
