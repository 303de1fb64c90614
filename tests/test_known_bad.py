"""Known-bad candidates FAIL, each in the gate and check that names its failure class.

Each bad candidate is a file under examples/ whose docstring says what it gets wrong.
"""

import pytest

from conftest import failed, gate, off_other_shapes, parity


def test_partial_work_grid_covering_half_the_rows_fails_parity():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_partial.py")
    assert report.status == "FAIL"
    assert {"parity.finite", "parity.error", "parity.uninitialized_memory", "firing.kernel_result_matters"} <= failed(report)
    share = [c for c in report.gates["firing"].checks if c.name == "kernel_result_matters"]
    assert "the kernels compute 50.0% of the output" in share[0].detail


@pytest.mark.full  # class 10 in the quick tier: the half-grid kernel
def test_stale_scratch_row_fails_parity():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_stale_scratch.py")
    assert "parity.error" in failed(report)


def test_ghost_pallas_call_fails_firing():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_ghost.py")
    assert report.gates["parity"].status == "PASS"  # the output is the reference's: only firing can tell
    assert {"firing.kernel_reaches_output", "firing.kernel_result_matters"} <= failed(report)


@pytest.mark.full
def test_kernel_multiplied_by_zero_is_a_ghost_despite_dataflow():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_masked_ghost.py")
    assert failed(report) == {"firing.kernel_result_matters", "firing.kernel_does_the_work",
                              "firing.kernel_does_the_arithmetic", "firing.kernel_carries_the_answer"}


@pytest.mark.full
def test_result_computed_once_and_replayed_fails_on_the_second_seed():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_replay.py")
    parity_fails = [c.name for c in report.gates["parity"].failures]
    assert "seed43.error" in parity_fails and "seed42.error" not in parity_fails


def test_lower_precision_accumulation_fails_floor_parity():
    report = gate("softmax/reference.py", "softmax/bad_low_precision.py")
    # (and on the offset edges, where bfloat16 keeps a few bits of x - max, most probabilities are off by
    # more than a factor of two: the vanishing grade; on the lowest edge its bfloat16 copy of float32's lowest
    # value is -inf, and a row masked whole with it is NaN: the finite check)
    assert {"parity.error", "parity.relative_error", "parity.vanished"} <= failed(report) <= {
        "parity.error", "parity.relative_error", "parity.vanished", "parity.finite"}
    probe = report.gates["parity"].details["probes"][0]["outputs"][0]
    assert probe["max_abs_over_floor"] > 100


@pytest.mark.parametrize("candidate", [
    pytest.param("bad_bf16_intermediates.py", marks=pytest.mark.full),  # squares, normalizes and weights in bfloat16
    pytest.param("bad_fast_inverse_sqrt.py", marks=pytest.mark.full),  # the 0x5f3759df rsqrt, one Newton step
])
def test_a_downgrade_hidden_below_a_bfloat16_outputs_resolution_fails_the_rounding_grade(candidate):
    report = gate("rmsnorm/reference.py", f"rmsnorm/{candidate}")
    assert failed(report) == {"parity.rounding"}  # every element within the floor's allowance
    rounding = [o["rounding"] for p in report.gates["parity"].details["probes"] for o in p["outputs"] if "rounding" in o]
    assert max(r["candidate"] for r in rounding) > 0.05 and max(r["reference"] for r in rounding) == 0.0


@pytest.mark.full
def test_nan_on_a_boundary_row_fails_finiteness():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_nan_boundary.py")
    finite = [c for c in report.gates["parity"].failures if c.name.endswith(".finite")]
    assert finite and "[0, 15, 0]" in finite[0].detail  # the last row of the TINY op-point


def test_all_zero_output_on_a_vacuous_problem_fails():
    report = gate("vacuous/reference.py", "vacuous/zeros.py")
    assert report.status == "FAIL"
    assert {"parity.vacuous", "parity.reference_depends_on_inputs"} <= failed(report)
    assert "non-degenerate probe" in report.next_step


@pytest.mark.parametrize("problem,candidate", [pytest.param("centred_sum_reference", "centred_sum_zeros",
                                                            marks=pytest.mark.full),
                                               pytest.param("softmax_mass_reference", "softmax_mass_ones",
                                                            marks=pytest.mark.full),
                                               ("layer_scale_reference", "layer_scale_identity")])
