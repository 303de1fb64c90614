"""The parity gate as a pure function of host arrays (no framework involved)."""

import json

import numpy as np
import pytest

from kgate.backends.base import HostTree
from kgate.errors import KgateError
from kgate.gates.parity import ParitySpec, Probe, compare_prefill, evaluate, floor_is_degenerate, leaf_errors
from kgate.jsonio import clean


def tree(*leaves):
    return HostTree("PyTreeDef(*)", tuple(f"out{i}" for i in range(len(leaves))), tuple(np.asarray(x) for x in leaves))


def probe(seed, ref, oracle, cand, inputs=None):
    rng = np.random.default_rng(seed)
    inputs = inputs if inputs is not None else rng.standard_normal((4, 8)).astype(np.float32)
    return Probe(seed, tree(inputs), tree(ref), tree(oracle), "float32", tree(cand) if cand is not None else None)


def synthetic(seed, floor_err, cand_err, n=64):
    rng = np.random.default_rng(seed)
    oracle = rng.standard_normal(n)
    ref = oracle + floor_err * rng.choice([-1.0, 1.0], n)
    cand = oracle + cand_err * rng.choice([-1.0, 1.0], n)
    return probe(seed, ref.astype(np.float32), oracle, cand.astype(np.float32))


def statuses(result):
    return {c.name: c.status for c in result.checks}


def test_candidate_within_multiplier_times_floor_passes():
    result = evaluate(ParitySpec("floor", 4), [synthetic(1, 1e-3, 3e-3), synthetic(2, 1e-3, 3e-3)])
    assert result.status == "PASS"


def test_candidate_beyond_multiplier_times_floor_fails_with_the_arithmetic():
    result = evaluate(ParitySpec("floor", 4), [synthetic(1, 1e-3, 5e-3), synthetic(2, 1e-3, 3e-3)])
    assert statuses(result)["seed1.error"] == "FAIL"
    assert statuses(result)["seed2.error"] == "PASS"
    detail = next(c.detail for c in result.checks if c.name == "seed1.error")
    assert "5x the floor 0.001" in detail and "vs 4x allowed" in detail


def test_mean_abs_is_gated_as_well_as_max_abs():
    rng = np.random.default_rng(0)
    oracle = rng.standard_normal(1000)
    ref = oracle.copy()
    ref[0] += 1e-2  # one large reference error: big max-abs floor, tiny mean-abs floor
    cand = oracle + 5e-3  # every element off: within max-abs limit, far beyond mean-abs
    result = evaluate(ParitySpec("floor", 4), [probe(1, ref, oracle, cand)])
    assert result.status == "FAIL"


def test_nonfinite_candidate_fails_even_when_errors_look_small():
    oracle = np.linspace(-1, 1, 32)
    cand = oracle.copy()
    cand[-1] = np.nan
    result = evaluate(ParitySpec("floor", 4), [probe(1, oracle + 1e-6, oracle, cand)])
    finite = next(c for c in result.checks if c.name == "seed1.finite")
    assert finite.status == "FAIL" and "[31]" in finite.detail


def test_nan_is_never_a_wildcard_under_tolerance_or_bitexact():
    ref = np.linspace(-1, 1, 8).astype(np.float32)
    cand = ref.copy()
    cand[3] = np.nan
    for spec in (ParitySpec.parse("atol=1,rtol=1"), ParitySpec.parse("bitexact")):
        assert evaluate(spec, [probe(1, ref, ref, cand)]).status == "FAIL"


def test_constant_reference_output_is_vacuous():
    zeros = np.zeros(16, np.float32)
    result = evaluate(ParitySpec("floor", 4), [probe(1, zeros, zeros, zeros)])
    assert statuses(result)["seed1.vacuous"] == "FAIL"


def test_an_answer_within_its_own_rounding_of_a_constant_is_vacuous_whatever_the_candidate():
    """Rounding noise around zero (a centred row's sum), or one value to within rounding (a
    softmax's row mass): a constant passes the grading, so the probe tells nothing; an honest
    candidate FAILs the probe as vacuous too (the problem is), and a varied answer never does."""
    rng = np.random.default_rng(5)
    noise = rng.standard_normal(64) * 1e-15  # the float64 answer of a sum that cancels
    ref = (noise + rng.standard_normal(64) * 1e-7).astype(np.float32)  # float32: its own rounding
    ones = 1.0 + rng.standard_normal(64) * 1e-16
    ref_ones = (ones + rng.standard_normal(64) * 6e-8).astype(np.float32)
    for oracle, reference, constant in ((noise, ref, np.zeros(64)), (ones, ref_ones, np.ones(64))):
        for cand in (reference, constant.astype(np.float32)):
            result = evaluate(ParitySpec("floor", 4), [probe(1, reference, oracle, cand)])
            assert statuses(result)["seed1.vacuous"] == "FAIL", result
    varied = synthetic(2, 1e-7, 1e-7)
    assert "seed2.vacuous" not in statuses(evaluate(ParitySpec("floor", 4), [varied]))
    tol = evaluate(ParitySpec.parse("atol=1e-5,rtol=0"), [probe(1, ref, noise, ref)])
    assert statuses(tol)["seed1.vacuous"] == "FAIL"


