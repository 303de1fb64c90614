"""Statistics over timing samples: pure functions of numpy arrays, no I/O, no framework.

Samples are collected in rounds; each round times both legs the same number of times,
interleaved, and rounds are grouped in sessions (fresh compiles, fresh input values). The
speedup's interval is an anytime-valid confidence sequence over the sessions' log ratios
(`confidence_sequence`): a run may look after every session and stop whenever it likes.
The bootstrap over whole rounds remains for the ordering and agreement checks and for
receipts written before the sequence existed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_BOOTSTRAP = 2000


@dataclass(frozen=True)
class LegStats:
    """Summary of one leg's samples, in milliseconds."""

    n: int
    p50: float
    mean: float
    std: float
    min: float
    iqr: float

    @property
    def relative_iqr(self) -> float:
        return self.iqr / self.p50 if self.p50 > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "p50_ms": self.p50,
            "mean_ms": self.mean,
            "std_ms": self.std,
            "min_ms": self.min,
            "iqr_ms": self.iqr,
            "iqr_over_p50": self.relative_iqr,
        }


def summarize(samples_ms: np.ndarray) -> LegStats:
    s = np.asarray(samples_ms, dtype=np.float64).ravel()
    if s.size == 0:
        raise ValueError("no samples")
    q1, q3 = np.percentile(s, [25, 75])
    return LegStats(
        n=int(s.size),
        p50=float(np.median(s)),
        mean=float(s.mean()),
        std=float(s.std(ddof=1)) if s.size > 1 else 0.0,
        min=float(s.min()),
        iqr=float(q3 - q1),
    )


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    level: float = 0.95

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    @property
    def relative_width(self) -> float:
        return (self.high - self.low) / self.estimate if self.estimate > 0 else math.inf

    def disjoint(self, other: Interval) -> bool:
        return self.high < other.low or other.high < self.low

    def to_json(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "level": self.level}


def _small_sample_factor(rounds: int, level: float) -> float:
    """t(rounds-1) / z quantile ratio at `level` (1 for many rounds)."""
    from statistics import NormalDist

    q = 1.0 - (1.0 - level) / 2.0
    z = NormalDist().inv_cdf(q)
    return t_quantile(q, rounds - 1) / z


def t_quantile(q: float, df: float) -> float:
    """Student-t quantile from SciPy; from 200 degrees of freedom on, the normal's (the rule every
    receipt was made with, so each re-derives)."""
    from statistics import NormalDist

    if df >= 200:
        return NormalDist().inv_cdf(q)
    from scipy.special import stdtrit  # scipy.special alone: scipy.stats costs a second to import

    return float(stdtrit(df, q))


# -- the bootstrap's random indices: the same on every machine -------------------------------

ORDERING_LEVEL = 0.99  # the ordering check's intervals (a backstop for large asymmetries only)
BOOTSTRAP_METHOD = "kgate.bootstrap.splitmix64-counter.v1"  # recorded in receipts; re-derived by this id
LEGACY_BOOTSTRAP = "numpy.default_rng"  # receipts before the id: numpy's stream, same-build only
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class CounterRNG:
    """Integers drawn from a counter-based hash, so a receipt's bootstrap re-derives under any
    numpy, Python or machine (numpy promises its own generators' streams only per build).

    Draw i (counting from 0 over the generator's life) is SplitMix64's output for the state
    `seed + (i + 1) * 0x9E3779B97F4A7C15` (mod 2**64): z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
    z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31. An integer in [low, high) is
    `low + (((z >> 32) * (high - low)) >> 32)` (spans below 2**32). Only unsigned 64-bit
    wrapping arithmetic is used, which numpy defines the same everywhere.
    """

    def __init__(self, seed: int) -> None:
        self.seed = np.uint64(int(seed) % 2**64)
        self.drawn = 0

    def integers(self, low: int, high: int, size: int | tuple[int, ...]) -> np.ndarray:
        shape = (size,) if isinstance(size, int) else tuple(size)
        count = int(np.prod(shape, dtype=np.int64))
        span = int(high) - int(low)
        if not 0 < span < 2**32:
            raise ValueError(f"cannot draw from [{low}, {high})")
        picks = (self._high_words(count) * np.uint64(span)) >> np.uint64(32)
        return (picks.astype(np.int64) + int(low)).reshape(shape)

    def below(self, spans: np.ndarray) -> np.ndarray:
        """One draw in [0, spans[k]) for each k, in order: the same integers as that many
        one-at-a-time `integers(0, spans[k], 1)` calls, in one pass."""
        if np.size(spans) and not (0 < np.min(spans) and np.max(spans) < 2**32):
            raise ValueError("cannot draw below a span outside [1, 2**32)")
        spans = np.asarray(spans, dtype=np.uint64)
        return (self._high_words(spans.size) * spans) >> np.uint64(32)

    def _high_words(self, count: int) -> np.ndarray:
        """The next `count` draws' top 32 bits (the counter moves on by `count`)."""
        counters = np.arange(self.drawn + 1, self.drawn + count + 1, dtype=np.uint64)
        self.drawn += count
        z = counters * _GOLDEN + self.seed
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        return z >> np.uint64(32)