def test_a_constant_on_a_problem_whose_answer_is_rounding_of_a_constant_fails_as_vacuous(problem, candidate):
    """The answer varies from seed to seed, but by no more than the reference's own rounding: a
    constant passes parity there, or the input handed back (a residual update below bfloat16's
    rounding), so the probe is vacuous (before, each passed the gate)."""
    report = gate(f"vacuous/{problem}.py", f"vacuous/{candidate}.py", klass="xla-rewrite")
    assert report.status == "FAIL" and "parity.vacuous" in failed(report)
    assert "parity.reference_depends_on_inputs" not in failed(report)  # the seeds' answers differ
    assert "within parity's allowance of a constant" in " ".join(c.detail for c in report.gates["parity"].failures)


@pytest.mark.full
def test_candidate_whose_import_patches_the_reference_is_an_anomaly():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_patches_reference.py")
    assert report.status == "ANOMALY" and report.exit_code == 2
    detail = " ".join(c.detail for c in report.gates["integrity"].failures)
    assert "reference.workload was rebound" in detail
    assert "reference.CONFIG was mutated" in detail
    # The reference ran in a process that never imported the candidate: the loosened eps
    # changed only the candidate's own computation, and parity sees it.
    assert "parity.error" in failed(report)


def test_platform_fallback_to_library_softmax_fails_firing():
    report = gate("softmax/reference.py", "softmax/bad_fallback.py")
    assert failed(report) == {"firing.kernel_present"}


def test_rewrite_identical_to_what_xla_already_does_is_mechanism_absent():
    report = gate("softmax/reference.py", "softmax/bad_noop_rewrite.py", klass="xla-rewrite")
    assert failed(report) == {"firing.program_differs"}


@pytest.mark.parametrize("candidate", [
    *(pytest.param(c, marks=pytest.mark.full) for c in ("bad_reduce_precision_noop.py", "bad_identity_dressing.py",
                                                        "bad_branch_always_taken.py", "bad_loop_dressing.py",
                                                        "bad_scan_passthrough.py"))])
def test_a_rewrite_dressed_in_operations_that_compute_nothing_is_mechanism_absent(candidate):
    report = gate("softmax/reference.py", f"softmax/{candidate}", klass="xla-rewrite")
    assert {name for name in failed(report) if not name.startswith("parity.")} == {"firing.program_differs"}
    # the branch on "every logit is finite" returns zeros where a mask left -inf: wrong there, and only there
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert at == ({"edge-masked-in0"} if candidate == "bad_branch_always_taken.py" else set()), at
    detail = next(c.detail for c in report.gates["firing"].checks if c.name == "program_differs")
    assert "computed nothing on the probe" in detail and report.gates["firing"].details["identities_left_out"]


CLIPPED_SOFTMAX = (
    "import jax, jax.numpy as jnp\n"
    "CONFIG = {'rows': 16, 'cols': 128}\n"
    "def create_inputs(seed=0):\n"
    "    return (jax.random.t(jax.random.key(seed), 3.0, (CONFIG['rows'], CONFIG['cols'])) * 2.0,)\n"
    "def softmax(x):\n"
    "    x = jnp.clip(x, -1e30, 1e30)  # an overflow guard: the identity on any probe's values\n"
    "    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))\n"
    "    return e / jnp.sum(e, axis=-1, keepdims=True)\n"
    "def workload(x):\n"
    "    return softmax(x)\n"
)


@pytest.mark.full
def test_a_dressed_rewrite_is_compared_with_the_reference_s_own_no_ops_left_out_too(write_module):
    ref = write_module("reference.py", CLIPPED_SOFTMAX)
    dressed = write_module("dressed.py", "import jax\nimport reference\n"
                           "def workload(x):\n    return reference.softmax(jax.lax.optimization_barrier(x))\n")
    report = gate(str(ref), str(dressed), klass="xla-rewrite")
    assert failed(report) == {"firing.program_differs"}
    # dropping the reference's own guard, adding nothing, is a change to the program
    unguarded = write_module("unguarded.py", CLIPPED_SOFTMAX.replace("    x = jnp.clip(x, -1e30, 1e30)", "    pass"))
    assert gate(str(ref), str(unguarded), klass="xla-rewrite").status == "PASS"