def test_constant_inputs_are_vacuous():
    out = np.linspace(0, 1, 16)
    result = evaluate(ParitySpec("floor", 4), [probe(1, out, out, out, inputs=np.ones((4, 4), np.float32))])
    assert statuses(result)["seed1.vacuous"] == "FAIL"


def test_reference_identical_across_seeds_is_vacuous():
    out = np.linspace(0, 1, 16)
    result = evaluate(ParitySpec("floor", 4), [probe(1, out, out, out), probe(2, out, out, out)])
    assert statuses(result)["reference_depends_on_inputs"] == "FAIL"


def test_identical_inputs_across_seeds_fail():
    x = np.random.default_rng(0).standard_normal((4, 4))
    out = np.linspace(0, 1, 16)
    result = evaluate(ParitySpec("floor", 4), [probe(1, out, out, out, inputs=x), probe(2, out + 1, out + 1, out + 1, inputs=x)])
    assert statuses(result)["seeds_differ"] == "FAIL"


def test_shape_and_dtype_mismatch_fail_structure():
    ref = (np.zeros((4, 4)) + np.arange(4)).astype(np.float32)
    assert evaluate(ParitySpec("floor"), [probe(1, ref, ref, ref.reshape(16))]).status == "FAIL"
    result = evaluate(ParitySpec("floor"), [probe(1, ref, ref, ref.astype(np.float64))])
    assert "dtype float64, reference float32" in result.failures[0].detail


def test_tolerance_spec_compares_to_the_reference():
    ref = np.linspace(1, 2, 10).astype(np.float32)
    ok = evaluate(ParitySpec.parse("atol=1e-3,rtol=0"), [probe(1, ref, ref * 0, ref + 5e-4)])
    bad = evaluate(ParitySpec.parse("atol=1e-3,rtol=0"), [probe(1, ref, ref * 0, ref + 5e-3)])
    assert ok.status == "PASS" and bad.status == "FAIL"


def test_bitexact_means_bit_identical():
    ref = np.linspace(1, 2, 10).astype(np.float32)
    assert evaluate(ParitySpec.parse("bitexact"), [probe(1, ref, ref, ref.copy())]).status == "PASS"
    assert evaluate(ParitySpec.parse("bitexact"), [probe(1, ref, ref, np.nextafter(ref, 3))]).status == "FAIL"


def test_degenerate_floor_falls_back_to_half_an_ulp_guard():
    ref = np.linspace(1, 2, 10).astype(np.float32)
    result = evaluate(ParitySpec("floor", 4), [probe(1, ref, ref.astype(np.float64), ref + 1e-3)])
    out = result.details["probes"][0]["outputs"][0]
    assert out["floor"]["source"] == "ulp-guard"
    assert result.status == "FAIL"  # 1e-3 >> 4 x half an f32 ulp at 2.0
    assert floor_is_degenerate(tree(ref), tree(ref.astype(np.float64)))


def test_guarded_max_rel_does_not_explode_near_zero():
    expected = np.array([0.0, 1e-12, 10.0])
    got = expected + np.array([1e-6, 1e-6, 1e-6])
    errs = leaf_errors(got, expected)
    assert errs.max_rel == pytest.approx(1e-6 / (1e-3 * 10.0))
    assert errs.worst_index in {(0,), (1,), (2,)}


def test_worst_element_index_is_reported():
    expected = np.zeros((3, 4)) + 1
    got = expected.copy()
    got[2, 1] = 5
    errs = leaf_errors(got, expected)
    assert errs.worst_index == (2, 1) and errs.got == 5 and errs.expected == 1


def test_prefill_comparison_finds_uninitialized_reads():
    a = tree(np.array([1.0, np.nan, 3.0]))
    assert compare_prefill(a, tree(np.array([1.0, np.nan, 3.0]))) == ""
    assert "depends on uninitialized memory" in compare_prefill(a, tree(np.array([1.0, 0.0, 3.0])))