class UnknownBootstrap(ValueError):
    """A bootstrap generator id this kgate does not know."""


def bootstrap_rng(method: str, seed: int) -> Any:
    if method == BOOTSTRAP_METHOD:
        return CounterRNG(seed)
    if method == LEGACY_BOOTSTRAP:
        return np.random.default_rng(seed)
    raise UnknownBootstrap(f"the bootstrap generator {method!r} is not one this kgate knows "
                           f"(it knows {BOOTSTRAP_METHOD!r} and {LEGACY_BOOTSTRAP!r})")


def _block_length(rounds: int) -> int:
    return max(1, round(int(rounds) ** (1.0 / 3.0)))


def _block_picks(rng: Any, rounds: int, resamples: int) -> np.ndarray:
    """Circular moving-block bootstrap indices over rounds (block length ~ rounds^(1/3)).

    Neighbouring rounds share the machine's state (a busy spell spans several rounds);
    resampling blocks of rounds keeps that correlation, so the interval widens for it
    instead of pretending each round is independent.
    """
    block = _block_length(rounds)
    n_blocks = -(-rounds // block)
    starts = rng.integers(0, rounds, size=(resamples, n_blocks))
    idx = (starts[:, :, None] + np.arange(block)[None, None, :]) % rounds
    return idx.reshape(resamples, -1)[:, :rounds]


def _cluster_picks(rng: Any, groups: list[np.ndarray], resamples: int, width: int) -> np.ndarray:
    """Resample clusters with replacement, then blocks of members within each (vectorized
    when clusters are the same size, as sessions are unless the budget ran out)."""
    sizes = {len(g) for g in groups}
    if len(sizes) == 1:
        size = sizes.pop()
        members = np.stack(groups)  # (clusters, size)
        chosen = rng.integers(0, len(groups), size=(resamples, len(groups)))
        local = _block_picks(rng, size, resamples * len(groups)).reshape(resamples, len(groups), size)
        return np.resize(members[chosen[:, :, None], local].reshape(resamples, -1), (resamples, width))
    chosen = rng.integers(0, len(groups), size=(resamples, len(groups)))
    if isinstance(rng, CounterRNG):
        return _ragged_cluster_picks(rng, groups, chosen, width)
    picks = np.empty((resamples, width), dtype=int)
    for b in range(resamples):  # a legacy receipt's generator: its draws one call at a time, as they were made
        row = np.concatenate([g[_block_picks(rng, len(g), 1)[0]] for g in (groups[i] for i in chosen[b])])
        picks[b] = np.resize(row, width)
    return picks


def _ragged_cluster_picks(rng: CounterRNG, groups: list[np.ndarray], chosen: np.ndarray, width: int) -> np.ndarray:
    """`_cluster_picks` for clusters of different sizes, in whole arrays: the draws and the
    picks are exactly those of the loop (per resample, per chosen cluster, `_block_picks` of one
    row; the row concatenated and cycled or cut to `width`), without a Python call per cluster."""
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    blocks = np.array([_block_length(n) for n in sizes], dtype=np.int64)
    seg_group = chosen.reshape(-1)  # one segment per (resample, chosen cluster), in draw order
    seg_len, seg_block = sizes[seg_group], blocks[seg_group]
    seg_draws = -(-seg_len // seg_block)  # block starts drawn for the segment
    starts = rng.below(np.repeat(seg_len, seg_draws)).astype(np.int64)
    first_draw = np.cumsum(seg_draws) - seg_draws
    first_elem = np.cumsum(seg_len) - seg_len
    seg_of = np.repeat(np.arange(seg_group.size), seg_len)  # each element's segment
    t = np.arange(seg_of.size) - first_elem[seg_of]  # its place in the segment
    local = (starts[first_draw[seg_of] + t // seg_block[seg_of]] + t % seg_block[seg_of]) % seg_len[seg_of]
    members = np.concatenate(groups)
    offsets = np.cumsum(sizes) - sizes
    elements = members[offsets[seg_group[seg_of]] + local]
    clusters = chosen.shape[1]
    row_len = seg_len.reshape(-1, clusters).sum(axis=1)
    row_start = first_elem.reshape(-1, clusters)[:, 0]
    return elements[row_start[:, None] + np.arange(width)[None, :] % row_len[:, None]]


def _widened(estimate: float, resampled_logs: np.ndarray, units: int, level: float) -> Interval:
    """Log-space percentile interval around `estimate`, widened by t(units-1)/z: a bootstrap
    over few units (rounds or sessions) is too narrow on its own."""
    center = math.log(estimate)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(resampled_logs, [alpha, 1.0 - alpha])
    widen = _small_sample_factor(units, level)
    low, high = center - (center - low) * widen, center + (high - center) * widen
    return Interval(estimate, float(math.exp(low)), float(math.exp(high)), level)


def speedup_interval(
    reference_rounds: np.ndarray,
    candidate_rounds: np.ndarray,
    *,
    sessions: Sequence[int] | None = None,
    level: float = 0.95,
    resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    method: str = BOOTSTRAP_METHOD,
) -> Interval:
    """Pooled-median speedup (reference / candidate) with a bootstrap CI.

    Both arrays are (rounds, samples_per_round); row r of each was measured interleaved.
    `sessions` labels each round with the session (fresh compile, fresh input values) it ran
    in. The bootstrap resamples sessions, then blocks of rounds within each, and the
    log-space percentile interval is widened by t(units-1)/z, where the units are the
    sessions (or the rounds, without sessions): two compilations of the same program can
    differ by a percent, and a run's interval must carry that, not only round noise.
    """
    ref = np.asarray(reference_rounds, dtype=np.float64)
    cand = np.asarray(candidate_rounds, dtype=np.float64)
    if ref.ndim != 2 or ref.shape != cand.shape or ref.size == 0:
        raise ValueError("reference and candidate rounds must be equal, non-empty (rounds, n) arrays")
    estimate = float(np.median(ref) / np.median(cand))
    rounds = ref.shape[0]
    labels = np.zeros(rounds, dtype=int) if sessions is None else np.asarray(sessions, dtype=int)
    groups = [np.flatnonzero(labels == g) for g in np.unique(labels)]
    if rounds < 2:
        return Interval(estimate, 0.0, math.inf, level)
    rng = bootstrap_rng(method, seed)
    if len(groups) >= 2:
        units = len(groups)
        picks = _cluster_picks(rng, groups, resamples, rounds)
    else:
        units = rounds
        picks = _block_picks(rng, rounds, resamples)
    ref_med = np.median(ref[picks].reshape(resamples, -1), axis=1)
    cand_med = np.median(cand[picks].reshape(resamples, -1), axis=1)
    return _widened(estimate, np.log(ref_med / cand_med), units, level)


def p50_interval(rounds: np.ndarray, sessions: Sequence[int], *, level: float = 0.95, resamples: int = DEFAULT_BOOTSTRAP,
                 seed: int = 0, method: str = BOOTSTRAP_METHOD) -> Interval:
    """A leg's p50 (the median of all its samples) with a bootstrap interval that resamples
    sessions, then blocks of rounds within each, widened by t(units-1)/z as the speedup's was."""
    x = np.asarray(rounds, dtype=np.float64)
    labels = np.asarray(sessions, dtype=int)
    estimate = float(np.median(x))
    if x.ndim != 2 or x.shape[0] < 2:
        return Interval(estimate, 0.0, math.inf, level)
    groups = [np.flatnonzero(labels == g) for g in np.unique(labels)]
    rng = bootstrap_rng(method, seed)
    if len(groups) >= 2:
        units, picks = len(groups), _cluster_picks(rng, groups, resamples, x.shape[0])
    else:
        units, picks = x.shape[0], _block_picks(rng, x.shape[0], resamples)
    medians = np.median(x[picks].reshape(resamples, -1), axis=1)
    return _widened(estimate, np.log(medians), units, level)


def median_interval(values: np.ndarray, *, level: float = 0.95, resamples: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                    method: str = BOOTSTRAP_METHOD) -> Interval:
    """Bootstrap CI of the median of i.i.d. values."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("no values")
    estimate = float(np.median(v))
    if v.size < 2:
        return Interval(estimate, -math.inf, math.inf, level)
    rng = bootstrap_rng(method, seed)
    meds = np.median(v[rng.integers(0, v.size, size=(resamples, v.size))], axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(meds, [alpha, 1.0 - alpha])
    return Interval(estimate, float(low), float(high), level)


def round_differences(reference_rounds: np.ndarray, candidate_rounds: np.ndarray) -> np.ndarray:
    """Per-round p50 difference, reference minus candidate (ms): positive = candidate faster."""
    return np.median(np.asarray(reference_rounds), axis=1) - np.median(np.asarray(candidate_rounds), axis=1)


def run_to_run_sigma(reference_rounds: np.ndarray, candidate_rounds: np.ndarray) -> float:
    """Standard deviation (not standard error) of the per-round p50 difference."""
    diffs = round_differences(reference_rounds, candidate_rounds)
    return float(np.std(diffs, ddof=1)) if diffs.size > 1 else math.inf


def minimum_detectable_speedup(reference_p50: float, sigma: float, k: float) -> float:
    """The smallest speedup whose p50 difference would exceed k x sigma (inf if none can)."""
    margin = k * sigma
    if not math.isfinite(margin) or margin >= reference_p50:
        return math.inf
    return reference_p50 / (reference_p50 - margin)


def ordering_intervals(
    reference_rounds: np.ndarray,
    candidate_rounds: np.ndarray,
    candidate_first: np.ndarray,
    *,
    sessions: Sequence[int] | None = None,
    level: float = 0.95,
    resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    method: str = BOOTSTRAP_METHOD,
) -> tuple[Interval, Interval] | None:
    """The speedup measured with both legs in first position of their pair, and with both
    in second position, each as a bootstrap interval over rounds.

    Comparing like positions cancels a symmetric position effect (every call is a little
    slower, or faster, right after another call: caches, clocks, thread pools), which a
    coin-flip order already balances. What remains is asymmetric: one leg is slowed only
    when it follows the other, which is what work leaking out of a call looks like.
    Each round gives one speedup per position; each interval is a bootstrap over rounds
    of their median (sessions resampled first when given, and the interval widened by
    t(sessions-1)/z, as for the speedup). None when fewer than 3 rounds have pairs in
    both orders.
    """
    ref = np.asarray(reference_rounds, dtype=np.float64)
    cand = np.asarray(candidate_rounds, dtype=np.float64)
    first = np.asarray(candidate_first, dtype=bool)
    all_labels = np.zeros(ref.shape[0], dtype=int) if sessions is None else np.asarray(sessions, dtype=int)
    per_round: list[tuple[float, float]] = []
    labels: list[int] = []
    for r in range(ref.shape[0]):
        cand_first, ref_first = first[r], ~first[r]
        if cand_first.any() and ref_first.any():
            per_round.append(
                (
                    float(np.median(ref[r][ref_first]) / np.median(cand[r][cand_first])),
                    float(np.median(ref[r][cand_first]) / np.median(cand[r][ref_first])),
                )
            )
            labels.append(int(all_labels[r]))
    if len(per_round) < 3:
        return None
    values = np.array(per_round)
    return (
        _clustered_median_interval(values[:, 0], labels, level, resamples, seed, method),
        _clustered_median_interval(values[:, 1], labels, level, resamples, seed + 1, method),
    )


def ordering_record(reference_rounds: np.ndarray, candidate_rounds: np.ndarray, candidate_first: np.ndarray,
                    sessions: Sequence[int] | None, level: float, method: str = BOOTSTRAP_METHOD) -> dict[str, Any] | None:
    """`ordering_intervals` as a timing records it (and verify-receipt re-derives it from the
    samples, by the bootstrap generator's id); None when there are too few pairs."""
    intervals = ordering_intervals(np.asarray(reference_rounds, dtype=np.float64), np.asarray(candidate_rounds, dtype=np.float64),
                                   np.asarray(candidate_first, dtype=bool), sessions=sessions, level=level, method=method)
    if intervals is None:
        return None
    return {"level": level, "bootstrap": method, "both_first": intervals[0].to_json(), "both_second": intervals[1].to_json()}


def ordering_disjoint(record: Mapping[str, Any]) -> bool:
    """The two orderings' intervals do not overlap: one leg is slowed only when it follows the other."""
    a, b = record["both_first"], record["both_second"]
    return bool(a["high"] < b["low"] or b["high"] < a["low"])


def _clustered_median_interval(values: np.ndarray, labels: Sequence[int], level: float, resamples: int, seed: int,
                               method: str) -> Interval:
    """Bootstrap CI of the median of positive values, resampling clusters then members."""
    lab = np.asarray(labels)
    groups = [np.flatnonzero(lab == g) for g in np.unique(lab)]
    if len(groups) < 2:
        return median_interval(values, level=level, resamples=resamples, seed=seed, method=method)
    rng = bootstrap_rng(method, seed)
    logs = np.log(values)
    meds = np.median(logs[_cluster_picks(rng, groups, resamples, len(logs))], axis=1)
    return _widened(math.exp(float(np.median(logs))), meds, len(groups), level)


# -- the anytime-valid interval: looked at after every session, valid whenever it stops -----

CS_METHOD = "kgate.cs.haar-t-mixture.v1"  # recorded in every receipt; verify-receipt knows it by this id
CS_MIXTURE = (1.0, 10.0, 100.0, 1000.0)  # prior variances of the standardized effect, equally weighted


def session_log_ratios(reference_rounds: np.ndarray, candidate_rounds: np.ndarray,
                       sessions: Sequence[int]) -> np.ndarray:
    """One number per session (fresh compiles, fresh input values), in the order they ran:
    log(reference p50 / candidate p50) over that session's rounds. Rounds pair the legs, so
    what slows the whole machine cancels; a session's number carries its compile's share."""
    ref = np.asarray(reference_rounds, dtype=np.float64)
    cand = np.asarray(candidate_rounds, dtype=np.float64)
    labels = np.asarray(sessions, dtype=int)
    order = list(dict.fromkeys(labels.tolist()))
    with np.errstate(divide="ignore", invalid="ignore"):  # a 0 ms median (a clock too coarse) gives +-inf
        return np.array([np.log(np.median(ref[labels == s])) - np.log(np.median(cand[labels == s])) for s in order])


def _log_mixture_bf(t: float, n: int) -> float:
    """log of the Bayes factor for "mean != m" against "mean = m" given n Gaussian values whose
    t statistic about m is t: the standardized effect has a N(0, g) prior, averaged over
    CS_MIXTURE, and the unknown scale the right-Haar prior 1/sigma. For each g this is the
    closed form of Rouder et al. (2009); with the Haar prior on the scale it is a
    nonnegative martingale under the null in the scale-invariant filtration (Lai 1976;
    Perez-Ortiz et al. 2024), so by Ville's inequality it ever reaches 1/alpha with
    probability at most alpha, however often one looks."""
    nu = n - 1
    logs = [-0.5 * math.log1p(n * g) + (nu + 1) / 2.0 * (math.log1p(t * t / nu) - math.log1p(t * t / ((1.0 + n * g) * nu)))
            for g in CS_MIXTURE]
    top = max(logs)
    return top + math.log(sum(math.exp(v - top) for v in logs) / len(logs))


@functools.lru_cache(maxsize=1024)
def cs_critical_t(n: int, level: float = 0.95) -> float:
    """The |t| at which the mixture Bayes factor reaches 1/(1-level): the confidence
    sequence's half-width in standard errors after n sessions (inf while no t can reach it)."""
    if n < 2:
        return math.inf
    target = math.log(1.0 / (1.0 - level))
    if _log_mixture_bf(1e12, n) < target:
        return math.inf
    lo, hi = 0.0, 1e12
    for _ in range(200):  # bisection to the last bit: the same number on every machine
        mid = (lo + hi) / 2.0
        if _log_mixture_bf(mid, n) < target:
            lo = mid
        else:
            hi = mid
    return hi


def confidence_sequence(log_ratios: Sequence[float], level: float = 0.95) -> Interval:
    """The speedup's anytime-valid interval from per-session log ratios (sessions are the unit:
    the interval carries compile-to-compile spread). The estimate is the geometric mean of the
    sessions' speedups. Before a third session, or while the data cannot exclude anything,
    the interval is [0, inf]."""
    x = np.asarray(log_ratios, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        raise ValueError("no sessions")
    with np.errstate(invalid="ignore"):
        mean = float(np.mean(x))
    estimate = math.exp(mean) if not math.isnan(mean) else math.nan
    t = cs_critical_t(n, level)
    sd = float(np.std(x, ddof=1)) if n >= 2 and np.all(np.isfinite(x)) else math.nan
    # open while no t can reach the boundary, while a session's time is 0 (a clock too coarse to
    # resolve the call) and while the sessions do not differ at all (no spread: nothing to scale by)
    if not math.isfinite(t) or not sd > 0.0:
        return Interval(estimate, 0.0, math.inf, level)
    half = t * sd / math.sqrt(n)
    return Interval(estimate, math.exp(mean - half), math.exp(mean + half), level)


POWER = 0.90  # the power at which a run's detectable effect is stated


def resolves(threshold: float, detectable: float) -> bool:
    """Whether a bar at `threshold` lies farther from 1.0 than the `detectable` effect (either way:
    a speedup bar above 1, a no-worse-than bar below it); a bar closer than that stays undecided for
    a candidate near it."""
    return threshold > 0 and abs(math.log(threshold)) > math.log(detectable)


def detectable_speedup(session_sd: float, sessions: int, level: float = 0.95, power: float = POWER) -> float:
    """The smallest speedup (or slowdown, as its inverse) that `sessions` sessions whose log
    ratios scatter by `session_sd` put outside 1.0 with probability `power`: the confidence
    sequence's half-width after that many sessions plus the power's normal quantile, in
    standard errors. It treats the scatter as known, so it is an estimate, best from many
    sessions (`kgate calibrate` fills its budget with them). inf where no interval can close."""
    from statistics import NormalDist

    t = cs_critical_t(sessions, level) if sessions >= 2 else math.inf
    if not math.isfinite(t) or not math.isfinite(session_sd) or not session_sd > 0.0:
        return math.inf  # no spread seen is no spread known: the sequence stays open
    return math.exp((t + NormalDist().inv_cdf(power)) * session_sd / math.sqrt(sessions))


def power_at_budget(log_ratios: Sequence[float], elapsed_s: float, budget_s: float, max_sessions: int | None = None,
                    level: float = 0.95) -> dict[str, Any]:
    """What a run of `budget_s` seconds could detect, from the sessions seen so far: their scatter,
    and how many sessions of the same cost (compiles included) fit in the budget, and under the
    run's round cap (`max_sessions`)."""
    x = np.asarray(log_ratios, dtype=np.float64)
    n = int(x.size)
    sd = float(np.std(x, ddof=1)) if n >= 2 and np.all(np.isfinite(x)) else math.inf
    fit = max(n, int(budget_s * n / elapsed_s)) if elapsed_s > 0 and n else n
    if max_sessions is not None:
        fit = max(n, min(fit, max_sessions))
    return {
        "power": POWER,
        "budget_s": budget_s,
        "sessions_seen": n,
        "session_sd_log": sd,
        "sessions_in_budget": fit,
        "detectable_speedup": detectable_speedup(sd, fit, level),
    }


def sequential_interval(reference_rounds: np.ndarray, candidate_rounds: np.ndarray, sessions: Sequence[int],
                        level: float = 0.95) -> Interval:
    return confidence_sequence(session_log_ratios(reference_rounds, candidate_rounds, sessions), level)


def welch_ratio(logs_a: Sequence[float], logs_b: Sequence[float], level: float = 0.95) -> Interval:
    """exp(mean(a) - mean(b)) for two independent samples of logs (each with at least two), with a
    Welch t interval: how many times larger A's quantity is than B's, when the two were measured
    apart (two receipts, two processes) and no pairing holds. No spread at all resolves nothing."""
    a, b = np.asarray(logs_a, dtype=float), np.asarray(logs_b, dtype=float)
    diff = float(np.mean(a) - np.mean(b))
    va, vb = float(np.var(a, ddof=1)) / len(a), float(np.var(b, ddof=1)) / len(b)
    se = math.sqrt(va + vb)
    if se == 0.0:
        return Interval(math.exp(diff), 0.0, math.inf, level)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    t = t_quantile(1.0 - (1.0 - level) / 2.0, df)
    return Interval(math.exp(diff), math.exp(diff - t * se), math.exp(diff + t * se), level)