@pytest.mark.full
def test_flash_attention_with_wrong_softmax_scale_fails_parity():
    report = gate("jax_ops/attention_reference.py", "jax_ops/flash_attention_bad_scale.py")
    assert "parity.error" in failed(report) and failed(report) <= {"parity.error", "parity.relative_error",
                                                                     "parity.vanished"}  # signs flipped, too


@pytest.mark.full
def test_lower_precision_slips_through_a_loose_fixed_tolerance_which_is_why_floor_is_default():
    loose = gate("softmax/reference.py", "softmax/bad_low_precision.py", parity_spec="atol=1e-2,rtol=0")
    failing = {c.name for c in loose.gates["parity"].failures}
    assert "seed42.error" not in failing and "seed43.error" not in failing  # the well-known seeds slip through
    assert "edge-offset-in0.error" in failing  # the offset edge (made from seed 42) does not
    assert gate("softmax/reference.py", "softmax/bad_low_precision.py").gates["parity"].status == "FAIL"


@pytest.mark.parametrize("candidate", [pytest.param("bad_flush_small.py", marks=pytest.mark.full),
                                       pytest.param("bad_quantized_output.py", marks=pytest.mark.full),
                                       "bad_fixed_grid_output.py"])
def test_an_absolute_error_on_small_outputs_fails_the_relative_grade_where_the_floor_at_the_largest_passes(candidate):
    report = gate("rmsnorm/reference.py", f"rmsnorm/{candidate}")
    checks = {c.name: c.status for c in report.gates["parity"].checks}
    seeds = [p["name"] for p in report.gates["parity"].details["probes"] if not p.get("label")]
    assert all(checks[f"{s}.error"] == "PASS" for s in seeds)  # within the floor taken at the largest output
    assert all(checks[f"{s}.relative_error"] == "FAIL" for s in seeds), checks
    # (the rounding grade sees them too: small outputs off their bfloat16 rounding; and the vanishing
    # grade, where the smallest come out zero)
    assert failed(report) <= {"parity.relative_error", "parity.error", "parity.rounding", "parity.vanished"}
    assert report.gates["firing"].status == "PASS"
    worst = report.gates["parity"].details["probes"][0]["outputs"][0]["relative"]
    assert worst["ratio"] > 5 and abs(worst["at"]["expected"]) < 0.25  # a small output, over the multiplier


# -- shapes that are not tile multiples, and kernels tuned to the shapes they were shown ----



@pytest.mark.parametrize("problem,candidate", [
    ("rmsnorm", "bad_floor_grid.py"),  # grid rows // block: the last partial block never written
    pytest.param("rmsnorm", "bad_lane_remainder.py", marks=pytest.mark.full),  # columns past the last whole lane tile left out of the mean square
    pytest.param("rmsnorm", "bad_tile_count_mean.py", marks=pytest.mark.full),  # the mean over the whole tiles' column count, not the row's length
    pytest.param("softmax", "bad_tile_columns.py", marks=pytest.mark.full),  # the columns past whole 128-lane tiles take a wrong path
    pytest.param("cumsum", "bad_shape_special_case.py", marks=pytest.mark.full),  # the kernel only at tuned shapes, a wrong shortcut elsewhere
])
def test_a_kernel_right_only_at_the_shapes_it_was_shown_fails_at_the_odd_shape(problem, candidate):
    report = gate(f"{problem}/reference.py", f"{problem}/{candidate}")
    assert report.status == "FAIL"
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert "odd-shape" in at and at <= {"odd-shape", "drawn-shape1", "drawn-shape2", "rows-at-a-shape"}  # TINY passed
    assert report.context["odd_op_point"] and report.gates["firing"].status == "PASS"


@pytest.mark.full
@pytest.mark.parametrize("problem,candidate", [
    ("softmax", "bad_tile_columns_rows_aligned.py"),  # wrong only where the rows are whole blocks and the columns not
    ("rmsnorm", "bad_short_remainder_raw.py"),  # wrong only where the remainder is under half a tile
    ("cumsum", "bad_kernel_at_power_of_two_lengths.py"),  # right at powers of two and at 3 x 2^a - 1 only
])
def test_a_kernel_right_at_the_fixed_odd_shape_and_wrong_elsewhere_fails_at_a_drawn_one(problem, candidate):
    # the run's drawn seed pinned to 7 (conftest), whose drawn shapes move the columns alone (softmax 291, cumsum
    # 291) or the embedding alone (rmsnorm 258, a remainder of 2): a run draws them afresh, unknown to the candidate
    report = gate(f"{problem}/reference.py", f"{problem}/{candidate}")
    assert report.status == "FAIL" and report.context["random_seed"] == 7
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert at and at <= {"drawn-shape1", "drawn-shape2", "rows-at-a-shape"}  # TINY, its edges and the odd shape passed
    assert len(report.context["drawn_op_points"]) == 2 and report.gates["firing"].status == "PASS"