@pytest.mark.parametrize("text", ["floor", "floor:2", "floor:x8", "atol=1e-3,rtol=1e-2", "rtol=0.01", "bitexact"])
def test_spec_grammar_accepts(text):
    assert ParitySpec.parse(text).describe()


@pytest.mark.parametrize("text", ["flor", "floor:0.5", "atol=abc", "atol=1e-3;rtol=1", "atol=0,rtol=0", "close enough"])
def test_spec_grammar_rejects_with_the_grammar(text):
    with pytest.raises(KgateError, match="floor"):
        ParitySpec.parse(text)


def test_a_gate_that_checked_nothing_fails():
    from kgate.gates.common import GateResult, skipped

    empty = GateResult("firing", ())
    assert empty.status == "FAIL" and empty.failures[0].detail == "the firing gate checked nothing"
    assert skipped("capture", "no profiler here").status == "SKIPPED"



def test_a_marginal_parity_fail_at_tiny_says_so_and_still_fails():
    from kgate.gates.common import Check, GateResult
    from kgate.gates.parity import ParitySpec
    from kgate.verify.early import _marginal

    spec = ParitySpec.parse("floor")

    def gate(ratio, name="seed42.error", *more):
        return GateResult("parity", tuple(Check(n, "FAIL", "x", "fix") for n in (name, *more)),
                          {"probes": [{"outputs": [{"max_abs_over_floor": ratio, "relative": {"ratio": ratio}}]}]})

    assert "marginal (worst 7.5x the floor, limit 5x)" in _marginal(spec, gate(7.5))
    # a float output's max-abs FAIL brings the relative grade's: still marginal
    assert "marginal (worst 7.5x the floor" in _marginal(spec, gate(7.5, "seed42.error", "seed42.relative_error"))
    assert _marginal(spec, gate(40.0)) == ""  # far off: not marginal
    assert _marginal(spec, gate(7.5, "seed42.finite")) == ""  # a NaN is never marginal


def test_seed_probes_at_one_shape_share_the_largest_floor():
    # One draw's reference can be far more exact than the algorithm is (seed to seed, 4 ulps on
    # the same row-softmax): an honest kernel is graded against the floor its seeds share.
    lucky = synthetic(1, 1e-4, 3e-4)  # this draw's floor is 1e-4; the candidate is 3x the other's
    typical = synthetic(2, 1e-3, 1e-3)
    alone = evaluate(ParitySpec("floor", 5), [lucky])
    assert statuses(alone)["seed1.error"] == "PASS"  # 3x its own floor
    off = synthetic(1, 1e-4, 4e-3)  # 40x its own floor, 4x the shared one
    assert statuses(evaluate(ParitySpec("floor", 5), [off]))["seed1.error"] == "FAIL"
    shared = evaluate(ParitySpec("floor", 5), [off, typical])
    assert shared.status == "PASS", shared.checks
    out = shared.details["probes"][0]["outputs"][0]
    assert out["floor"]["max_abs"] == pytest.approx(1e-4, rel=1e-3)  # its own floor is still recorded
    other = shared.details["probes"][1]["outputs"][0]["floor"]  # its floor, relative to its largest output
    assert out["floor"]["max_abs_used"] == pytest.approx(other["max_abs"] / other["scale"] * out["floor"]["scale"])
    assert out["floor"]["max_abs_used"] == pytest.approx(1e-3, rel=0.3)  # draws of one distribution: alike
    assert out["floor"]["shared_with"] == ["seed1", "seed2"]
    # beyond 5x the shared floor still FAILs
    worse = synthetic(1, 1e-4, 6e-3)
    assert statuses(evaluate(ParitySpec("floor", 5), [worse, typical]))["seed1.error"] == "FAIL"


