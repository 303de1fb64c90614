"""Integrity checks: did the candidate tamper with what it is compared against?

Each check is named; a failure here means the comparison itself cannot be trusted,
so the run's overall status is ANOMALY rather than a plain FAIL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgate.gates.common import Check, GateResult


@dataclass(frozen=True)
class InputHashes:
    """sha256 of one seed's inputs: as created, after the candidate ran, and of the
    pristine copy (taken before the candidate ran) that the reference runs on."""

    seed: int
    created: str
    after_candidate: str  # "" when the inputs could no longer be read (deleted/donated)
    pristine: str


def evaluate(
    reference_changes: Sequence[str],
    config_mismatches: Sequence[str],
    hashes: Sequence[InputHashes],
) -> GateResult:
    checks: list[Check] = []
    if reference_changes:
        checks.append(
            Check(
                "reference_untouched",
                "FAIL",
                "importing the candidate changed the reference: " + "; ".join(reference_changes),
                "the candidate must not rebind, mutate or monkeypatch the reference module or the libraries "
                "it uses; import it read-only.",
            )
        )
    else:
        checks.append(Check("reference_untouched", "PASS", "the reference module and its libraries are unchanged"))
    if config_mismatches:
        checks.append(
            Check(
                "config_consistent",
                "FAIL",
                "the candidate's CONFIG disagrees with the reference's: " + "; ".join(config_mismatches),
                "read the op-point from the reference's CONFIG (import it) instead of keeping a divergent copy.",
            )
        )
    mutated = [h.seed for h in hashes if h.after_candidate != h.created]
    if mutated:
        checks.append(
            Check(
                "inputs_unchanged",
                "FAIL",
                f"the candidate mutated, donated or deleted its inputs (seeds {mutated}).",
                "never write into or donate the input buffers.",
            )
        )
    elif hashes:
        checks.append(Check("inputs_unchanged", "PASS", "input hashes identical before and after the candidate"))
    altered = [h.seed for h in hashes if h.pristine != h.created]
    if altered:
        checks.append(
            Check(
                "pristine_copy_intact",
                "FAIL",
                f"the pristine copy of the inputs the reference runs on changed (seeds {altered}).",
                "the candidate must not reach into other buffers of the process.",
            )
        )
    details = {
        "input_hashes": [
            {"seed": h.seed, "created": h.created, "after_candidate": h.after_candidate, "pristine": h.pristine}
            for h in hashes
        ]
    }
    return GateResult("integrity", tuple(checks), details)