@pytest.mark.parametrize("problem,candidate,op_point", [
    # it keeps the op-point's shape from its import and takes a wrong shortcut at any other
    ("softmax", "bad_right_only_at_its_op_point.py", {"rows": 32, "cols": 512}),
    pytest.param("rmsnorm", "bad_floor_grid.py", {"seq_len": 64}, marks=pytest.mark.full),  # 256 rows: whole blocks
    pytest.param("softmax", "bad_tile_columns.py", {"rows": 32, "cols": 512}, marks=pytest.mark.full),  # whole lane tiles
])
def test_a_kernel_right_at_the_op_point_it_is_checked_at_fails_at_the_shapes_moved_from_tiny(problem, candidate,
                                                                                              op_point):
    # `parity` (and verify's checks) grade the op-point; the odd and drawn shapes move from TINY (cheap), so a
    # kernel right at the op-point's shape alone is seen there, as the gate sees one right at TINY's alone
    report = parity(f"{problem}/reference.py", f"{problem}/{candidate}", overrides=op_point)
    assert report.status == "FAIL"
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert at and at <= {"odd-shape", "drawn-shape1", "drawn-shape2", "past-op-point", "rows-at-a-shape"}, at  # seeds, edges passed
    values = report.context["op_point"]["values"]
    assert all(values[k] == v for k, v in op_point.items())
    tiny = {"softmax": {"rows": 16, "cols": 256}, "rmsnorm": {"batch": 1, "seq_len": 16, "emb_dim": 256}}[problem]
    for shape in (report.context["odd_op_point"], *report.context["drawn_op_points"]):
        assert set(shape) == set(tiny) and all(shape[k] <= 4 * tiny[k] for k in tiny), shape  # moved from TINY
    assert len(report.context["drawn_op_points"]) == 2