def test_an_edge_probe_takes_the_seeds_floor_without_adding_to_it_and_other_shapes_keep_their_own():
    # The spikes edge is placed by a drawn seed: its own reference error is one more draw, and
    # fell to a fifth of the seeds' floor on the honest row-softmax once in ~60 draws.
    from dataclasses import replace

    from kgate.verify.receipt import rederive_parity

    typical = synthetic(2, 1e-3, 1e-3)
    edge = replace(synthetic(1, 1e-4, 4e-3), label="edge-spikes-in0")  # 40x its own floor, 4x the seed's
    result = evaluate(ParitySpec("floor", 5), [typical, edge])
    assert statuses(result)["edge-spikes-in0.error"] == "PASS", result.checks
    floor = result.details["probes"][1]["outputs"][0]["floor"]
    assert floor["shared_with"] == ["seed2", "edge-spikes-in0"] and floor["max_abs"] == pytest.approx(1e-4, rel=1e-3)
    assert rederive_parity(result.to_json()) == []
    assert "shared_with" not in result.details["probes"][0]["outputs"][0]["floor"]  # one seed: nothing to share
    worse = replace(synthetic(1, 1e-4, 6e-3), label="edge-spikes-in0")  # 6x the seed's floor
    assert statuses(evaluate(ParitySpec("floor", 5), [typical, worse]))["edge-spikes-in0.error"] == "FAIL"
    # an edge's extreme floor never loosens a seed's grading
    off = synthetic(1, 1e-4, 4e-3)
    wide = replace(synthetic(9, 5e-2, 1e-3), label="edge-big")
    assert statuses(evaluate(ParitySpec("floor", 5), [off, typical, wide]))["seed1.error"] == "PASS"  # 4x shared
    far = synthetic(1, 1e-4, 8e-3)  # 8x the seeds' floor, a sixth of the edge's
    assert statuses(evaluate(ParitySpec("floor", 5), [far, typical, wide]))["seed1.error"] == "FAIL"
    # without a seed probe at its shape, an edge keeps its own
    assert statuses(evaluate(ParitySpec("floor", 5), [edge, synthetic(3, 1e-3, 1e-3, n=32)]))["edge-spikes-in0.error"] == "FAIL"
    other_shape = synthetic(3, 1e-4, 4e-3, n=32)
    result = evaluate(ParitySpec("floor", 5), [typical, other_shape])
    assert statuses(result)["seed3.error"] == "FAIL"
    assert "shared_with" not in result.details["probes"][1]["outputs"][0]["floor"]


def test_a_receipt_cannot_claim_a_floor_its_probes_do_not_hold():
    import copy

    from kgate.verify.receipt import rederive_parity

    gate = evaluate(ParitySpec("floor", 5), [synthetic(1, 1e-4, 4e-3), synthetic(2, 1e-3, 1e-3)])
    recorded = gate.to_json()
    assert rederive_parity(recorded) == []
    inflated = copy.deepcopy(recorded)
    inflated["probes"][1]["outputs"][0]["floor"]["max_abs"] = 2e-3  # the sharer's own floor, raised after the fact
    assert any("not the largest of the floors" in p for p in rederive_parity(inflated))
    lone = copy.deepcopy(recorded)  # claims a sharing probe the receipt does not hold
    lone["probes"] = lone["probes"][:1]
    assert any("does not hold" in p for p in rederive_parity(lone))
    unshared = copy.deepcopy(recorded)  # a floor larger than its own, with no sharing named
    del unshared["probes"][0]["outputs"][0]["floor"]["shared_with"]
    assert any("not the largest of the floors" in p for p in rederive_parity(unshared))


def test_a_floor_that_is_only_the_outputs_rounding_is_not_shared():
    # A float32 computation written as bfloat16: the reference's error is one rounding, so its
    # floor is the output's resolution at that draw's largest value. A draw reaching 65 (a binade
    # up) must not double the unit of a draw that stays under 64.
    import ml_dtypes

    bf16 = np.dtype(ml_dtypes.bfloat16)

    def rounded(seed, top):
        rng = np.random.default_rng(seed)
        oracle = rng.uniform(-top, top, 256).astype(np.float32)
        oracle[0] = top
        return oracle, oracle.astype(bf16)

    low_oracle, low_ref = rounded(1, 63.3)
    high_oracle, high_ref = rounded(2, 65.3)
    cand = low_oracle.copy()
    cand[1] = low_oracle[1] + 0.7  # 5.6x the low draw's own floor (0.125), 2.8x the high one's
    low = Probe(1, tree(low_oracle), tree(low_ref), tree(low_oracle), "float32", tree(cand.astype(bf16)))
    high = Probe(2, tree(high_oracle), tree(high_ref), tree(high_oracle), "float32", tree(high_ref))
    result = evaluate(ParitySpec("floor", 5), [low, high])
    assert statuses(result)["seed1.error"] == "FAIL"
    floor = result.details["probes"][0]["outputs"][0]["floor"]
    assert floor["max_abs_used"] == floor["max_abs"] <= 0.125 and floor.get("shared_with") is None


