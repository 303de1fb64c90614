"""The parity gate: does the candidate compute what the reference computes?

Default spec `floor`: the oracle is the reference recomputed on the same input values in
float32 (float64 on the host when the float32 floor is degenerate); the floor is the
reference's own error against that oracle, and the candidate passes when its error is at
most `multiplier x floor` on both max-abs and mean-abs. `atol=..,rtol=..` and `bitexact`
compare against the reference's output directly. Every output must be finite, and a probe
whose reference output or inputs are constant is vacuous and fails.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

from kgate.backends.base import HostTree
from kgate.errors import KgateError
from kgate.gates.common import Check, GateResult, error_check

# Chosen from data (benchmarks/parity_multiplier.py): honest kernels reached up to 4.5x their floor
# over several runs, precision-downgraded ones 5.6x and more.
DEFAULT_MULTIPLIER = 5.0
REL_GUARD = 1e-3  # max-rel divides by max(|expected|, REL_GUARD * max|expected|)

SPEC_GRAMMAR = "floor | floor:MULT (e.g. floor:5) | atol=A,rtol=R | bitexact"


@dataclass(frozen=True)
class ParitySpec:
    kind: Literal["floor", "tolerance", "bitexact"]
    multiplier: float = DEFAULT_MULTIPLIER
    atol: float = 0.0
    rtol: float = 0.0

    def describe(self) -> str:
        if self.kind == "floor":
            return f"floor:{self.multiplier:g}"
        if self.kind == "tolerance":
            return f"atol={self.atol:g},rtol={self.rtol:g}"
        return "bitexact"

    @staticmethod
    def parse(text: str) -> ParitySpec:
        raw = text.strip().lower()
        if raw == "bitexact":
            return ParitySpec("bitexact")
        m = re.fullmatch(r"floor(?::x?([0-9]*\.?[0-9]+))?", raw)
        if m:
            mult = float(m.group(1)) if m.group(1) else DEFAULT_MULTIPLIER
            if mult < 1:
                raise KgateError(
                    f"parity spec {text!r} has multiplier {mult:g} < 1: even the reference would fail.",
                    "use a multiplier of at least 1, e.g. floor:5.",
                )
            return ParitySpec("floor", multiplier=mult)
        parts = dict(p.split("=", 1) for p in raw.split(",") if "=" in p)
        if parts and set(parts) <= {"atol", "rtol"} and len(parts) == raw.count("=") == raw.count(",") + 1:
            try:
                atol, rtol = float(parts.get("atol", 0)), float(parts.get("rtol", 0))
            except ValueError:
                atol = rtol = -1.0
            if atol >= 0 and rtol >= 0 and (atol > 0 or rtol > 0):
                return ParitySpec("tolerance", atol=atol, rtol=rtol)
        raise KgateError(f"parity spec {text!r} is not understood.", f"write one of: {SPEC_GRAMMAR}.")


@dataclass(frozen=True)
class Probe:
    """One seed's worth of evidence, all on the host."""

    seed: int
    inputs: HostTree
    reference: HostTree
    oracle: HostTree | None
    oracle_kind: str  # "float32" or "float64"
    candidate: HostTree | None
    candidate_error: str = ""
    label: str = ""  # an edge probe (edge-zero-in0, ...): made from a seed's inputs, not a seed of its own
    unsupported: bool = False  # the candidate's error is the interpreter's limitation: it cannot be checked here
    reordered: HostTree | None = None  # the reference with its sums taken in sequence (a second floor measurement)

    @property
    def name(self) -> str:
        return self.label or f"seed{self.seed}"