@pytest.mark.parametrize("reference,candidate,op_point,status", [
    ("model_torch/softmax_reference.py", "model_torch/softmax_bad_wide_tail.py", {"batch_size": 16, "dim": 1024}, "FAIL"),
    pytest.param("softmax/reference.py", "softmax/bad_wide_tail.py", {"rows": 32, "cols": 2048}, "FAIL",
                 marks=pytest.mark.full),
    pytest.param("model_torch/softmax_reference.py", "model_torch/softmax_triton.py", {"batch_size": 16, "dim": 1024},
                 "PASS", marks=pytest.mark.full),
    pytest.param("softmax/reference.py", "softmax/pallas.py", {"rows": 32, "cols": 2048}, "PASS", marks=pytest.mark.full),
])
def test_a_tail_wrong_only_past_several_tiles_fails_at_a_shape_drawn_at_the_op_points_scale(reference, candidate,
                                                                                          op_point, status):
    # one tile at TINY, the odd shape and every shape drawn near TINY; whole tiles at the op-point: the drawn
    # shapes of a verified op-point reach its scale (the pinned draw: a width of 547 or 1059, a partial tile)
    report = parity(reference, candidate, overrides=op_point)
    assert report.status == status, report.failed_checks
    if status == "FAIL":
        at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
        assert at and at <= {"drawn-shape1", "drawn-shape2", "past-op-point", "rows-at-a-shape"}, at  # seeds, edges, odd passed
    wide = [s for s in report.context["drawn_op_points"] if max(s.values()) > max(op_point.values()) // 2]
    assert wide and all(max(s.values()) % 256 for s in wide), report.context["drawn_op_points"]


@pytest.mark.full
def test_a_kernel_may_refuse_the_shapes_parity_moves_from_tiny_at_the_op_point_it_supports():
    report = parity("softmax/reference.py", "softmax/refuses_odd_columns.py", overrides={"rows": 32, "cols": 512})
    assert report.status == "PASS" and report.exit_code == 1
    refused = next(c for c in report.gates["parity"].checks if c.name == "odd-shape.refused")
    assert refused.status == "ADVISORY" and "rows=23, cols=383" in refused.detail


@pytest.mark.full
def test_a_marginal_parity_fail_of_a_float_output_at_tiny_says_so(write_module):
    # a row softmax off by 1.6e-6 relative: a few times the floor at TINY (3.6x to 6.2x its max-abs, by the
    # draw; its mean-abs far over), and the note that the op-point may differ must be said
    cand = write_module("slightly_off.py", "import jax.numpy as jnp\n"
                        "def workload(x):\n    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))\n"
                        "    return e / jnp.sum(e, axis=-1, keepdims=True) * (1 + 1.6e-6)\n")
    report = gate("softmax/reference.py", str(cand), klass="xla-rewrite")
    assert report.status == "FAIL"
    names = {c.name.split(".", 1)[1] for c in report.gates["parity"].failures}
    assert "error" in names and names <= {"error", "relative_error"}, names
    assert any("the parity FAIL at TINY is marginal" in note for note in report.notes), report.notes


@pytest.mark.full
def test_a_kernel_may_refuse_an_odd_shape_it_does_not_support():
    report = gate("softmax/reference.py", "softmax/refuses_odd_columns.py")
    assert report.status == "PASS" and report.exit_code == 1
    refused = [c for c in report.gates["parity"].checks if c.name == "odd-shape.refused"]
    assert refused[0].status == "ADVISORY" and "rows=23, cols=383" in refused[0].detail


PAIRED_SIZES = (
    "import jax, jax.numpy as jnp\n"
    "CONFIG = {'heads': 4, 'dim': 16}\n"
    "TINY = {'heads': 2, 'dim': 8}\n"
    "def create_inputs(seed=0):\n"
    "    if CONFIG['dim'] % 2:\n"
    "        raise ValueError('dim must be even')\n"
    "    return (jax.random.normal(jax.random.key(seed), (CONFIG['heads'], CONFIG['dim'])),)\n"
    "def workload(x):\n"
    "    return jnp.tanh(x) * 2.0\n"
)


@pytest.mark.full
def test_the_odd_shape_bumps_only_what_the_reference_accepts(write_module):
    ref = write_module("reference.py", PAIRED_SIZES)
    cand = write_module("cand.py", "import jax.numpy as jnp\ndef workload(x):\n    return jnp.tanh(x) * 2.0\n")
    report = gate(str(ref), str(cand), klass="xla-rewrite")
    # every size taken to 3 * 2**a - 1 (dim 11), then plus one (dim 9): refused; heads alone is taken
    assert report.context["odd_op_point"] == {"heads": 5}
    assert any(c.name == "odd-shape.error" and c.status == "PASS" for c in report.gates["parity"].checks)
    none_odd = write_module("reference.py", PAIRED_SIZES.replace("CONFIG['dim'] % 2", "CONFIG['dim'] % 2 or CONFIG['heads'] % 2"))
    report = gate(str(none_odd), str(cand), klass="xla-rewrite")
    assert report.context["odd_op_point"] is None
    assert not [c for c in report.gates["parity"].checks if c.name.startswith("odd-shape")]


@pytest.mark.full
def test_a_candidate_with_its_own_config_copy_follows_the_odd_shape(write_module):
    ref = write_module("reference.py", PAIRED_SIZES)
    cand = write_module(
        "cand.py",
        "import jax.numpy as jnp\nCONFIG = {'heads': 4, 'dim': 16}\n"
        "def workload(x):\n    return (jnp.tanh(x.reshape(CONFIG['heads'] * CONFIG['dim'])) * 2.0).reshape(x.shape)\n",
    )
    report = gate(str(ref), str(cand), klass="xla-rewrite")
    odd = [c for c in report.gates["parity"].checks if c.name.startswith("odd-shape")]
    assert [(c.name, c.status) for c in odd] == [("odd-shape.error", "PASS")], odd


@pytest.mark.full
def test_a_kernel_that_computes_only_on_constants_fails_firing_though_its_result_matters():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_kernel_on_constants.py")
    assert report.status == "FAIL" and "firing.kernel_reads_inputs" in failed(report)
    assert next(c for c in report.gates["firing"].checks if c.name == "kernel_reaches_output").status == "PASS"


@pytest.mark.parametrize("problem,candidate,klass", [
    ("cumsum", "bad_blocks_past_op_point.py", "xla-rewrite"),  # blocks of twice the op-point's row, nothing carried
    pytest.param("rmsnorm", "bad_grid_capped_at_op_point.py", "kernel-authored",  # rows past the op-point's never written
                 marks=pytest.mark.full),
])
def test_a_kernel_right_up_to_the_op_points_sizes_and_wrong_past_them_fails_at_the_probe_past_it(problem, candidate,
                                                                                                 klass):
    # the gate and every shape up to the op-point's pass; `parity` (and verify's checks) at the bundled op-point
    # also probe one size drawn past it, up to 16 times (the pinned draw 7: cumsum's n 8237, rmsnorm's seq_len
    # 4141, each with the other sizes at TINY's to stay within twice the op-point's bytes)
    assert gate(f"{problem}/reference.py", f"{problem}/{candidate}", klass=klass).status == "PASS"
    report = parity(f"{problem}/reference.py", f"{problem}/{candidate}", klass=klass)
    assert report.status == "FAIL", report.failed_checks
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert at == {"past-op-point"}, at  # every seed, edge, the odd and the drawn shapes passed
    past, values = report.context["past_op_point"], report.context["op_point"]["values"]
    grown = [k for k in past if past[k] > values[k]]
    assert len(grown) == 1 and past[grown[0]] <= 16 * values[grown[0]], past


@pytest.mark.parametrize("problem,candidate,klass", [
    ("softmax/reference.py", "softmax/bad_running_max_from_minus_inf.py", "xla-rewrite"),
    pytest.param("model_torch/softmax_reference.py", "model_torch/softmax_bad_running_max_from_minus_inf.py", "xla-rewrite",
                 marks=pytest.mark.full),
])
def test_a_running_maximum_started_at_minus_infinity_fails_on_the_masked_edge_alone(problem, candidate, klass):
    # random rows never hold -inf; a mask's -inf over a whole leading block makes exp(-inf - -inf) a NaN there
    at = parity_failures(problem, candidate, klass)
    assert at == {"edge-masked-in0"}, at


def parity_failures(problem: str, candidate: str, klass: str) -> set[str]:
    """The probes a gate that FAILs fails parity on (the names before their grade)."""
    report = gate(problem, candidate, klass=klass)
    assert report.status == "FAIL"
    return {c.name.split(".")[0] for c in report.gates["parity"].failures}


@pytest.mark.parametrize("candidate,edge", [
    ("rmsnorm/bad_drops_outliers.py", "edge-rows-in0"),
    pytest.param("rmsnorm/bad_mean_square_over_nonzeros.py", "edge-rows-in0", marks=pytest.mark.full),
    pytest.param("rmsnorm/bad_centres_shifted_rows.py", "edge-rows-in0", marks=pytest.mark.full),
    pytest.param("softmax/bad_zeros_as_padding.py", "edge-rows-in0", marks=pytest.mark.full),
    pytest.param("rmsnorm/bad_rsqrt_table_past_16x.py", "edge-scales-in0", marks=pytest.mark.full),
    pytest.param("rmsnorm/bad_drops_massive_channels.py", "edge-columns-in0", marks=pytest.mark.full),
    pytest.param("softmax/bad_sorted_rows_summed_in_part.py", "edge-rows-in0", marks=pytest.mark.full),
])
def test_a_kernel_whose_arithmetic_follows_a_rows_statistics_fails_where_a_row_has_them(candidate, edge):
    # right on every row a random draw makes (a mean near zero, no zeros, no two outliers, a size near
    # one), wrong on rows moved off zero, partly zero, with several outliers, or 20 to 55 times as large
    problem = candidate.split("/")[0]
    report = gate(f"{problem}/reference.py", candidate)
    assert report.status == "FAIL"
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    # never a seed's (the odd and drawn shapes carry the edges' rows too)
    assert edge in at and off_other_shapes(at) <= {"edge-rows-in0", "edge-columns-in0", "edge-scales-in0"}, at
    assert report.gates["firing"].status == "PASS"  # the kernel does the work: it is wrong, not absent


@pytest.mark.parametrize("problem,candidate,klass", [
    ("rmsnorm/reference.py", "rmsnorm/bad_clamps_the_mean_square.py", "kernel-authored"),
    pytest.param("rmsnorm/reference.py", "rmsnorm/bad_saturates_the_output.py", "kernel-authored", marks=pytest.mark.full),
    pytest.param("softmax/reference.py", "softmax/bad_clamps_the_logits.py", "kernel-authored", marks=pytest.mark.full),
    pytest.param("model_torch/softmax_reference.py", "model_torch/softmax_bad_clamps_the_logits.py", "xla-rewrite",
                 marks=pytest.mark.full),
])
def test_a_guard_against_overflow_set_too_low_fails_on_the_large_edge_alone(problem, candidate, klass):
    # a clamp of a sum, of the logits, or of the output, far above anything a draw or the other
    # edges reach and far below where the dtype (and the reference) overflows
    at = parity_failures(problem, candidate, klass)
    assert at and {edge.rsplit("-", 1)[0] for edge in at} == {"edge-large"}, at


@pytest.mark.parametrize("candidate", [
    "softmax/bad_flushes_small_probabilities.py",
    pytest.param("softmax/bad_flushes_below_a_share_of_the_max.py", marks=pytest.mark.full),
    pytest.param("softmax/bad_floors_small_probabilities.py", marks=pytest.mark.full),  # 1e-30, not zero
])
def test_small_answers_flushed_to_zero_fail_the_vanishing_grade_on_every_seed(candidate):
    # each lost probability is far under the allowance scaled to its size; the share of resolved
    # elements returned as zero is not
    report = gate("softmax/reference.py", candidate)
    assert report.status == "FAIL"
    seeds = {c.name for c in report.gates["parity"].failures if c.name.startswith("seed")}
    assert seeds and all(name.endswith(".vanished") for name in seeds), seeds
    assert len(seeds) == len(report.context["seeds"])
    lost = report.gates["parity"].details["probes"][0]["outputs"][0]["vanished"]
    assert lost["lost"] > 0.01 * lost["resolved"], lost


@pytest.mark.parametrize("candidate", [
    "bad_kernel_returns_ones.py",
    pytest.param("bad_kernel_returns_ones_in_a_loop.py", marks=pytest.mark.full),  # in a fori_loop and a cond: stepped
])
def test_a_kernel_whose_result_is_the_same_for_every_input_fails_the_transplant(candidate):
    # the ablation, the stand-ins and the arithmetic count pass it: with the kernel's results from
    # another probe's run the output is still this probe's answer
    report = gate("cumsum/reference.py", f"cumsum/{candidate}")
    assert report.status == "FAIL"
    assert failed(report) == {"firing.kernel_carries_the_answer"}, failed(report)
    statuses = {c.name: c.status for c in report.gates["firing"].checks}
    assert statuses["kernel_result_matters"] == statuses["kernel_does_the_work"] == "PASS", statuses
    assert statuses["kernel_does_the_arithmetic"] == "PASS", statuses


@pytest.mark.parametrize("candidate", [
    "softmax/bad_replays_through_a_pytree_node.py",
    pytest.param("softmax/bad_namedtuple_built_from_a_cache.py", marks=pytest.mark.full),
])
def test_an_output_rebuilt_by_candidate_code_on_every_compiled_call_is_refused(candidate):
    # a pytree node's unflatten (or a namedtuple's constructor) runs in Python after the compiled
    # program, on every call: it could replay an answer while the program computes something else
    report = gate("softmax/reference.py", candidate, klass="xla-rewrite")
    assert report.status == "FAIL"
    ran = [c for c in report.gates["parity"].failures if c.name.endswith(".candidate_ran")]
    assert ran and all("pytree node of class" in c.detail for c in ran), report.gates["parity"].failures


@pytest.mark.full
def test_offsets_given_to_rows_of_counts_fail_where_the_rows_edge_makes_whole_numbers():
    # TINY has 4 rows for the rows edge's five structures (which four is drawn); at 16 rows every one is
    # met, whole numbers from 0 to 4 among them
    report = gate("cumsum/reference.py", "cumsum/bad_offsets_for_count_rows.py", overrides={"batch": 16})
    assert report.status == "FAIL"
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert off_other_shapes(at) == {"edge-rows-in0"}, at