def test_a_draw_with_larger_values_does_not_loosen_the_others():
    # Two float32 draws whose values differ 100x, both with a computed floor of ~2.5 ulp: the
    # shared floor is relative to each draw's largest value, so the small draw's unit stays small.
    def draw(seed, magnitude, cand_err):
        rng = np.random.default_rng(seed)
        oracle = rng.uniform(0.5, 1.0, 256) * magnitude
        ref = (oracle * (1 + 3e-7 * rng.choice([-1.0, 1.0], 256))).astype(np.float32)
        return Probe(seed, tree(oracle), tree(ref), tree(oracle), "float64",
                     tree((oracle + cand_err * magnitude).astype(np.float32)))

    small, large = draw(1, 1.0, 3e-5), draw(2, 100.0, 0.0)  # 100x the small draw's own floor
    assert statuses(evaluate(ParitySpec("floor", 5), [small, large]))["seed1.error"] == "FAIL"


def test_a_genuine_receipt_with_a_probe_the_candidate_raised_on_re_derives():
    from dataclasses import replace

    from kgate.verify.receipt import rederive_parity

    raised = replace(synthetic(1, 2e-3, 1e-3), candidate=None, candidate_error="ValueError: no")
    gate = evaluate(ParitySpec("floor", 5), [raised, synthetic(2, 1e-3, 1e-3), synthetic(3, 1e-3, 1e-3)])
    assert gate.status == "FAIL"  # the probe it raised on
    assert rederive_parity(gate.to_json()) == []  # and every recorded number still follows


def test_a_receipt_cannot_borrow_an_edge_probes_floor_or_invent_a_mean_unit():
    import copy
    from dataclasses import replace

    from kgate.verify.receipt import rederive_parity

    edge = replace(synthetic(9, 5e-2, 1e-3), label="edge-big")
    gate = evaluate(ParitySpec("floor", 5), [synthetic(1, 1e-4, 4e-3), synthetic(2, 1e-3, 1e-3), edge]).to_json()
    assert rederive_parity(gate) == []
    borrowed = copy.deepcopy(gate)
    borrowed["probes"][0]["outputs"][0]["floor"]["shared_with"].append("edge-big")
    assert any("not a seed probe" in p for p in rederive_parity(borrowed))
    assert gate["probes"][2]["outputs"][0]["floor"]["shared_with"] == ["seed1", "seed2", "edge-big"]
    raised = copy.deepcopy(gate)  # an edge that claims its own floor was smaller than it was
    raised["probes"][2]["outputs"][0]["floor"]["max_abs_used"] = 1e-3
    assert any("not the largest of the floors" in p for p in rederive_parity(raised))
    unlabelled = copy.deepcopy(borrowed)  # the edge passed off as a seed probe: its label dropped
    del unlabelled["probes"][2]["label"]
    assert any("neither by its label nor by its seed" in p for p in rederive_parity(unlabelled))
    other_oracle = copy.deepcopy(gate)  # an edge graded against another oracle than the seeds it names
    other_oracle["probes"][2]["against"] = "oracle-float64"
    assert any("not a seed probe of this output's shape, dtype and oracle" in p for p in rederive_parity(other_oracle))
    other = copy.deepcopy(gate)  # a probe of no kind kgate makes never shares
    other["probes"][2]["name"] = other["probes"][2]["label"] = "lucky-shape"
    other["probes"][2]["outputs"][0]["floor"]["shared_with"][-1] = "lucky-shape"
    assert any("neither a seed probe, an edge probe nor a probe at another shape" in p
               for p in rederive_parity(other))
    loose = copy.deepcopy(gate)
    loose["probes"][0]["outputs"][0]["floor"]["mean_abs_used"] = 1.0
    assert any("mean-abs unit used" in p for p in rederive_parity(loose))


def test_a_probe_at_another_shape_receives_the_seeds_floor_and_keeps_its_own_where_larger():
    from dataclasses import replace

    import copy

    from kgate.verify.receipt import rederive_parity

    def graded(own, err, label="drawn-shape1"):
        shaped = replace(synthetic(7, own, err, n=96), label=label)  # another shape, the same rank
        result = evaluate(ParitySpec("floor", 5), [synthetic(1, 1e-3, 1e-3), synthetic(2, 1e-3, 1e-3), shaped])
        gate = json.loads(json.dumps(clean(result.to_json())))
        assert rederive_parity(gate) == []  # a receipt of `parity` or verify holds these probes: each re-derives
        return statuses(result)[f"{label}.error"], result.details["probes"][2]["outputs"][0]["floor"], gate

    status, floor, gate = graded(1e-4, 3e-3)  # 30x its own floor (one lucky draw), 3x the seeds'
    assert status == "PASS" and floor["shared_with"] == ["seed1", "seed2", "drawn-shape1"]
    assert graded(1e-4, 6e-3, "odd-shape")[0] == "FAIL"  # 6x the seeds' floor
    assert graded(1e-2, 3e-2)[0] == "PASS" and graded(1e-2, 6e-2)[0] == "FAIL"  # its own, larger floor holds
    lowered = copy.deepcopy(gate)  # a receipt that claims the shape probe's floor was its own, smaller one
    lowered["probes"][2]["outputs"][0]["floor"]["max_abs_used"] = lowered["probes"][2]["outputs"][0]["floor"]["max_abs"]
    assert any("not the largest of the floors" in p for p in rederive_parity(lowered))
    ranked = copy.deepcopy(gate)  # the seeds it names at another rank
    ranked["probes"][0]["outputs"][0]["shape"] = [1, 256]
    assert any("of this output's rank, dtype and oracle" in p for p in rederive_parity(ranked))