def _f64(a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # a signaling NaN (uninitialized memory) is a NaN here, graded as one
        return np.asarray(a).astype(np.float64)


def _eps(dtype: np.dtype) -> float:
    try:
        import ml_dtypes

        return float(ml_dtypes.finfo(dtype).eps)
    except Exception:
        return 0.0


def _is_constant(a: np.ndarray) -> bool:
    if a.size == 0:
        return True
    flat = _f64(a).ravel()
    return bool(np.all(flat == flat[0]))


def floor_leaf(probe: Probe, k: int) -> np.ndarray:
    """Output `k` of the reference as its floor is measured: the reference's own value, or, where
    the reference with its sums taken in sequence (`probe.reordered`, kgate.backends.reorder) is
    further from the oracle by more than one ulp of the output, that one. The order of a sum is
    the kernel's to choose; the reference's own order can be lucky (a tree of lanes), and an
    honest kernel that sums in sequence is then off by many times its error. A difference within
    one ulp is rounding the output the other way, which grading already allows for."""
    r = probe.reference.leaves[k]
    twin = probe.reordered.leaves[k] if probe.reordered is not None and k < len(probe.reordered.leaves) else None
    if twin is None or probe.oracle is None or twin.shape != r.shape or twin.dtype != r.dtype:
        return r
    e = _f64(probe.oracle.leaves[k])
    own, other = np.abs(_f64(r) - e), np.abs(_f64(twin) - e)
    with np.errstate(invalid="ignore"):
        further = np.isfinite(other) & (other > own) & (other > 2 * half_ulp(e, r.dtype))
    return np.where(further, twin, r) if further.any() else r


def floor_is_degenerate(reference: HostTree, oracle: HostTree) -> bool:
    """True when the reference equals the oracle exactly: the float32 floor measures nothing."""
    return all(
        np.array_equal(_f64(r), _f64(o), equal_nan=True) for r, o in zip(reference.leaves, oracle.leaves)
    )


@dataclass(frozen=True)
class LeafErrors:
    max_abs: float
    mean_abs: float
    max_rel: float
    worst_index: tuple[int, ...]
    got: float
    expected: float

    def to_json(self) -> dict[str, Any]:
        return {
            "max_abs": self.max_abs,
            "mean_abs": self.mean_abs,
            "max_rel": self.max_rel,
            "worst_index": list(self.worst_index),
            "got": self.got,
            "expected": self.expected,
        }


def leaf_errors(got: np.ndarray, expected: np.ndarray) -> LeafErrors:
    g, e = _f64(got), _f64(expected)
    diff = np.abs(g - e)
    if diff.size == 0:
        return LeafErrors(0.0, 0.0, 0.0, (), 0.0, 0.0)
    scale = float(np.max(np.abs(e)))
    denom = np.maximum(np.abs(e), max(REL_GUARD * scale, np.finfo(np.float64).tiny))
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    return LeafErrors(
        max_abs=float(diff.max()),
        mean_abs=float(diff.mean()),
        max_rel=float(np.max(diff / denom)),
        worst_index=tuple(int(i) for i in worst),
        got=float(g[worst]),
        expected=float(e[worst]),
    )


def _nonfinite(a: np.ndarray) -> tuple[int, tuple[int, ...]]:
    bad = ~np.isfinite(_f64(a))
    if not bad.any():
        return 0, ()
    first = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return int(bad.sum()), tuple(int(i) for i in first)


def _structure_problem(probe: Probe) -> str:
    ref, cand = probe.reference, probe.candidate
    assert cand is not None
    if ref.structure != cand.structure:
        return f"output structure differs: reference {ref.structure}, candidate {cand.structure}"
    for path, r, c in zip(ref.paths, ref.leaves, cand.leaves):
        if r.shape != c.shape:
            return f"output {path}: shape {c.shape}, reference {r.shape}"
        if r.dtype != c.dtype:
            return f"output {path}: dtype {c.dtype}, reference {r.dtype}"
    return ""


def _vacuity(probe: Probe) -> str:
    if probe.reference.leaves and all(
        _is_constant(r) and (r.size > 1 or not np.any(_f64(r))) for r in probe.reference.leaves
    ):
        return "the reference output is constant (e.g. all zeros): any constant-returning candidate would match"
    floating = [x for x in probe.inputs.leaves if x.dtype.kind in "fc" or "float" in str(x.dtype)]
    considered = floating or list(probe.inputs.leaves)
    if considered and all(_is_constant(x) for x in considered):
        return "every input is constant: the probe cannot tell a kernel from a constant"
    return ""


EDGE_PREFIX = "edge-"  # an edge probe's label: edge-KIND-inI
ODD_LABEL = "odd-shape"  # the gate's probe with every size made tile-unfriendly
DRAWN_LABEL = "drawn-shape"  # and its probes at shapes drawn per run: drawn-shape1, drawn-shape2
PAST_LABEL = "past-op-point"  # at a verified op-point: one size drawn past the op-point's, the others at it
ROWS_LABEL = "rows-at-a-shape"  # the row-wise edges' rows at one of the odd and drawn shapes (drawn)


def at_another_shape(label: str) -> bool:
    """Whether a probe's label names one at sizes of its own (the odd, drawn and past shapes, and
    the edges' rows at one of them)."""
    return label in (ODD_LABEL, PAST_LABEL, ROWS_LABEL) or label.startswith(DRAWN_LABEL)


@dataclass(frozen=True)
class SharedFloor:
    """The reference's error on one output, the largest over the seed probes at one shape,
    relative to each draw's largest output magnitude (`scale`).

    Every seed probe draws its inputs from the same distribution at the same shape, so the
    reference's own error there is a property of the algorithm, not of one draw: one draw can
    fall well below it (4 ulps apart on the same row-softmax at 16 x 256, seed to seed), and an
    honest kernel graded against that draw alone fails. Each seed probe whose candidate ran is
    graded against the largest relative floor of its shape's seed probes, times its own scale
    (a draw whose values are 100x larger does not loosen the others). An edge probe receives
    the floor of the seed probes at its shape but never adds to it: its values are extreme on
    purpose, and its own reference error is one more draw (the spikes edge, placed by a drawn
    seed, fell to a fifth of the seeds' floor on the honest row-softmax at 16 x 256, once in
    ~60 draws) while the extremes it adds could loosen the seeds' grading. A probe at another
    shape (the gate's odd and drawn shapes) is one draw too, at sizes up to twice the seeds':
    it receives the seeds' floor of the same output, rank, dtype and oracle kind (the honest
    row-softmax rewrite fell to 5.12x its own floor at a drawn 20 x 256, once in 10 draws) and
    keeps its own where that is larger (a longer reduction, a larger error).

    Only a floor beyond one rounding of the output is shared (`computes`): where the reference
    is exact but for rounding its result to the output dtype (a float32 sum written as
    bfloat16), the floor is the output's resolution at that draw's largest value, which the
    other draws' own resolution already covers element by element; sharing it would only
    loosen their grading by a binade."""

    max_rel: float  # the largest floor max-abs / scale among the sharing probes
    mean_rel: float  # the largest floor mean-abs / scale among them
    probes: tuple[str, ...]  # the probes it is shared among (the graded one among them)


def scale(e: np.ndarray) -> float:
    """An output's largest finite magnitude (0 when it has none)."""
    mag = np.abs(_f64(e))
    finite = mag[np.isfinite(mag)]
    return float(finite.max()) if finite.size else 0.0


def computes(floor: LeafErrors, r: np.ndarray, e: np.ndarray) -> bool:
    """Whether the reference's error goes beyond one rounding of its output: its largest error
    exceeds half an ulp of the output dtype where it occurs."""
    if not floor.worst_index and r.ndim:
        return False
    resolution = float(half_ulp(np.asarray(_f64(e)[floor.worst_index]), r.dtype))
    return floor.max_abs > resolution * (1 + 1e-9)


def shared_floors(spec: ParitySpec, probes: Sequence[Probe]) -> dict[str, list[SharedFloor | None]]:
    """For each probe (by name), per output: the floor it shares with the seed probes of the
    same output shape, dtype and oracle kind (None where a seed probe is the only one, where
    no seed probe's floor there goes beyond the output's rounding, or where an edge probe's
    has no seed probe; a probe at another shape receives the floor of the seed probes of the
    same output, rank, dtype and oracle kind where it is larger than its own)."""
    if spec.kind != "floor":
        return {}
    seeds: dict[tuple[Any, ...], list[tuple[str, float, float, bool]]] = {}
    edges: dict[tuple[Any, ...], list[str]] = {}
    shaped: dict[tuple[Any, ...], list[str]] = {}
    for probe in probes:  # only probes graded on their outputs: each records the floor it shares
        if probe.oracle is None or probe.candidate is None or _structure_problem(probe):
            continue
        for k, (r, e) in enumerate(zip(probe.reference.leaves, probe.oracle.leaves)):
            key = (k, r.shape, str(r.dtype), probe.oracle_kind)
            if probe.label:  # an edge or a probe at another shape: receives, never adds
                if probe.label.startswith(EDGE_PREFIX):
                    edges.setdefault(key, []).append(probe.name)
                else:
                    shaped.setdefault((k, r.ndim, str(r.dtype), probe.oracle_kind), []).append(probe.name)
                continue
            measured = floor_leaf(probe, k)
            err, size = leaf_errors(measured, e), scale(e)
            rel = (err.max_abs / size, err.mean_abs / size) if size > 0 else (0.0, 0.0)
            seeds.setdefault(key, []).append((probe.name, *rel, computes(err, measured, e)))
    shared: dict[str, list[SharedFloor | None]] = {}

    def give(name: str, k: int, floor: SharedFloor | None) -> None:
        row = shared.setdefault(name, [])
        row.extend([None] * (k + 1 - len(row)))
        row[k] = floor

    for key, members in seeds.items():
        sharing = [(max_rel, mean_rel) for _, max_rel, mean_rel, counts in members if counts]
        names = tuple(name for name, *_ in members)
        largest = (max(m for m, _ in sharing), max(m for _, m in sharing)) if sharing else None
        for name in names:
            give(name, key[0], SharedFloor(*largest, names) if largest and len(members) > 1 else None)
        for name in edges.get(key, ()):
            give(name, key[0], SharedFloor(*largest, (*names, name)) if largest else None)
        for name in shaped.get((key[0], len(key[1]), key[2], key[3]), ()) if largest else ():
            held = shared.get(name, [])
            known = held[key[0]] if key[0] < len(held) else None
            if known is None or (known.max_rel, known.mean_rel) < largest:
                give(name, key[0], SharedFloor(*largest, (*names, name)))
    return shared


def _floor_used(
    floor: LeafErrors, r: np.ndarray, e: np.ndarray, against: str, shared: SharedFloor | None = None
) -> tuple[float, float, str]:
    """The floor's max-abs and mean-abs as graded, and where they came from.

    A probe's floor is the one its shape's seed probes share (`SharedFloor`). Only a floor
    that is exactly zero even against float64 (the reference is exact on these inputs) falls
    back to half an ulp of the output dtype at its magnitude."""
    half_ulp = 0.5 * _eps(r.dtype)
    mag = np.abs(_f64(e))
    floor_max, floor_mean, source = floor.max_abs, floor.mean_abs, against
    if shared is not None:
        size = scale(e)
        floor_max, floor_mean = max(floor_max, shared.max_rel * size), max(floor_mean, shared.mean_rel * size)
    if floor_max == 0.0 and mag.size:
        floor_max, floor_mean, source = half_ulp * float(mag.max()), half_ulp * float(mag.mean()), "ulp-guard"
    elif floor_mean == 0.0 and mag.size:
        floor_mean = half_ulp * float(mag.mean())
    return floor_max, floor_mean, source


def half_ulp(expected: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Half the spacing of `dtype` at each element's magnitude (subnormals: at the smallest normal)."""
    mag = np.abs(_f64(expected))
    try:
        import ml_dtypes

        info = ml_dtypes.finfo(dtype)
        eps, tiny = float(info.eps), float(info.tiny)
    except Exception:
        return np.zeros(mag.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.floor(np.log2(np.maximum(np.where(np.isfinite(mag), mag, 0.0), tiny)))
    return 0.5 * eps * np.exp2(exponent)


def graded_relative(dtype: Any) -> bool:
    """Whether `relative_error` grades an output of this dtype: real floating ones only (an
    index or a count has no magnitude to scale by; a complex one's is not its real part's)."""
    name = str(dtype)
    return "float" in name and "complex" not in name


# The fewest elements whose reference error sets a small element's allowance (see `magnitude_units`).
LIKE_MAGNITUDE_MIN = 64
# The finest a small element's unit gets, as a share of the floor at the largest output: an error
# far below the reference's own worst is no evidence against a candidate. jax's flash attention
# (float32) is off by 3e-9 on an output of 1e-5 where the reference's error there is 1e-10: its
# error is 1e-4 of the floor, honest rounding in another order. A bfloat16 output rounded to a
# fixed grid of 2^-10 (an eighth of the floor at rms-normalized values), or shifted by 2^-10, is
# off by 16x to 32x this unit on its small outputs; small outputs zeroed, by about twice the floor.
SMALLEST_SHARE = 1 / 256


def magnitude_units(r: np.ndarray, e: np.ndarray, floor_max: float) -> np.ndarray:
    """Per element, the allowance unit of the `relative_error` check: the floor at the largest
    output (`floor_max`) scaled to the element's magnitude (`floor_max * min(1, 2|e| / scale)`,
    never below `SMALLEST_SHARE` of it), never finer than the reference's own error there, nor
    than its largest error among the elements of at most twice the magnitude (exact zeros among
    them, and at least the `LIKE_MAGNITUDE_MIN` smallest nonzero ones: an error that is absolute,
    as in a long sum that cancels, is the reference's at small elements too; a ReLU's exact zeros
    do not make that window any narrower), loosened as the shared floor loosens this draw's own,
    nor than half an ulp of the output there. Never coarser than the `error` check's unit (the
    floor, or half an ulp)."""
    mag = np.abs(_f64(e))
    mag = np.where(np.isfinite(mag), mag, np.inf)
    size = scale(e)
    resolution = half_ulp(e, r.dtype)
    if mag.size == 0:
        return resolution
    proportional = (floor_max * np.clip(2.0 * mag / size, SMALLEST_SHARE, 1.0) if size > 0
                    else np.full(mag.shape, floor_max))
    own = np.abs(_f64(r) - _f64(e)).ravel()
    own = np.where(np.isfinite(own), own, 0.0)
    flat = mag.ravel()
    order = np.argsort(flat, kind="stable")  # exact zeros first
    below = np.maximum.accumulate(own[order])  # the largest reference error among the k smallest
    zeros = int(np.count_nonzero(flat == 0))
    ranked = flat[order]
    # in sorted order (sorted keys make the search a sweep: several times faster at a million elements)
    reach = np.searchsorted(ranked, 2.0 * ranked, side="right") - 1
    least = zeros + min(LIKE_MAGNITUDE_MIN, flat.size - zeros) - 1
    like = np.empty_like(below)
    like[order] = below[np.maximum(reach, max(least, 0))]
    drawn = float(own.max())
    if 0 < drawn < floor_max:  # a lucky draw's reference, graded against its seeds' shared floor
        like = like * (floor_max / drawn)
    like = np.maximum(like, own).reshape(mag.shape)  # a candidate as far off as the reference is never over
    return np.maximum(resolution, np.maximum(proportional, like))


# The rounding grade: for an output narrower than 32 bits, the share of elements that are not the
# output dtype's rounding of the oracle's answer. Any honest computation in float32 or wider rounds
# to the same value but for elements within its own error of a rounding midpoint: on the bfloat16
# RMSNorm at 16 x 256, 0.0% for the reference, its reordered sums and the honest kernels; 0.01% to
# 0.02% for a bfloat16 matmul with 1024-term float32 sums taken in blocks. Intermediates in
# bfloat16 move 22% to 35% of the elements, an rsqrt good to 1.75e-3 5% to 19%, where every
# element stays within the floor's allowance of 2.5 ulps.
ROUNDING_SHARE = 0.01  # the least share of elements allowed off the output's rounding
ROUNDING_ELEMENTS = 100  # fewer elements than this: too few to tell a share from one unlucky rounding


def off_rounding(got: np.ndarray, e: np.ndarray, dtype: np.dtype) -> float:
    """The share of elements (where the answer `e` is finite) that are not its rounding to
    `dtype`: further from it than half an ulp of `dtype` at its magnitude."""
    ef = _f64(e).ravel()
    finite = np.isfinite(ef)
    if not finite.any():
        return 0.0
    diff = np.abs(_f64(got).ravel()[finite] - ef[finite])
    with np.errstate(invalid="ignore"):
        off = ~(diff <= half_ulp(ef[finite], dtype) * (1 + 1e-9))
    return float(np.count_nonzero(off)) / int(finite.sum())


# The vanishing grade: elements the reference resolves (within an eighth of the answer, its sums in
# sequence too) and clear of underflow (2^12 times float32's smallest normal, at least 4 times the
# output dtype's own), which the candidate returns as zero, with the other sign, or off by more than
# a factor of two (a floor of 1e-30 put where zero would show). An honest computation loses none of them (0 on the bundled examples); a softmax
# that flushes probabilities under 1e-10 to zero lost 14% of a t3 draw's, each far under the allowance
# scaled down to its size (its unit never finer than 1/256 of the floor).
VANISHED_SHARE = 0.01  # the least share of the resolved elements a candidate may lose
RESOLVED_WITHIN = 1 / 8
LOST_FACTOR = 2.0
CLEAR_OF_UNDERFLOW = 2.0 ** 12


def clear_of_underflow(dtype: Any) -> float:
    """The least magnitude the vanishing grade counts: `CLEAR_OF_UNDERFLOW` times float32's smallest
    normal (clear of any flush of float32 subnormals), and never under 4 times the output dtype's own
    (a float16's or an 8-bit float's range ends far sooner); inf where the dtype is not a float."""
    try:
        import ml_dtypes

        own = float(ml_dtypes.finfo(dtype).tiny)
    except Exception:
        return math.inf
    return max(CLEAR_OF_UNDERFLOW * float(np.finfo(np.float32).tiny), 4.0 * own)


def too_many_vanished(lost: int, resolved: int) -> bool:
    """Whether losing `lost` of `resolved` elements FAILs the vanishing grade (here and in the receipt's re-check)."""
    return resolved > 0 and lost > VANISHED_SHARE * resolved


def vanished(c: np.ndarray, measured: np.ndarray, e: np.ndarray, dtype: Any) -> tuple[int, int, list[int]]:
    """How many elements the candidate `c` loses (returns as zero, with the other sign, or off by
    more than a factor of `LOST_FACTOR` either way) where the reference as its floor is measured
    (`measured`) gets the answer `e` to within `RESOLVED_WITHIN` of it and `e` is clear of
    underflow; how many such elements there are; the first lost one's index."""
    bound = clear_of_underflow(dtype)
    if not math.isfinite(bound):
        return 0, 0, []
    ef, mf, cf = _f64(e), _f64(measured), _f64(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        resolved = (np.isfinite(ef) & (np.abs(ef) >= bound)
                    & (np.abs(mf - ef) <= RESOLVED_WITHIN * np.abs(ef)))
        ratio = cf / np.where(resolved, ef, 1.0)
        lost = resolved & ~((ratio >= 1 / LOST_FACTOR) & (ratio <= LOST_FACTOR))  # zero and the other sign too
    count = int(np.count_nonzero(lost))
    first = [int(i) for i in np.unravel_index(int(np.argmax(lost)), lost.shape)] if count else []
    return count, int(np.count_nonzero(resolved)), first


def rounding_graded(dtype: Any, size: int) -> bool:
    """Whether an output gets the rounding grade: floating, narrower than 32 bits (whose honest
    computations differ in their last bits), and of `ROUNDING_ELEMENTS` elements or more."""
    try:
        narrow = np.dtype(dtype).itemsize < 4
    except TypeError:  # not a dtype numpy (with ml_dtypes) knows
        return False
    return graded_relative(dtype) and narrow and size >= ROUNDING_ELEMENTS


def rounding_allowed(multiplier: float, reference: float, reordered: float | None) -> float:
    """The share of elements off the output's rounding a candidate may have: `multiplier` times
    the larger of the reference's and its reordered sums' shares, never below `ROUNDING_SHARE`."""
    return max(ROUNDING_SHARE, multiplier * max(reference, reordered or 0.0))


def rounding_record(probe: Probe, k: int, c: np.ndarray, e: np.ndarray, multiplier: float) -> dict[str, Any] | None:
    """The rounding grade of output `k` (None where it does not apply: an output of 32 bits or
    more, whose honest computations differ in their last bits, or of fewer than
    `ROUNDING_ELEMENTS` elements): the candidate's share of elements off the output's rounding
    of the oracle's answer, the reference's and its reordered sums', and the share allowed:
    `multiplier` times the larger of those two, never below `ROUNDING_SHARE`."""
    r = probe.reference.leaves[k]
    if not rounding_graded(r.dtype, r.size):
        return None
    twin = probe.reordered.leaves[k] if probe.reordered is not None and k < len(probe.reordered.leaves) else None
    own = off_rounding(r, e, r.dtype)
    reordered = off_rounding(twin, e, r.dtype) if twin is not None and twin.shape == r.shape else None
    return {"candidate": off_rounding(c, e, r.dtype), "reference": own, "reordered": reordered,
            "allowed": rounding_allowed(multiplier, own, reordered), "elements": int(r.size)}


def _reordered_record(r: np.ndarray, measured: np.ndarray, e: np.ndarray) -> dict[str, Any]:
    """What the reference summed in sequence added to the floor: at how many elements it set it,
    and the reference's own largest error beside the floor's."""
    return {"elements": int(np.count_nonzero(_f64(measured) != _f64(r))),
            "reference_max_abs": leaf_errors(r, e).max_abs}


def _worst_ratio(got: np.ndarray, expected: np.ndarray, unit: np.ndarray) -> tuple[float, dict[str, Any]]:
    """The largest |got - expected| / unit over the elements, and where it is."""
    if got.size == 0:
        return 0.0, {}
    diff = np.abs(got - expected)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(unit > 0, diff / np.where(unit > 0, unit, 1.0), np.where(diff > 0, np.inf, 0.0))
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    k = int(np.argmax(ratio))
    index = np.unravel_index(k, ratio.shape)
    at = {"index": [int(i) for i in index], "diff": float(diff.flat[k]), "unit": float(unit.flat[k])}
    return float(ratio.flat[k]), at


def allowance(spec: ParitySpec, probe: Probe, shared: Sequence[SharedFloor | None] = ()) -> float:
    """The smallest max-abs error the spec allows on any output of this probe: a change to the
    output smaller than this is invisible to parity. `shared`: the probe's shared floors."""
    if spec.kind == "bitexact":
        return 0.0
    if spec.kind == "tolerance" or probe.oracle is None:
        return spec.atol
    measured = [floor_leaf(probe, k) for k in range(len(probe.reference.leaves))]
    limits = [
        spec.multiplier * _floor_used(leaf_errors(r, e), r, e, "oracle", _at(shared, k))[0]
        for k, (r, e) in enumerate(zip(measured, probe.oracle.leaves))
        if r.size
    ]
    return min(limits) if limits else 0.0


SELF_ULPS = 1000.0  # compiled and op-by-op runs of one program differ by rounding: a few ulps, never this
SELF_FLOORS = 100.0  # ... nor this many times the reference's own error against the oracle


def self_disagreement(jitted: HostTree, eager: HostTree, oracle: HostTree | None) -> str:
    """Where the reference's compiled program is wrong: it disagrees with the same reference run
    op by op far beyond rounding (non-finite where the other is finite, or more than SELF_ULPS
    ulps of the output's magnitude and SELF_FLOORS times the reference's error against the
    oracle), and the oracle sides with the op-by-op run there. "" otherwise: where the oracle
    sides with the compiled program (a simplification the compiler may make, as log(exp(x))
    -> x), the op-by-op run is the one that lost precision."""
    for i, (path, j, e) in enumerate(zip(jitted.paths, jitted.leaves, eager.leaves)):
        if j.dtype.kind not in "fc" and "float" not in str(j.dtype):
            continue
        jf, ef = _f64(j), _f64(e)
        of = _f64(oracle.leaves[i]) if oracle is not None and i < len(oracle.leaves) else None
        if of is not None and of.shape != jf.shape:
            of = None
        finite_j, finite_e = np.isfinite(jf), np.isfinite(ef)
        mismatch = finite_j != finite_e
        if of is not None:  # the compiled run is the odd one out where the oracle agrees with op by op
            mismatch &= np.isfinite(of) == finite_e
        if mismatch.any():
            at = np.unravel_index(int(np.argmax(mismatch)), mismatch.shape)
            return (f"output {path}: {int(mismatch.sum())} elements are finite in one run and not in the other "
                    f"(first at {list(map(int, at))}: compiled {jf[at]:.6g}, op by op {ef[at]:.6g})")
        both = finite_j & finite_e
        if not both.any():
            continue
        diff = np.where(both, np.abs(jf - ef), 0.0)
        scale = float(np.max(np.abs(np.where(both, ef, 0.0))))
        floor = 0.0
        if oracle is not None and i < len(oracle.leaves):
            with np.errstate(invalid="ignore"):
                floor = float(np.nanmax(np.where(both, np.abs(ef - _f64(oracle.leaves[i])), 0.0)))
        limit = max(SELF_ULPS * _eps(e.dtype) * scale, SELF_FLOORS * floor)
        if of is not None:  # only where the compiled run is further from the oracle than the op-by-op one
            with np.errstate(invalid="ignore"):
                closer = np.abs(jf - of) > np.abs(ef - of)
            diff = np.where(closer, diff, 0.0)
        if float(diff.max()) > limit > 0.0 or (limit == 0.0 and float(diff.max()) > 0.0 and scale == 0.0):
            at = np.unravel_index(int(np.argmax(diff)), diff.shape)
            return (f"output {path}: compiled {jf[at]:.6g} against op by op {ef[at]:.6g} at {list(map(int, at))}, "
                    f"a difference of {float(diff.max()):.3g} where rounding allows {limit:.3g}")
    return ""


def all_finite(tree: HostTree) -> bool:
    return all(not _nonfinite(leaf)[0] for leaf in tree.leaves)


def _at(shared: Sequence[SharedFloor | None], k: int) -> SharedFloor | None:
    return shared[k] if k < len(shared) else None


def _probe_checks(
    spec: ParitySpec, probe: Probe, shared: Sequence[SharedFloor | None] = ()
) -> tuple[list[Check], dict[str, Any]]:
    name = probe.name  # check names: seed42.error, edge-zero-in0.error
    checks: list[Check] = []
    record: dict[str, Any] = {"seed": probe.seed, "name": probe.name, "outputs": []}
    if probe.label:
        record["label"] = probe.label
    vacuous = "" if probe.label else _vacuity(probe)  # an edge is degenerate on purpose, in part
    if vacuous:
        checks.append(
            Check(
                f"{name}.vacuous",
                "FAIL",
                f"vacuous probe: {vacuous}.",
                "register a non-degenerate probe: random (ideally heavy-tailed) inputs and weights for which "
                "the reference output varies (a Model module whose shipped weights make it constant: --weights random).",
            )
        )
    for path, r in zip(probe.reference.paths, probe.reference.leaves):
        count, first = _nonfinite(r)
        if count:
            checks.append(
                Check(
                    f"{name}.reference_finite",
                    "FAIL",
                    f"the reference output {path} has {count} non-finite values (first at {list(first)}).",
                    "choose inputs for which the reference is finite; NaN is never a wildcard.",
                )
            )
    if probe.candidate is None and probe.unsupported:
        checks.append(
            error_check(
                f"{name}.evaluable",
                "cannot evaluate on this machine (inconclusive: not a verdict on the kernel): "
                f"{probe.candidate_error}",
                str(probe.candidate_error),
                "check it where the kernel compiles: on a TPU, where Mosaic lowers it (run kgate there); or write "
                "the construct in a form the interpreter runs.",
            )
        )
        return checks, record
    if probe.candidate is None:
        checks.append(
            error_check(
                f"{name}.candidate_ran",
                f"the candidate raised: {probe.candidate_error}",
                str(probe.candidate_error),
                "run the candidate on the probe inputs and fix the error.",
            )
        )
        return checks, record
    problem = _structure_problem(probe)
    if problem:
        checks.append(
            Check(f"{name}.structure", "FAIL", problem, "return the same pytree, shapes and dtypes as the reference.")
        )
        return checks, record
    expected_tree = probe.oracle if spec.kind == "floor" and probe.oracle is not None else probe.reference
    against = f"oracle-{probe.oracle_kind}" if expected_tree is probe.oracle else "reference"
    record["against"] = against
    trivial: list[str | None] = []  # per output, a constant that would pass its grading (None: none would)
    for k, path in enumerate(probe.reference.paths):
        r, c, e = probe.reference.leaves[k], probe.candidate.leaves[k], expected_tree.leaves[k]
        out: dict[str, Any] = {"path": path, "shape": list(r.shape), "dtype": str(r.dtype)}
        record["outputs"].append(out)
        count, first = _nonfinite(c)
        if count:
            checks.append(
                Check(
                    f"{name}.finite",
                    "FAIL",
                    f"candidate output {path} has {count} non-finite values (first at index {list(first)}).",
                    "every output element must be finite: check boundary tiles, masking and uncovered rows.",
                )
            )
        cand_err = leaf_errors(c, e)
        out["candidate"] = cand_err.to_json()
        after: list[Check] = []  # said after this output's error check
        if spec.kind == "floor":
            measured = floor_leaf(probe, k) if expected_tree is probe.oracle else r
            floor = leaf_errors(measured, e)
            pooled = _at(shared, k) if expected_tree is probe.oracle else None
            floor_max, floor_mean, source = _floor_used(floor, measured, e, against, pooled)
            # The floor is never finer than the output's own resolution: half an ulp of the
            # output dtype at each element's magnitude (one rounding of a correct answer).
            resolution = half_ulp(e, r.dtype)
            unit = np.maximum(floor_max, resolution)
            ratio, at = _worst_ratio(_f64(c), _f64(e), unit)
            # A correctly rounded answer is off by half an ulp at most, a quarter on average.
            mean_unit = max(floor_mean, 0.5 * float(resolution.mean()) if resolution.size else 0.0)
            out["floor"] = {**floor.to_json(), "max_abs_used": floor_max, "mean_abs_used": mean_unit, "source": source}
            out["floor"]["resolution_mean"] = 0.5 * float(resolution.mean()) if resolution.size else 0.0
            if pooled is not None:
                out["floor"]["shared_with"] = list(pooled.probes)
            if measured is not r:  # the reference summed in sequence set the floor at some elements
                out["floor"]["reordered"] = _reordered_record(r, measured, e)
            if expected_tree is probe.oracle:  # what an edge probe sharing this floor re-derives it from
                out["floor"]["computes"] = computes(floor, measured, e)  # False: only its output's rounding, not shared
                out["floor"]["scale"] = scale(e)
            limit_mean = spec.multiplier * mean_unit
            unit_max = float(unit.max()) if unit.size else 0.0
            out["limit"] = {"max_abs": spec.multiplier * floor_max, "mean_abs": limit_mean, "unit_max": unit_max}
            out["max_abs_over_floor"] = ratio
            out["worst_ratio_at"] = at
            # The same floor, scaled to each element's magnitude: where the reference's error is
            # relative (a bfloat16 output, no cancellation), an error that is absolute instead
            # (small values flushed to zero, arithmetic in a narrower type) is far above it. Not
            # where the reference has no error at all here: then nothing tells a relative error
            # from an absolute one.
            small_ratio, small_at = 0.0, {}
            if floor.max_abs > 0 and graded_relative(r.dtype):
                small_ratio, small_at = _worst_ratio(_f64(c), _f64(e), magnitude_units(measured, e, floor_max))
                if small_at:
                    small_at["expected"] = float(_f64(e)[tuple(small_at["index"])])
                out["relative"] = {"ratio": small_ratio, "at": small_at}
            if small_ratio > spec.multiplier and not count:
                after.append(Check(
                    f"{name}.relative_error",
                    "FAIL",
                    f"{path}: at {small_at['index']} (expected {small_at['expected']:.6g}) the error "
                    f"{small_at['diff']:.3g} is {_times(small_ratio)} its allowance unit {small_at['unit']:.3g} vs "
                    f"{spec.multiplier:g}x allowed: the floor {floor_max:.3g} at the largest output, scaled to this "
                    "element's magnitude (never finer than the reference's own error at like magnitudes, or half an "
                    "ulp): the candidate is wrong on small values where the reference's error is relative",
                    "look for values flushed to zero, a narrower accumulation or an approximation with an absolute "
                    "error: the small outputs must be as right, relative to their size, as the large ones.",
                ))
            if graded_relative(r.dtype) and not count:
                lost, resolved, where = vanished(c, measured, e, r.dtype)
                out["vanished"] = {"lost": lost, "resolved": resolved, "allowed_share": VANISHED_SHARE}
                if too_many_vanished(lost, resolved):
                    after.append(Check(
                        f"{name}.vanished",
                        "FAIL",
                        f"{path}: {lost} of the {resolved} elements the reference resolves ({lost / resolved:.1%}; "
                        f"at most {VANISHED_SHARE:.0%} allowed) are zero, of the other sign or off by more than a "
                        f"factor of {LOST_FACTOR:g} in the candidate's output, the first at {where} (expected "
                        f"{float(_f64(e)[tuple(where)]):.6g}, got {float(_f64(c)[tuple(where)]):.6g}): small answers "
                        "flushed, floored or thresholded away, each under the allowance at its size",
                        "compute small values as the reference does: no flush, threshold or cut-off the reference "
                        "does not have (an exp cut off below some argument, a clamp to zero).",
                    ))
            rounding = rounding_record(probe, k, c, e, spec.multiplier) if expected_tree is probe.oracle else None
            if rounding is not None:
                out["rounding"] = rounding
                if rounding["candidate"] > rounding["allowed"] and not count:
                    after.append(Check(
                        f"{name}.rounding",
                        "FAIL",
                        f"{path}: {rounding['candidate']:.1%} of its {rounding['elements']} elements are not the "
                        f"{r.dtype} rounding of the answer (the reference: {rounding['reference']:.1%}"
                        + (f"; with its sums in sequence: {rounding['reordered']:.1%}" if rounding["reordered"]
                           is not None else "") + f"), where at most {rounding['allowed']:.1%} is allowed: the "
                        "candidate's errors hide below the output's resolution, as a narrower type or an "
                        "approximation inside it would",
                        f"compute in the precision the reference computes in (float32 where it upcasts) and round "
                        f"once, when writing the {r.dtype} output; look for intermediate casts and approximate "
                        "transcendentals.",
                    ))
            ok = ratio <= spec.multiplier and cand_err.mean_abs <= limit_mean and not count
            trivial.append(passing_stand_in(e, unit * spec.multiplier, limit_mean, probe.inputs.leaves, r.dtype)
                           if graded_relative(r.dtype) else None if not _is_constant(r) else "its value")
            detail = (
                f"{path}: max-abs {cand_err.max_abs:.3g}, {_times(ratio)} the floor {floor_max:.3g} (or half an "
                f"ulp of the output, where coarser) vs {spec.multiplier:g}x allowed; mean-abs {cand_err.mean_abs:.3g} "
                f"vs limit {limit_mean:.3g}; max-rel {cand_err.max_rel:.3g}; worst at {list(cand_err.worst_index)} "
                f"(got {cand_err.got:.6g}, expected {cand_err.expected:.6g}) against {against}"
            )
        elif spec.kind == "tolerance":
            g, ex = _f64(c), _f64(r)
            allowed = spec.atol + spec.rtol * np.abs(ex)
            over = np.abs(g - ex) > allowed
            over |= ~np.isfinite(g)
            n_over = int(over.sum())
            trivial.append(passing_stand_in(r, allowed, np.inf, probe.inputs.leaves, r.dtype) if graded_relative(r.dtype)
                           else None if not _is_constant(r) else "its value")
            out["violations"] = n_over
            ok = n_over == 0
            detail = (
                f"{path}: {n_over} elements outside atol={spec.atol:g} + rtol={spec.rtol:g}*|ref|; "
                f"max-abs {cand_err.max_abs:.3g}, max-rel {cand_err.max_rel:.3g}, worst at "
                f"{list(cand_err.worst_index)}"
            )
        else:
            same = np.array_equal(np.asarray(c).view(np.uint8), np.asarray(r).view(np.uint8))
            ok = bool(same)
            detail = f"{path}: {'bit-identical' if same else 'differs'}; max-abs {cand_err.max_abs:.3g}"
        checks.append(
            Check(
                f"{name}.error",
                "PASS" if ok else "FAIL",
                detail,
                ""
                if ok
                else "the candidate's error exceeds the spec: look at the worst element's row/tile, the "
                "accumulation dtype, and the masking of boundary blocks.",
            )
        )
        checks.extend(after)
    if not probe.label and not vacuous and trivial and all(t is not None for t in trivial):
        constants = ", ".join(f"{path}: {t}" for path, t in zip(probe.reference.paths, trivial))
        checks.append(Check(
            f"{name}.vacuous",
            "FAIL",
            f"vacuous probe: the answer is within parity's allowance of a constant (or of an input) everywhere "
            f"({constants}), so a candidate returning that passes: the reference's output varies no more than its "
            "own error allows (an answer that is its rounding noise around zero, one value to within rounding, or an "
            "input plus an update below the output's rounding).",
            "register a problem whose output depends on its inputs by more than rounding: keep the term that "
            "cancels, grade the quantity before the reduction that makes it constant, or grade the update itself "
            "(or in a dtype that resolves it, --dtype float32) rather than an input it barely moves.",
        ))
    return checks, record


def passing_stand_in(expected: np.ndarray, allowed: np.ndarray, mean_allowed: float,
                     inputs: Sequence[np.ndarray] = (), dtype: Any = None) -> str | None:
    """A constant, or an input handed back, that would pass the grading of an output whose answer
    is `expected` (each element within `allowed` of it, their mean error within `mean_allowed`):
    zero, (for more than one element) the middle of its range, or one of `inputs` of the output's
    shape as the output's `dtype` rounds it (a residual block whose update is below that rounding
    answers its input: `return x` passes); None where none would."""
    e = _f64(expected).ravel()
    if e.size == 0 or not np.isfinite(e).all():
        return None
    bound = np.broadcast_to(np.asarray(allowed, dtype=np.float64), expected.shape).ravel()
    tries: list[tuple[str, Any]] = [(f"{c:.3g}", c) for c in [0.0] + ([(float(e.max()) + float(e.min())) / 2]
                                                                    if e.size > 1 else [])]
    for j, x in enumerate(inputs):
        a = np.asarray(x)
        if a.shape == expected.shape and graded_relative(a.dtype):
            tries.append((f"input {j} handed back", _f64(a.astype(dtype or a.dtype)).ravel()))
    for shown, stand_in in tries:
        err = np.abs(e - stand_in)
        if bool(np.all(err <= bound)) and float(err.mean()) <= mean_allowed:
            return shown
    return None


def passes(spec: ParitySpec, probe: Probe, shared: Sequence[SharedFloor | None] = ()) -> bool:
    """Whether one probe passes the spec (no vacuity or seed checks: those are the run's)."""
    checks, _ = _probe_checks(spec, probe, shared)
    return not any(c.status == "FAIL" and not c.name.endswith(".vacuous") for c in checks)


GRADED_AT_ONCE_ELEMENTS = 1 << 16  # probes of more output elements than this are graded on threads, one per core

T = TypeVar("T")
R = TypeVar("R")


def at_once(grade: Callable[[T], R], probes: Sequence[T], elements: int) -> list[R]:
    """`grade` of each probe, in the probes' order. Where they have more than
    `GRADED_AT_ONCE_ELEMENTS` output elements (`elements`, the largest leaf's), on threads, one
    per core: numpy's sorts and element-wise passes, the whole cost of grading at an op-point,
    release the GIL, and grading is pure (a probe's result depends on its own arrays alone)."""
    workers = min(len(probes), os.cpu_count() or 1)
    if workers < 2 or elements <= GRADED_AT_ONCE_ELEMENTS:
        return [grade(probe) for probe in probes]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kgate-parity") as pool:
        return list(pool.map(grade, probes))


def largest_leaf(probes: Sequence[Probe]) -> int:
    return max((int(np.size(leaf)) for p in probes for leaf in p.reference.leaves), default=0)


def passes_each(spec: ParitySpec, graded: Sequence[tuple[Probe, Sequence[SharedFloor | None]]]) -> list[bool]:
    """`passes` of each (probe, shared floors), in order, graded at once where they are large."""
    return at_once(lambda one: passes(spec, *one), graded, largest_leaf([probe for probe, _ in graded]))


def evaluate(
    spec: ParitySpec,
    probes: Sequence[Probe],
    prefill_mismatch: str | None = None,
    *,
    skipped_edges: Sequence[tuple[str, str]] = (),
    refused: Sequence[tuple[str, str]] = (),
) -> GateResult:
    """Grade every probe; also fail when the reference ignores the seed.

    `skipped_edges`: edge probes not graded, each with why (the reference is not finite there).
    `refused`: probes at another shape the candidate raised on (a kernel may refuse a shape it
    does not support): an advisory each, never a pass and never a fail.
    `prefill_mismatch`: None when the uninitialized-memory check did not run, "" when the
    candidate's outputs were identical under NaN- and zero-filled fresh buffers, else the
    difference found.
    """
    checks: list[Check] = []
    records = []
    shared = shared_floors(spec, probes)
    for probe_checks, record in at_once(lambda probe: _probe_checks(spec, probe, shared.get(probe.name, ())), probes,
                                        largest_leaf(probes)):
        checks.extend(probe_checks)
        records.append(record)
    for label, why in skipped_edges:
        checks.append(Check(f"{label}.graded", "SKIPPED", f"probe {label} not graded: {why}"))
        records.append({"name": label, "label": label, "skipped": why, "outputs": []})
    for label, why in refused:
        checks.append(Check(f"{label}.refused", "ADVISORY", f"the candidate raised at the {label} ({why}): it does "
                            "not support that shape, which is allowed; wrong values there would FAIL"))
        records.append({"name": label, "label": label, "refused": why, "outputs": []})
    seeded = [p for p in probes if not p.label]  # edges are variations of a seed, not seeds
    if len(seeded) >= 2:
        first = seeded[0]
        if all(
            all(np.array_equal(a, b) for a, b in zip(first.inputs.leaves, p.inputs.leaves)) for p in seeded[1:]
        ):
            checks.append(
                Check(
                    "seeds_differ",
                    "FAIL",
                    f"create_inputs made identical inputs for seeds {[p.seed for p in seeded]}: "
                    "multi-seed parity cannot catch a replayed or seed-overfitted result.",
                    "give create_inputs a `seed` parameter, or derive its keys (or, in a Model module, "
                    "get_inputs' keys) from jax.random.key(...) so kgate can inject the seed.",
                )
            )
        elif all(
            all(np.array_equal(a, b) for a, b in zip(first.reference.leaves, p.reference.leaves)) for p in seeded[1:]
        ):
            checks.append(
                Check(
                    "reference_depends_on_inputs",
                    "FAIL",
                    "vacuous problem: the reference output is identical for every seed.",
                    "register a problem whose output depends on its inputs.",
                )
            )
    if prefill_mismatch is not None:
        checks.append(
            Check(
                "uninitialized_memory",
                "FAIL" if prefill_mismatch else "PASS",
                prefill_mismatch
                or "outputs identical with fresh buffers filled with NaN and with zeros",
                "the candidate reads or returns memory it never wrote (partial work / uncovered blocks): "
                "cover every output block."
                if prefill_mismatch
                else "",
            )
        )
    details = {"spec": spec.describe(), "seeds": [p.seed for p in seeded], "probes": records,
               "relative_graded": spec.kind == "floor"}  # every graded floating output records `relative`
    return GateResult("parity", tuple(checks), details)


def compare_prefill(nan_fill: HostTree, zero_fill: HostTree) -> str:
    """'' when the two runs agree bit for bit (NaN equal to NaN), else what differed."""
    for path, a, b in zip(nan_fill.paths, nan_fill.leaves, zero_fill.leaves):
        fa, fb = _f64(a), _f64(b)
        differ = ~((fa == fb) | (np.isnan(fa) & np.isnan(fb)))
        if differ.any():
            first = np.unravel_index(int(np.argmax(differ)), differ.shape)
            return (
                f"output {path} depends on uninitialized memory: {int(differ.sum())} elements differ between "
                f"NaN-filled and zero-filled runs (first at {[int(i) for i in first]})"
            )
    return ""


def timed_agreement(candidate: HostTree, reference: HostTree) -> dict[str, float]:
    """How far a timed call's answer is from the reference's on the same inputs (max-abs over
    every output, inf for a non-finite or misshapen one), and the output's resolution there
    (one ulp of its dtype at its largest magnitude)."""
    worst, resolution = 0.0, 0.0
    for c, r in zip(candidate.leaves, reference.leaves):
        if c.shape != r.shape:
            return {"max_abs": float("inf"), "resolution": 0.0}
        if c.size == 0:
            continue
        g, e = _f64(c), _f64(r)
        diff = np.abs(g - e)
        diff[np.isnan(g) & np.isnan(e)] = 0.0
        worst = max(worst, float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))))
        finite = np.abs(e[np.isfinite(e)])
        resolution = max(resolution, _eps(r.dtype) * float(finite.max()) if finite.size else 0.0)
    if len(candidate.leaves) != len(reference.leaves):
        worst = float("inf")
    return {"max_abs": worst, "resolution": resolution}


def _times(ratio: float) -> str:
    """`at most 1.5x`, or what a non-finite ratio means (no "infx")."""
    if math.isnan(ratio) or math.isinf(ratio):
        return "non-finite errors (NaN or infinite), against"
    return f"at most {ratio:.3g}x"
