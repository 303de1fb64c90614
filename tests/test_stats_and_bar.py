"""Timing statistics and the falsification bar, on synthetic samples (pure, no JAX)."""

import math

import numpy as np
import pytest

from kgate.errors import KgateError
from kgate.gates import stats
from kgate.gates.bar import evaluate_bar, ordering_status, parse_bar
from kgate.verify.receipt import rederive_ordering


def rounds(median, spread, shape=(20, 10), seed=0, drift=None):
    rng = np.random.default_rng(seed)
    x = median * np.exp(rng.normal(0, spread, shape))
    if drift is not None:
        x = x * drift[:, None]
    return x


def test_summary_reports_p50_mean_std_min_iqr_n():
    s = stats.summarize(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    assert (s.n, s.p50, s.min) == (5, 3.0, 1.0)
    assert s.mean == pytest.approx(22.0)
    assert s.iqr == pytest.approx(2.0)
    assert s.relative_iqr == pytest.approx(2 / 3)


def test_known_speedup_is_inside_a_narrow_interval():
    ref, cand = rounds(2.0, 0.02, seed=1), rounds(1.0, 0.02, seed=2)
    ci = stats.speedup_interval(ref, cand)
    assert ci.contains(2.0) and ci.relative_width < 0.05


def test_identical_legs_interval_contains_one():
    ref, cand = rounds(1.0, 0.05, seed=3), rounds(1.0, 0.05, seed=4)
    assert stats.speedup_interval(ref, cand).contains(1.0)


def test_round_bootstrap_cancels_drift_shared_by_both_legs():
    drift = np.linspace(1.0, 3.0, 20)  # the machine slows down 3x during the run
    ref = rounds(1.0, 0.01, seed=5, drift=drift)
    cand = rounds(1.0, 0.01, seed=6, drift=drift) / 1.10
    ci = stats.speedup_interval(ref, cand)
    assert ci.low > 1.05 and ci.high < 1.15


def test_sigma_is_a_standard_deviation_across_rounds_not_an_error():
    ref = np.array([[10.0, 10.0], [12.0, 12.0], [10.0, 10.0], [12.0, 12.0]])
    cand = np.array([[10.0, 10.0], [10.0, 10.0], [10.0, 10.0], [10.0, 10.0]])
    assert stats.round_differences(ref, cand).tolist() == [0.0, 2.0, 0.0, 2.0]
    assert stats.run_to_run_sigma(ref, cand) == pytest.approx(np.std([0, 2, 0, 2], ddof=1))
    # More rounds of the same noise do not shrink sigma (a standard error would).
    assert stats.run_to_run_sigma(np.tile(ref, (10, 1)), np.tile(cand, (10, 1))) == pytest.approx(1.0, rel=0.2)


def test_minimum_detectable_speedup():
    assert stats.minimum_detectable_speedup(10.0, 0.1, 3) == pytest.approx(10 / 9.7)
    assert stats.minimum_detectable_speedup(1.0, 0.5, 3) == math.inf


def test_ordering_intervals_disjoint_only_for_a_real_order_effect():
    ref, cand = rounds(1.0, 0.02, seed=7), rounds(1.0, 0.02, seed=8)
    first = np.random.default_rng(9).random(ref.shape) < 0.5
    a, b = stats.ordering_intervals(ref, cand, first)
    assert not a.disjoint(b)
    ref_after = np.where(first, ref * 1.5, ref)  # the reference is slower whenever it follows the candidate
    a, b = stats.ordering_intervals(ref_after, cand, first)
    assert a.disjoint(b) and b.estimate > a.estimate
    # Every call 5% slower in second position, whichever leg: physics, balanced by the coin flip.
    a, b = stats.ordering_intervals(np.where(first, ref * 1.05, ref), np.where(first, cand, cand * 1.05), first)
    assert not a.disjoint(b)


@pytest.mark.parametrize(
    "text,kinds",
    [
        ("speedup > 1.5x", [("threshold", 1.5)]),
        ("speedup >= 1.1", [("threshold", 1.1)]),
        ("p50 beats naive by >2%", [("threshold", 1.02)]),
        ("p50 beats naive by >2% AND 3σ", [("threshold", 1.02), ("sigma", 3.0)]),
        ("speedup > 1.2x and 2.5sigma", [("threshold", 1.2), ("sigma", 2.5)]),
    ],
)
def test_bar_grammar_accepts(text, kinds):
    bar = parse_bar(text)
    assert [(c.kind, pytest.approx(c.value)) for c in bar.clauses] == kinds


@pytest.mark.parametrize("text", ["", "faster", "speedup > fast", "p50 beats naive by 2", "3 sigmas", "speedup < 2x", "beats by >2% OR 3σ"])
def test_bar_grammar_rejects_with_the_grammar_in_the_message(text):
    with pytest.raises(KgateError) as err:
        parse_bar(text)
    assert "p50 beats naive by >2%" in err.value.fix


def test_bar_met_missed_undecided_with_arithmetic():
    bar = parse_bar("p50 beats naive by >2% AND 3σ")
    met = evaluate_bar(bar, speedup=1.10, low=1.06, high=1.14, p50_difference_ms=0.5, sigma_ms=0.1)
    assert met.outcome == "MET"
    assert "vs threshold 1.0200" in met.clauses[0].arithmetic and "3 x sigma" in met.clauses[1].arithmetic
    missed = evaluate_bar(bar, speedup=1.00, low=0.99, high=1.01, p50_difference_ms=0.0, sigma_ms=0.1)
    assert missed.outcome == "MISSED" and missed.clauses[0].outcome == "MISSED"
    straddle = evaluate_bar(bar, speedup=1.03, low=1.00, high=1.06, p50_difference_ms=0.5, sigma_ms=0.1)
    assert straddle.outcome == "UNDECIDED"
    noisy = evaluate_bar(bar, speedup=1.10, low=1.06, high=1.14, p50_difference_ms=0.5, sigma_ms=0.2)
    assert noisy.outcome == "UNDECIDED" and noisy.clauses[1].outcome == "UNDECIDED"


def test_sigma_clause_is_missed_when_confidently_slower():
    bar = parse_bar("3σ")
    assert evaluate_bar(bar, speedup=0.5, low=0.4, high=0.6, p50_difference_ms=-1.0, sigma_ms=0.1).outcome == "MISSED"


def test_session_spread_widens_the_interval():
    # Four sessions whose compilations differ by +-2%: round noise alone would claim precision.
    ref = np.vstack([rounds(1.0, 0.01, shape=(10, 10), seed=20 + s) * f for s, f in enumerate([1.02, 0.98, 1.01, 0.99])])
    cand = np.vstack([rounds(1.0, 0.01, shape=(10, 10), seed=40 + s) for s in range(4)])
    labels = [s for s in range(4) for _ in range(10)]
    naive = stats.speedup_interval(ref, cand)
    honest = stats.speedup_interval(ref, cand, sessions=labels)
    assert honest.relative_width > 2 * naive.relative_width
    assert honest.contains(1.0)


def testt_quantiles():
    assert stats.t_quantile(0.975, 1) == pytest.approx(12.706, abs=1e-3)
    assert stats.t_quantile(0.975, 3) == pytest.approx(3.182, abs=1e-3)
    assert stats.t_quantile(0.975, 30) == pytest.approx(2.042, abs=1e-3)


def test_the_t_quantile_keeps_the_large_df_rule_every_receipt_was_made_with():
    from statistics import NormalDist

    assert stats.t_quantile(0.995, 199) == pytest.approx(2.6008, abs=1e-4)
    assert stats.t_quantile(0.975, 200) == NormalDist().inv_cdf(0.975)


def _splitmix_draws(seed, count, span):
    """The documented stream, written out in plain Python integers (no numpy)."""
    mask, out = 2**64 - 1, []
    for i in range(1, count + 1):
        z = (seed + i * 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out.append(((z >> 32) * span) >> 32)
    return out


def test_the_bootstrap_stream_is_the_documented_one_whatever_numpy_does(monkeypatch):
    rng = stats.CounterRNG(7)
    first, second = rng.integers(0, 1000, 5), rng.integers(0, 10, (2, 3))
    assert first.tolist() == _splitmix_draws(7, 5, 1000) == [389, 16, 900, 582, 452]
    assert second.ravel().tolist() == _splitmix_draws(7, 11, 10)[5:]  # the counter runs on across calls
    ref, cand = rounds(1.0, 0.03, shape=(12, 6), seed=1), rounds(0.5, 0.03, shape=(12, 6), seed=2)
    first_pos = np.random.default_rng(3).random(ref.shape) < 0.5
    labels = [r // 3 for r in range(12)]
    before = stats.ordering_record(ref, cand, first_pos, labels, 0.99)
    legacy = stats.ordering_record(ref, cand, first_pos, labels, 0.99, stats.LEGACY_BOOTSTRAP)
    # a numpy whose default generator gives another stream: the counter's bootstrap does not move
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: np.random.Generator(np.random.MT19937(seed)))
    assert stats.ordering_record(ref, cand, first_pos, labels, 0.99) == before
    assert stats.ordering_record(ref, cand, first_pos, labels, 0.99, stats.LEGACY_BOOTSTRAP) != legacy
    with pytest.raises(stats.UnknownBootstrap, match="kgate.bootstrap.future"):
        stats.ordering_record(ref, cand, first_pos, labels, 0.99, "kgate.bootstrap.future.v9")


def test_clusters_of_different_sizes_draw_the_same_picks_in_one_pass_as_one_call_at_a_time():
    # receipts recorded with the per-cluster loop must re-derive the same intervals
    for seed, sizes, width, resamples in ((0, (3, 5, 4), 12, 300), (5, (1, 7), 6, 300), (9, (10, 2, 2, 9), 40, 300),
                                         (3, (4, 6), 3, 300), (4, (2, 9, 1), 11, 1)):
        start = np.cumsum((0,) + sizes[:-1])
        groups = [np.arange(a, a + n) * 10 for a, n in zip(start, sizes)]
        rng, looped = stats.CounterRNG(seed), stats.CounterRNG(seed)
        fast = stats._cluster_picks(rng, groups, resamples, width)
        chosen = looped.integers(0, len(groups), size=(resamples, len(groups)))
        slow = np.stack([np.resize(np.concatenate([groups[i][stats._block_picks(looped, len(groups[i]), 1)[0]]
                                                   for i in row]), width) for row in chosen])
        assert fast.shape == slow.shape and (fast == slow).all() and rng.drawn == looped.drawn


def test_ordering_with_sessions_still_flags_a_large_asymmetry_only():
    ref, cand = rounds(1.0, 0.03, shape=(40, 12), seed=11), rounds(1.0, 0.03, shape=(40, 12), seed=12)
    first = np.random.default_rng(13).random(ref.shape) < 0.5
    labels = [r // 10 for r in range(40)]
    a, b = stats.ordering_intervals(np.where(first, ref * 1.5, ref), cand, first, sessions=labels, level=0.99)
    assert a.disjoint(b)
    a, b = stats.ordering_intervals(np.where(first, ref * 1.03, ref), cand, first, sessions=labels, level=0.99)
    assert not a.disjoint(b)


# -- the anytime-valid interval: looked at after every session --------------------------------


def _ever_excludes(critical, truth, runs=4000, sessions=40, sd=0.02, seed=7):
    """Of `runs` simulated sequences of session log ratios (true log speedup `truth`), the share
    that ever had an interval excluding the truth, looking after every session from the second:
    the interval after n sessions is mean +- critical(n) * sd / sqrt(n) in log space."""
    x = np.random.default_rng(seed).normal(truth, sd, (runs, sessions))
    n = np.arange(1, sessions + 1)
    mean = np.cumsum(x, axis=1) / n
    var = (np.cumsum(x * x, axis=1) - n * mean * mean) / np.maximum(n - 1, 1)
    half = np.array([critical(k) for k in n[1:]]) * np.sqrt(np.maximum(var[:, 1:], 0) / n[1:])
    return float(np.mean(np.any(np.abs(mean[:, 1:] - truth) > half, axis=1)))


def test_looking_after_every_session_keeps_the_error_rate_and_a_fixed_interval_would_not():
    rng = np.random.default_rng(1)
    for n in (2, 3, 5, 12):  # the vectorized form below is the product's interval
        x = rng.normal(0.1, 0.02, n)
        cs = stats.confidence_sequence(x)
        half = stats.cs_critical_t(n) * np.std(x, ddof=1) / math.sqrt(n)
        assert cs.high == (math.inf if n == 2 else pytest.approx(math.exp(np.mean(x) + half)))
    assert _ever_excludes(stats.cs_critical_t, 0.0) <= 0.05  # anytime-valid: at most alpha over all 40 looks
    assert _ever_excludes(stats.cs_critical_t, math.log(1.3), seed=8) <= 0.05
    fixed = {k: stats.t_quantile(0.975, k - 1) for k in range(2, 41)}
    assert _ever_excludes(fixed.__getitem__, 0.0) > 0.15  # what peeking does to an interval not built for it


def test_the_sequence_widens_for_few_sessions_and_narrows_with_more():
    assert stats.cs_critical_t(2) == math.inf and stats.cs_critical_t(1) == math.inf
    ts = [stats.cs_critical_t(n) for n in (3, 4, 6, 10, 40)]
    assert ts == sorted(ts, reverse=True) and ts[-1] > 1.96
    assert stats.confidence_sequence([0.1, 0.12]).high == math.inf  # two sessions: nothing excluded yet
    big = stats.confidence_sequence([math.log(3.8) + e for e in (0.01, -0.02, 0.015)])
    assert 2.0 < big.low < 3.8 < big.high < 6.0  # a clear 3.8x win clears a 2x bar after three sessions


def test_sessions_are_the_unit_so_a_session_spread_widens_the_interval():
    ref = rounds(2.0, 0.01, shape=(12, 5), seed=3)
    cand = rounds(1.0, 0.01, shape=(12, 5), seed=4)
    labels = [r // 3 for r in range(12)]
    calm = stats.sequential_interval(ref, cand, labels)
    shifted = cand * np.array([1.0, 1.08, 0.95, 1.04]).repeat(3)[:, None]  # one compile slower, one faster
    spread = stats.sequential_interval(ref, shifted, labels)
    assert calm.contains(2.0) and spread.contains(2.0)
    assert spread.relative_width > 3 * calm.relative_width


def test_the_bar_is_decided_by_its_thresholds_alone():
    from kgate.gates.bar import interval_decision

    both = parse_bar("speedup > 1.5x AND p50 beats naive by >2%")
    assert interval_decision(both, 1.6, 2.0) == "MET"
    assert interval_decision(both, 1.4, 2.0) is None
    assert interval_decision(both, 0.9, 1.01) == "MISSED"  # below one threshold is enough
    assert interval_decision(parse_bar("3σ"), 5.0, 6.0) is None  # a sigma clause is graded at the end only


def test_the_stated_power_is_the_power_the_sequence_has():
    # A true effect at the stated detectable speedup is put above 1.0 about 90% of the time
    # (a little less: the scatter is estimated, not known); no effect almost never is.
    sd, n = 0.05, 20
    detectable = stats.detectable_speedup(sd, n)
    rng = np.random.default_rng(7)
    hit = np.mean([stats.confidence_sequence(rng.normal(math.log(detectable), sd, n)).low > 1.0 for _ in range(400)])
    null = np.mean([stats.confidence_sequence(rng.normal(0.0, sd, n)).low > 1.0 for _ in range(400)])
    assert 0.8 <= hit <= 0.97 and null <= 0.03, (hit, null)
    assert stats.detectable_speedup(sd, 2) == math.inf  # two sessions can exclude nothing
    assert stats.detectable_speedup(sd, 80) < stats.detectable_speedup(sd, 20) < stats.detectable_speedup(2 * sd, 20)


def test_power_at_a_budget_counts_the_sessions_that_fit():
    logs = [0.01, -0.02, 0.0, 0.015]
    power = stats.power_at_budget(logs, elapsed_s=2.0, budget_s=10.0)  # 4 sessions in 2 s: 20 in 10 s
    assert power["sessions_in_budget"] == 20 and power["power"] == 0.9
    assert power["detectable_speedup"] == stats.detectable_speedup(float(np.std(logs, ddof=1)), 20)
    assert stats.power_at_budget(logs, elapsed_s=2.0, budget_s=1.0)["sessions_in_budget"] == 4  # never fewer than seen


def test_no_spread_or_an_unresolved_clock_leaves_the_interval_open():
    assert stats.confidence_sequence([0.1, 0.1, 0.1, 0.1]).high == math.inf  # identical sessions: no scale known
    assert stats.confidence_sequence([0.1, math.inf, 0.2, 0.1]).high == math.inf  # a 0 ms median
    ref = np.full((6, 3), 1.0)
    cand = np.zeros((6, 3))
    assert stats.sequential_interval(ref, cand, [0, 0, 1, 1, 2, 2]).low == 0.0
    assert stats.detectable_speedup(0.0, 20) == math.inf


def test_a_bar_resolves_by_its_distance_from_one_either_way():
    assert stats.resolves(1.2, 1.1) and stats.resolves(0.8, 1.1)  # a no-worse-than bar counts too
    assert not stats.resolves(1.05, 1.1) and not stats.resolves(0.97, 1.1) and not stats.resolves(1.0, 1.1)


def _order_effect(speedup, slowed, seed=21):
    """Rounds of a candidate `speedup` times faster, the reference `slowed` times slower whenever
    it runs right after the candidate (cache eviction by an honest leg, or work leaking out of a
    dishonest one): sessions of 10 rounds."""
    ref, cand = rounds(speedup, 0.03, shape=(30, 12), seed=seed), rounds(1.0, 0.03, shape=(30, 12), seed=seed + 1)
    first = np.random.default_rng(seed + 2).random(ref.shape) < 0.5
    return np.where(first, ref * slowed, ref), cand, first, [r // 10 for r in range(30)]


@pytest.mark.parametrize("bar,status", [
    ("speedup > 1.3x", "ADVISORY"),  # MET in either ordering (~3x and ~3.6x): the order does not decide it
    ("speedup > 5x", "ADVISORY"),  # MISSED in either ordering
    ("speedup > 3.3x", "FAIL"),  # MISSED in one ordering, MET in the other
    ("speedup > 1.3x AND 3σ", "ADVISORY"),  # the thresholds decide alike; sigma is graded once, on the pool
    ("3σ", "FAIL"),  # no threshold to decide
    (None, "FAIL"),  # no bar: the speedup itself is the claim
])
def test_an_order_effect_fails_only_where_it_could_decide_the_bar(bar, status):
    record = stats.ordering_record(*_order_effect(3.0, 1.2), 0.99)
    assert stats.ordering_disjoint(record)
    assert ordering_status(parse_bar(bar) if bar else None, record) == status
    assert ordering_status(parse_bar(bar) if bar else None, record, bar_aware=False) == "FAIL"  # kgate before 0.3.2
    assert ordering_status(parse_bar(bar) if bar else None, None) == "SKIPPED"
    none = stats.ordering_record(*_order_effect(3.0, 1.0), 0.99)
    assert ordering_status(parse_bar(bar) if bar else None, none) == "PASS"


def test_work_leaking_into_the_next_call_still_fails_against_the_bar_it_fakes():
    # a candidate no faster than the reference, whose leaked work slows the call after it by 60%
    record = stats.ordering_record(*_order_effect(1.0, 1.6), 0.99)
    assert ordering_status(parse_bar("speedup > 1.3x"), record) == "FAIL"
    assert ordering_status(parse_bar("speedup > 1.1x"), record) == "FAIL"


def test_verify_receipt_rederives_the_ordering_status_from_the_bar_and_the_version():
    ref, cand, first, labels = _order_effect(3.0, 1.2)
    record = stats.ordering_record(ref, cand, first, labels, stats.ORDERING_LEVEL)
    timing = {"samples_ms": {"reference": ref.tolist(), "candidate": cand.tolist(), "candidate_first": first.tolist(),
                             "session": labels}, "ordering": record}

    def said(status):
        return {"checks": [{"name": "measure.ordering_independent", "status": status}]}

    bar = {"bar": "speedup > 1.3x", "outcome": "MET"}
    assert rederive_ordering(timing, said("ADVISORY"), "0.3.2", bar) == []
    assert rederive_ordering(timing, said("FAIL"), "0.3.1", bar) == []  # the rule of the kgate that wrote it
    for integrity, made_by, graded in ((said("ADVISORY"), "0.3.1", bar),  # a version claimed down
                                       (said("ADVISORY"), "0.3.2", None),  # the bar cut out
                                       (said("ADVISORY"), "0.3.2", {"bar": "speedup > 3.3x", "outcome": "UNDECIDED"}),
                                       (said("PASS"), "0.3.2", bar)):  # an effect hidden
        (problem,) = rederive_ordering(timing, integrity, made_by, graded)
        assert "but the ordering intervals give" in problem
