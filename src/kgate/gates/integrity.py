"""Integrity checks: did the candidate tamper with what it is compared against?

Each check is named; a failure here means the comparison itself cannot be trusted,
so the run's overall status is ANOMALY rather than a plain FAIL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgate.gates.common import Check, GateResult


@dataclass(frozen=True)
class InputHashes:
    """sha256 of one probe's inputs: as the reference's process created them, as the
    candidate's process received them, and after the candidate ran on them."""

    seed: int | str  # a seed, or an edge probe's label
    created: str
    after_candidate: str  # "" when the inputs could no longer be read (deleted/donated)
    received: str


def evaluate(
    reference_changes: Sequence[str],
    config_mismatches: Sequence[str],
    hashes: Sequence[InputHashes],
    *,
    process_changes: Sequence[str] = (),
    config_labels: Sequence[str] = (),
) -> GateResult:
    """`process_changes`: what the candidate's process found rebound in kgate's modules or the
    array library's surface since before the candidate was imported."""
    checks: list[Check] = []
    if process_changes:
        checks.append(
            Check(
                "process_untouched",
                "FAIL",
                "candidate code patched what kgate or the array library uses: " + "; ".join(process_changes[:12])
                + (f"; and {len(process_changes) - 12} more" if len(process_changes) > 12 else ""),
                "the candidate must not rebind, wrap or monkeypatch kgate or its array libraries (jax, numpy, torch, triton); nothing its process "
                "reports can be trusted after it does.",
            )
        )
    else:
        checks.append(
            Check("process_untouched", "PASS", "kgate's modules and the array library's surface unchanged by the candidate")
        )
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
                "the candidate's op-point disagrees with the reference's: " + "; ".join(config_mismatches),
                "read the op-point from the reference (its CONFIG or shape globals: import it) instead of keeping "
                "a divergent copy.",
            )
        )
    elif config_labels:
        checks.append(
            Check(
                "config_consistent",
                "PASS",
                "the op-point values agree; descriptive labels differ, which the reference's code never reads "
                "(not part of the op-point): " + "; ".join(config_labels),
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
    altered = [h.seed for h in hashes if h.received != h.created]
    if altered:
        checks.append(
            Check(
                "inputs_received_intact",
                "FAIL",
                f"the inputs reached the candidate's process changed (seeds {altered}).",
                "something rewrote kgate's hand-over files: nothing of this run can be trusted.",
            )
        )
    details = {
        "input_hashes": [
            {"seed": h.seed, "created": h.created, "received": h.received, "after_candidate": h.after_candidate}
            for h in hashes
        ]
    }
    return GateResult("integrity", tuple(checks), details)


CLOCK_SLACK_MS = 1.0  # rounding only: an honest round always fits its window (see spawn's docstring)


_ROUND = re.compile(r"(r|e) ([0-9]{1,9})")  # ASCII digits only: candidate code can write this channel too


def round_line(line: str) -> tuple[str, int] | None:
    """(`r` or `e`, round) for a beat line that requests a round's tick or ends a round; None else."""
    m = _ROUND.fullmatch(line)
    return (m.group(1), int(m.group(2))) if m else None


def clock_bound(
    name: str, reported_ms: Sequence[float], beats: Sequence[Sequence[object]], ticks: Sequence[Sequence[object]]
) -> Check:
    """Every round's reported time (both legs' samples) must fit the window the parent's own
    clock saw: from the moment it sent the round's tick to the moment it read the round's end
    beat `e I`. Both bounds are sound, so a busy machine only widens a window; time that did
    not pass on the parent's clock was invented in the child (a slowed or wrapped clock)."""
    starts: dict[int, float] = {}
    ends: dict[int, float] = {}
    requests: dict[int, int] = {}
    for ns, index in ticks:
        starts.setdefault(int(index), float(ns) / 1e6)  # type: ignore[call-overload]
    for ns, line in beats:
        parsed = round_line(str(line))
        if parsed is not None and parsed[0] == "e":
            ends.setdefault(parsed[1], float(ns) / 1e6)  # type: ignore[arg-type]
        elif parsed is not None:
            requests[parsed[1]] = requests.get(parsed[1], 0) + 1
    forged = sorted(i for i, n in requests.items() if n > 1)
    if forged:
        return Check(
            name,
            "FAIL",
            f"the tick for round {forged[0]} was requested {requests[forged[0]]} times ({len(forged)} round(s) so): "
            "someone besides kgate's timing loop asked for ticks, to open a round's window early",
            "remove whatever writes to kgate's beat channel; nothing this run timed holds.",
        )
    missing = [i for i in range(len(reported_ms)) if i not in starts or i not in ends]
    if missing:
        return Check(
            name,
            "FAIL",
            f"the timing process did not mark {len(missing)} of its {len(reported_ms)} rounds on the parent's clock "
            f"(first: round {missing[0]}): its samples cannot be bounded",
            "re-run; a candidate that closes or floods kgate's beat channel makes its timings unverifiable.",
        )
    over = [
        (i, reported_ms[i], ends[i] - starts[i])
        for i in range(len(reported_ms))
        if reported_ms[i] > ends[i] - starts[i] + CLOCK_SLACK_MS
    ]
    if over:
        i, got, window = max(over, key=lambda x: x[1] - x[2])
        return Check(
            name,
            "FAIL",
            f"{len(over)} round(s) report more time than passed on the parent's clock (worst: round {i} reports "
            f"{got:.3f} ms in a {window:.3f} ms window): the child's clock or timed call was tampered with",
            "remove whatever slows, wraps or replaces the clock or the timed call; nothing this run timed holds.",
        )
    total_window = sum(ends[i] - starts[i] for i in range(len(reported_ms)))
    return Check(
        name,
        "PASS",
        f"all {len(reported_ms)} rounds fit the parent's clock ({sum(reported_ms):.1f} ms reported within "
        f"{total_window:.1f} ms of windows)",
    )


# Work a call may leave on another stream, past its timed stream, before stream_quiet FAILs: the
# candidate's median beyond the reference's (the synchronize's own cost, common to both legs and
# the same whatever the kernel: measured on an H200, 5.7-7.5 us for either leg, within 0.5 us of
# each other in one run) by more than this many microseconds plus this share of its median call.
ESCAPED_US, ESCAPED_SHARE = 3.0, 0.02


def stream_check(candidate_ns: Sequence[int], reference_ns: Sequence[int], candidate_p50_ms: float,
                 timed_calls: int) -> list[Check]:
    """Where a timed call measures one stream (CUDA events), the device must go idle when that
    stream does: work the candidate leaves on a side stream runs outside its events' window and
    would read as speed. `*_ns`: per call, how long the device stayed busy after the timed stream
    finished; `timed_calls`: how many calls each leg had timed (each must have its gap: fewer is a
    check that cannot be evaluated, and FAILs). The candidate's median and upper quartile are each
    held to the reference's: work left behind on a quarter of the calls shows as well."""
    name = "stream_quiet"
    if min(len(candidate_ns), len(reference_ns)) < timed_calls:
        return [Check(name, "FAIL", f"could not be evaluated: {len(candidate_ns)} candidate and {len(reference_ns)} "
                      f"reference gaps recorded for {timed_calls} timed calls each",
                      "re-run; a run whose timed calls were not all checked cannot pass.")]
    allowed_us = ESCAPED_US + ESCAPED_SHARE * candidate_p50_ms * 1e3
    worst = (0.0, 0.0, 0.0, "")
    for q, label in ((0.5, "median"), (0.75, "upper quartile")):
        cand_us = float(np.quantile(candidate_ns, q)) / 1e3
        ref_us = float(np.quantile(reference_ns, q)) / 1e3
        if cand_us - ref_us >= worst[0] or not worst[3]:
            worst = (cand_us - ref_us, cand_us, ref_us, label)
    excess_us, cand_us, ref_us, label = worst
    text = (f"after the timed stream finished, the device stayed busy a {label} {cand_us:.1f} us per candidate call "
            f"and {ref_us:.1f} us per reference call")
    if excess_us > allowed_us:
        return [Check(name, "FAIL",
                      f"{text}: {excess_us:.1f} us more than the reference (allowed {allowed_us:.1f} us): the "
                      "candidate leaves work on another stream, outside the window its events time",
                      "launch on the current stream (torch.cuda.current_stream()), or wait for your side streams "
                      "before returning.")]
    return [Check(name, "PASS", f"{text}: no work escapes the timed stream")]