def test_the_relative_grade_fails_an_absolute_error_on_small_values_and_the_receipt_re_derives_it():
    from kgate.verify.receipt import rederive_parity

    rng = np.random.default_rng(7)
    oracle = rng.standard_normal(256).astype(np.float32) * np.float32(4)
    ref = oracle * (1 + np.float32(2e-3) * rng.choice([-1.0, 1.0], 256).astype(np.float32))  # relative error
    honest = oracle * (1 + np.float32(3e-3) * rng.choice([-1.0, 1.0], 256).astype(np.float32))
    flushed = np.where(np.abs(oracle) < 0.1, np.float32(0), oracle)  # small values zeroed: an absolute error
    assert evaluate(ParitySpec("floor", 5), [probe(1, ref, oracle, honest)]).status == "PASS"
    result = evaluate(ParitySpec("floor", 5), [probe(1, ref, oracle, flushed)])
    assert statuses(result)["seed1.error"] == "PASS"  # under 5x the floor taken at the largest output
    assert statuses(result)["seed1.relative_error"] == "FAIL"
    gate = json.loads(json.dumps(clean(result.to_json())))
    assert rederive_parity(gate) == []
    gate["checks"] = [c for c in gate["checks"] if not c["name"].endswith("relative_error")]
    gate["status"] = "PASS"
    assert any("relative error" in p for p in rederive_parity(gate))
    out = json.loads(json.dumps(clean(result.to_json())))
    out["probes"][0]["outputs"][0]["relative"]["at"]["unit"] *= 100  # a looser unit than the scaled floor's
    assert any("allowance unit" in p for p in rederive_parity(out))


def test_a_candidate_as_far_off_as_the_reference_never_fails_the_relative_grade():
    # A layer norm on rows with a large common offset, one row constant: the oracle's outputs
    # there are exactly zero and the reference is off by its cancellation (what the offset edge
    # probe makes). The reference itself, as the candidate, is within every unit.
    for seed in range(10):
        rng = np.random.default_rng(seed)
        x = (np.float32(300) + rng.standard_normal((16, 256))).astype(np.float32)
        x[3] = np.float32(300 + rng.uniform())
        m = x.sum(-1, keepdims=True, dtype=np.float32) / np.float32(256)
        d = x - m
        ref = (d / np.sqrt((d * d).sum(-1, keepdims=True, dtype=np.float32) / np.float32(256) + np.float32(1e-5)))
        x64 = x.astype(np.float64)
        d64 = x64 - x64.mean(-1, keepdims=True)
        oracle = d64 / np.sqrt((d64 * d64).mean(-1, keepdims=True) + 1e-5)
        result = evaluate(ParitySpec("floor", 5), [probe(seed, ref.astype(np.float32), oracle, ref.astype(np.float32), inputs=x)])
        assert result.status == "PASS", result.checks
        assert result.details["probes"][0]["outputs"][0]["relative"]["ratio"] <= 1.0


def test_the_relative_grade_leaves_integer_and_complex_outputs_alone():
    counts = np.arange(64, dtype=np.int32)
    assert "relative" not in evaluate(ParitySpec("floor", 5), [probe(1, counts, counts + 1, counts)]).details["probes"][0]["outputs"][0]


def test_a_receipt_that_hides_a_relative_error_fail_is_caught():
    from kgate.verify.receipt import rederive_parity

    rng = np.random.default_rng(3)
    oracle = rng.standard_normal(256).astype(np.float32) * np.float32(4)
    ref = oracle * (1 + np.float32(2e-3) * rng.choice([-1.0, 1.0], 256).astype(np.float32))
    flushed = np.where(np.abs(oracle) < 0.1, np.float32(0), oracle)
    gate = json.loads(json.dumps(clean(evaluate(ParitySpec("floor", 5), [probe(1, ref, oracle, flushed)]).to_json())))
    assert rederive_parity(gate, "0.3.1") == []
    # the record and the FAIL deleted, the gate said PASS: a receipt of this kgate must carry it
    hidden = json.loads(json.dumps(gate))
    del hidden["probes"][0]["outputs"][0]["relative"]
    hidden["checks"] = [c for c in hidden["checks"] if not c["name"].endswith("relative_error")]
    hidden["status"] = "PASS"
    assert any("record is missing" in p for p in rederive_parity(hidden, "0.3.1"))
    assert any("record is missing" in p for p in rederive_parity(hidden, ""))  # the gate says it graded it
    # the worst element rewritten within its unit's bounds, the ratio with it
    shrunk = json.loads(json.dumps(gate))
    rel = shrunk["probes"][0]["outputs"][0]["relative"]
    rel["at"]["diff"], rel["ratio"] = 0.5 * rel["at"]["unit"], 0.5
    shrunk["checks"] = [c for c in shrunk["checks"] if not c["name"].endswith("relative_error")]
    shrunk["status"] = "PASS"
    assert rederive_parity(shrunk, "0.3.1") != []


def test_the_rounding_grade_counts_elements_off_a_narrow_outputs_rounding_against_the_references_own_share():
    import ml_dtypes
    import numpy as np

    from kgate.backends.base import HostTree
    from kgate.gates.parity import ROUNDING_SHARE, ParitySpec, Probe, evaluate, rounding_record

    bf16 = ml_dtypes.bfloat16
    answer = np.random.default_rng(0).normal(size=(16, 64))  # the oracle's (float64 here)
    once = answer.astype(bf16)  # computed wide, rounded once: what the reference and honest kernels write
    twice = (answer.astype(np.float32) * np.float32(1 + 2.0**-9)).astype(bf16).astype(np.float32).astype(bf16)

    def probe(reference, candidate):
        tree = lambda a: HostTree("tuple", ("out",), (a,))  # noqa: E731
        return Probe(seed=1, inputs=tree(-answer), reference=tree(reference), oracle=tree(answer),
                     oracle_kind="float64", candidate=tree(candidate))

    spec = ParitySpec("floor")
    honest = rounding_record(probe(once, once), 0, once, answer, spec.multiplier)
    assert honest == {"candidate": 0.0, "reference": 0.0, "reordered": None, "allowed": ROUNDING_SHARE, "elements": 1024}
    off = rounding_record(probe(once, twice), 0, twice, answer, spec.multiplier)
    assert off["candidate"] > 0.2  # an error of 2^-9 of each value, a fraction of an ulp, moves many roundings
    result = evaluate(spec, [probe(once, twice)])
    assert {c.name for c in result.checks if c.status == "FAIL"} == {"seed1.rounding"}
    # a reference that itself misses the rounding as often allows the candidate as much (5x its share)
    assert evaluate(spec, [probe(twice, twice)]).status == "PASS"
    # float32 outputs (whose honest computations differ in their last bits) and tiny outputs are not graded so
    wide = answer.astype(np.float32)
    assert rounding_record(probe(wide, wide), 0, wide, answer, spec.multiplier) is None
    few = once[:1, :50]
    assert rounding_record(probe(few, few), 0, few, answer[:1, :50], spec.multiplier) is None


def test_a_receipt_that_hides_a_rounding_fail_or_loosens_its_allowance_is_caught():
    import ml_dtypes

    from kgate.verify.receipt import rederive_parity

    bf16 = ml_dtypes.bfloat16
    oracle = np.random.default_rng(5).normal(size=(8, 64)).astype(np.float32)
    ref = oracle.astype(bf16)
    twice = (oracle * np.float32(1 + 2.0**-9)).astype(bf16)
    gate = json.loads(json.dumps(clean(evaluate(ParitySpec("floor", 5), [probe(1, ref, oracle, twice)]).to_json())))
    assert {c["name"] for c in gate["checks"] if c["status"] == "FAIL"} == {"seed1.rounding"}
    assert rederive_parity(gate, "0.3.3") == []
    hidden = json.loads(json.dumps(gate))  # the FAIL deleted, the gate said PASS
    hidden["checks"] = [c for c in hidden["checks"] if not c["name"].endswith("rounding")]
    hidden["status"] = "PASS"
    assert any("rounding grade's check" in p for p in rederive_parity(hidden, "0.3.3"))
    loosened = json.loads(json.dumps(hidden))  # ... and the allowance raised to cover it
    loosened["probes"][0]["outputs"][0]["rounding"]["allowed"] = 1.0
    assert any("allowed share" in p for p in rederive_parity(loosened, "0.3.3"))
    del loosened["probes"][0]["outputs"][0]["rounding"]  # ... or the record dropped
    assert any("rounding grade's record is missing" in p for p in rederive_parity(loosened, "0.3.3"))
    assert not any("rounding" in p for p in rederive_parity(loosened, "0.3.2"))  # a receipt from before the grade


def test_small_answers_returned_as_zero_fail_the_vanishing_grade_and_a_receipt_cannot_hide_it():
    from kgate.verify.receipt import rederive_parity

    rng = np.random.default_rng(11)
    e = np.exp(rng.normal(scale=6.0, size=(8, 64))).astype(np.float64)  # answers over many orders of magnitude
    oracle = e.astype(np.float32)
    flushed = np.where(e < np.quantile(e, 0.1), 0.0, e).astype(np.float32)  # the smallest tenth written as 0
    negated = oracle.copy()
    negated[0, :2] *= -1  # two elements of 512 with the other sign: under 1%, and not small, so the error grade sees them
    spec = ParitySpec("floor", 5)
    gate = json.loads(json.dumps(clean(evaluate(spec, [probe(1, oracle, oracle.astype(np.float64), flushed)]).to_json())))
    assert "seed1.vanished" in {c["name"] for c in gate["checks"] if c["status"] == "FAIL"}
    record = gate["probes"][0]["outputs"][0]["vanished"]
    assert record["lost"] == int((e < np.quantile(e, 0.1)).sum()) and record["resolved"] == e.size, record
    assert rederive_parity(gate, "0.3.4") == []
    honest = evaluate(spec, [probe(1, oracle, oracle.astype(np.float64), oracle)]).to_json()
    assert honest["probes"][0]["outputs"][0]["vanished"]["lost"] == 0
    few = evaluate(spec, [probe(1, oracle, oracle.astype(np.float64), negated)]).to_json()
    assert not any(c["name"].endswith("vanished") for c in few["checks"] if c["status"] == "FAIL")
    hidden = json.loads(json.dumps(gate))  # the FAIL deleted
    hidden["checks"] = [c for c in hidden["checks"] if not c["name"].endswith("vanished")]
    assert any("vanishing grade's check" in p for p in rederive_parity(hidden, "0.3.4"))
    del hidden["probes"][0]["outputs"][0]["vanished"]  # ... or the record dropped
    assert any("vanishing grade's record is missing" in p for p in rederive_parity(hidden, "0.3.4"))
    assert not any("vanishing" in p for p in rederive_parity(hidden, "0.3.3"))  # a receipt from before the grade


def test_magnitude_units_take_the_largest_reference_error_among_elements_up_to_twice_as_large():
    """The allowance of `relative_error`, checked against its definition element by element, with
    ties, exact zeros and an infinite magnitude, at sizes below and above the 64-element minimum."""
    from kgate.gates.parity import LIKE_MAGNITUDE_MIN, half_ulp, magnitude_units, scale

    rng = np.random.default_rng(3)
    for n in (5, 70, 400):
        e = np.round(rng.standard_normal(n), 1).astype(np.float32)  # rounded: many ties
        e[: n // 5] = 0.0
        e[-1] = np.inf
        r = (e + rng.standard_normal(n).astype(np.float32) * 1e-3).astype(np.float32)
        with np.errstate(invalid="ignore"):  # inf - inf: an element with no error to count
            got = magnitude_units(r, e, 0.05)
            own = np.abs(r.astype(np.float64) - e.astype(np.float64))
        mag = np.where(np.isfinite(np.abs(e.astype(np.float64))), np.abs(e.astype(np.float64)), np.inf)
        own = np.where(np.isfinite(own), own, 0.0)
        order = sorted(range(n), key=lambda i: mag[i])  # stable: ties by position
        zeros = int((mag == 0).sum())
        least = zeros + min(LIKE_MAGNITUDE_MIN, n - zeros) - 1
        size = scale(e)
        expected = []
        for i in range(n):
            reach = sum(1 for j in range(n) if mag[j] <= 2.0 * mag[i]) - 1
            like = max(own[order[k]] for k in range(max(reach, least) + 1))
            drawn = own.max()
            like = like * (0.05 / drawn) if 0 < drawn < 0.05 else like
            like = max(like, own[i])
            proportional = 0.05 * min(max(2.0 * mag[i] / size, 1 / 256), 1.0)
            expected.append(max(half_ulp(e, r.dtype)[i], proportional, like))
        np.testing.assert_allclose(got, np.array(expected), rtol=1e-12)
