"""The firing audit as a pure function of program facts (synthetic, no framework)."""

import pytest

from kgate.backends.base import Ablation, Arithmetic, KernelSite, ProgramFacts
from kgate.errors import KgateError
from kgate.gates.firing import EdgeAudit, FiringSpec, audit, normalize_hlo

LIVE = KernelSite("eqn0/eqn2", "my_kernel (k.py:3)", True, True)
GHOST = KernelSite("eqn0/eqn5", "my_kernel (k.py:3)", False, True)
FULL = Ablation(True, "", 64, 64)


def facts(sites=(LIVE,), ablation=FULL, platform="cpu", targets=(), compiled="", program="",
          arithmetic=Arithmetic(0.0, 1)):
    return ProgramFacts(platform, tuple(sites), program, compiled, tuple(targets), ablation, arithmetic=arithmetic)


def status(result, name):
    return [c.status for c in result.checks if c.name == name]


def _on_edges(*edges, spec=FiringSpec()):
    result = audit("kernel-authored", facts(), spec=spec, edges=edges)
    return status(result, "kernel_result_matters_on_edge"), " ".join(c.detail for c in result.checks)


def test_the_ablation_on_edges_drawn_after_grading_fails_where_an_edges_answer_comes_from_elsewhere():
    moved, repaired = EdgeAudit("edge-small-in0", Ablation(True, "", 64, 64)), EdgeAudit("edge-offset-in0", Ablation(True, "", 48, 64))
    assert _on_edges(moved)[0] == ["PASS"]
    states, text = _on_edges(moved, repaired)
    assert states == ["FAIL"] and "on edge-offset-in0 16 of 64 output elements (25.0%) do not depend" in text
    assert _on_edges(moved, repaired, spec=FiringSpec(kernel_share=0.75))[0] == ["PASS"]  # declared
    assert _on_edges(EdgeAudit("edge-small-in0", differs=True))[0] == ["FAIL"]  # not the graded run there
    assert _on_edges(EdgeAudit("edge-small-in0", error="the draw was changed on its way"))[0] == ["FAIL"]
    assert _on_edges(EdgeAudit("edge-slices-in0", reason="the reference is not finite there"))[0] == ["SKIPPED"]
    assert _on_edges()[0] == []  # nothing drawn (a JAX program: its arithmetic is counted on the program)
    saturated = EdgeAudit("edge-rows-in0", Ablation(True, "", 60, 60), left_out=4)
    states, text = _on_edges(saturated)
    assert states == ["PASS"] and "moves all 60 output elements" in text and "4 whose answer is zero" in text


def test_the_edge_ablation_counts_only_the_elements_whose_answer_is_not_zero_to_the_outputs_resolution():
    import numpy as np

    from kgate.backends.base import HostTree
    from kgate.gates.parity import ParitySpec, Probe
    from kgate.verify.early import _measurable

    def tree(a):
        return HostTree("tuple", ("out",), (a,))

    answer = np.array([[0.5, 0.0, 1e-40, 0.25]], np.float32)  # a probability driven to zero, and one underflowed
    probe = Probe(seed=1, inputs=tree(answer + 1), reference=tree(answer), oracle=tree(answer.astype(np.float64)),
                  oracle_kind="float64", candidate=tree(answer))
    moves = [np.array([[1.0, 0.0, 0.0, 0.0]])]  # the kernel's perturbation moves only the first
    measured, left_out = _measurable(ParitySpec("floor"), moves, probe, 1e-7)
    assert left_out == 2 and [m.tolist() for m in measured] == [[1.0, 0.0]]  # the last one still counts: unmoved


def test_live_kernel_passes_on_cpu_and_says_the_device_check_did_not_run():
    result = audit("kernel-authored", facts())
    assert result.status == "PASS"
    assert status(result, "compiled_custom_call") == ["SKIPPED"]


def test_no_kernel_fails():
    assert status(audit("kernel-authored", facts(sites=())), "kernel_present") == ["FAIL"]


def test_any_discarded_kernel_fails_even_beside_a_live_one():
    result = audit("kernel-authored", facts(sites=(LIVE, GHOST)))
    assert status(result, "kernel_reaches_output") == ["FAIL"]
    assert "eqn0/eqn5" in result.failures[0].detail


def test_ablation_that_moves_nothing_fails():
    result = audit("kernel-authored", facts(ablation=Ablation(True, "", 0, 64)))
    assert status(result, "kernel_result_matters") == ["FAIL"]


def test_partial_influence_fails_unless_the_share_is_declared_and_ablation_not_run_is_advisory():
    half = facts(ablation=Ablation(True, "", 32, 64))
    assert status(audit("kernel-authored", half), "kernel_result_matters") == ["FAIL"]
    assert status(audit("kernel-authored", half, spec=FiringSpec(kernel_share=0.5)), "kernel_result_matters") == ["PASS"]
    assert status(audit("kernel-authored", half, spec=FiringSpec(kernel_share=0.75)), "kernel_result_matters") == ["FAIL"]
    not_run = audit("kernel-authored", facts(ablation=Ablation(False, "a kernel sits inside `while`")))
    assert status(not_run, "kernel_result_matters") == ["ADVISORY"] and not_run.status == "PASS"


def test_a_kernel_whose_stand_in_still_passes_parity_is_decoration():
    assert status(audit("kernel-authored", facts(), bypass={"zeros": False, "passthrough": True}), "kernel_does_the_work") == ["FAIL"]
    assert status(audit("kernel-authored", facts(), bypass={"zeros": False, "passthrough": False}), "kernel_does_the_work") == ["PASS"]
    assert status(audit("kernel-authored", facts(), bypass="open sub-program"), "kernel_does_the_work") == ["ADVISORY"]


def test_a_host_callback_feeding_the_output_fails_every_class():
    host = KernelSite("eqn3", "pure_callback: _work", True, True)
    idle = KernelSite("eqn4", "io_callback: _log", False, True)
    for klass in ("kernel-authored", "xla-rewrite"):
        with_host = ProgramFacts("cpu", (LIVE,), "", "", (), FULL, (host,))
        assert status(audit(klass, with_host, reference_compiled="x"), "no_host_work") == ["FAIL"]
    only_idle = ProgramFacts("cpu", (LIVE,), "", "", (), FULL, (idle,))
    assert status(audit("kernel-authored", only_idle), "no_host_work") == ["ADVISORY"]


REFERENCE_WORK = Arithmetic(1000.0, 0)


def _arithmetic(outside, reference=REFERENCE_WORK, spec=FiringSpec(), unknown_loops=0):
    result = audit("kernel-authored", facts(arithmetic=Arithmetic(outside, 1, unknown_loops)), spec=spec,
                   reference_arithmetic=reference)
    (check,) = [c for c in result.checks if c.name == "kernel_does_the_arithmetic"]
    return check


def test_arithmetic_left_around_the_kernels_fails_from_half_the_reference_s():
    assert _arithmetic(0.0).status == "PASS"
    assert _arithmetic(270.0).status == "PASS"  # the most an honest bundled kernel leaves (cumsum's carries)
    assert _arithmetic(500.0).status == "FAIL"
    fail = _arithmetic(1000.0)
    assert fail.status == "FAIL" and "1.00x the reference's 1,000" in fail.detail and fail.fix
    # A declared share allows for the part computed elsewhere on purpose, and only that.
    assert _arithmetic(500.0, spec=FiringSpec(kernel_share=0.5)).status == "PASS"
    assert _arithmetic(800.0, spec=FiringSpec(kernel_share=0.5)).status == "FAIL"


def test_arithmetic_that_cannot_be_counted_or_bounded_fails_and_a_reference_without_any_is_not_compared():
    unknown = _arithmetic(10.0, unknown_loops=1)
    assert unknown.status == "FAIL" and "cannot be bounded" in unknown.detail
    missing = audit("kernel-authored", facts(arithmetic=None), reference_arithmetic=REFERENCE_WORK)
    assert status(missing, "kernel_does_the_arithmetic") == ["FAIL"] and missing.status == "FAIL"
    errored = audit("kernel-authored", facts(arithmetic=Arithmetic(0.0, 1, 0, "an unknown construct")),
                    reference_arithmetic=REFERENCE_WORK)
    assert status(errored, "kernel_does_the_arithmetic") == ["FAIL"]
    for reference in (None, Arithmetic(0.0, 0), Arithmetic(1000.0, 2), Arithmetic(0.0, 0, 0, "not traced")):
        check = _arithmetic(5000.0, reference=reference)
        assert check.status == "ADVISORY" and "not compared" in check.detail


def test_kernel_share_must_be_a_share():
    with pytest.raises(KgateError, match="not a share"):
        FiringSpec(kernel_share=1.5)


def test_tpu_requires_tpu_custom_call():
    assert audit("kernel-authored", facts(platform="tpu", targets=("tpu_custom_call",))).status == "PASS"
    assert status(audit("kernel-authored", facts(platform="tpu", targets=())), "compiled_custom_call") == ["FAIL"]


@pytest.mark.parametrize("target", ["triton", "__triton_gemm", "xla.gpu.triton_fusion", "cublas$gemm"])
def test_gpu_never_counts_the_bare_word_triton(target):
    result = audit("kernel-authored", facts(platform="gpu", targets=(target,)))
    assert status(result, "compiled_custom_call") == ["FAIL"]


@pytest.mark.parametrize("target", ["__gpu$xla.gpu.triton", "mosaic_gpu_v2"])
def test_gpu_kernel_targets_count(target):
    assert audit("kernel-authored", facts(platform="gpu", targets=(target,))).status == "PASS"


HLO_A = """HloModule jit_workload, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

FileNames
1 "/a/ref.py"

ENTRY %main.4 (x.1: f32[8]) -> f32[8] {
  %x.1 = f32[8]{0} parameter(0), metadata={op_name="x"}
  %constant.2 = f32[] constant(2)
  %broadcast.3 = f32[8]{0} broadcast(%constant.2), dimensions={}
  ROOT %multiply.4 = f32[8]{0} multiply(%x.1, %broadcast.3), metadata={op_name="jit(workload)/mul" stack_frame_id=2}
}
"""
HLO_B = HLO_A.replace("jit_workload", "jit_fast").replace("%x.1", "%arg.7").replace('"/a/ref.py"', '"/b/cand.py"')


def test_identical_programs_modulo_names_are_mechanism_absent():
    assert normalize_hlo(HLO_A) == normalize_hlo(HLO_B)
    result = audit("xla-rewrite", facts(sites=(), compiled=HLO_B), reference_compiled=HLO_A)
    assert status(result, "program_differs") == ["FAIL"]


def test_a_changed_constant_is_a_different_program():
    changed = HLO_B.replace("constant(2)", "constant(3)")
    assert audit("flag", facts(sites=(), compiled=changed), reference_compiled=HLO_A).status == "PASS"


def test_declarative_assertions():
    spec = FiringSpec(expect_hlo=(r"multiply\(",), forbid_hlo=(r"divide\(",), forbid_shapes=("f32[8,8]",), kernel_calls=1)
    assert audit("kernel-authored", facts(compiled=HLO_A), spec=spec).status == "PASS"
    bad = FiringSpec(expect_hlo=(r"dot\(",), forbid_hlo=(r"multiply",), forbid_shapes=("[8]",), kernel_calls=2)
    result = audit("kernel-authored", facts(compiled=HLO_A), spec=bad)
    assert {c.name for c in result.failures} == {"expect_hlo", "forbid_hlo", "forbid_shape", "kernel_calls"}


def test_forbidden_shape_matches_whole_dimensions_only():
    result = audit("kernel-authored", facts(compiled="f32[128,1280]{1,0}"), spec=FiringSpec(forbid_shapes=("f32[128,128]",)))
    assert result.status == "PASS"


def test_bad_assertions_are_rejected_up_front():
    with pytest.raises(KgateError, match="not a valid regular expression"):
        FiringSpec(expect_hlo=("custom-call(",))
    with pytest.raises(KgateError, match="not an HLO shape"):
        FiringSpec(forbid_shapes=("128 by 128",))
    with pytest.raises(KgateError, match="intervention class"):
        audit("kernel_authored", facts())


def test_untraceable_candidate_fails():
    result = audit("kernel-authored", None, trace_error="TypeError: bad block")
    assert result.status == "FAIL" and "TypeError: bad block" in result.failures[0].detail


def test_coverage_names_skipped_and_leaking_slices():
    import numpy as np

    from kgate.gates import coverage

    base = np.arange(12.0).reshape(4, 3)
    moved_row1 = base.copy()
    moved_row1[1] += 1
    assert coverage.slice_effect(base, moved_row1, 0, 1) == coverage.SliceProbe(1, 3, 0)
    assert coverage.slice_effect(base, base.copy(), 0, 2) == coverage.SliceProbe(2, 0, 0)
    leak = moved_row1.copy()
    leak[3, 0] += 1
    result = coverage.evaluate(
        [(coverage.parse_spec("0:0->0:0")[0], [coverage.slice_effect(base, base, 0, 2), coverage.slice_effect(base, leak, 0, 1)])]
    )
    details = result.details["maps"][0]
    assert details["skipped"] == [2] and details["leaking"] == [1] and result.status == "FAIL"
    assert coverage.probe_indices(5) == [0, 1, 2, 3, 4]
    for size in (17, 33, 100, 4096):  # the doc says exactly 16, with both ends and the middle
        picks = coverage.probe_indices(size)
        assert len(picks) == coverage.MAX_PROBES and {0, size - 1, size // 2} <= set(picks)


def test_a_share_just_under_the_arithmetic_limit_is_shown_finer_than_the_limit():
    from kgate.backends.base import Arithmetic
    from kgate.gates.firing import FiringSpec, _work_check

    reference = Arithmetic(outside=1000.0, kernel_calls=0, unknown_loops=0, error="", inside=None)
    near = _work_check(Arithmetic(outside=499.0, kernel_calls=1, unknown_loops=0, error="", inside=None), reference,
                       FiringSpec())
    assert near.status == "PASS" and "0.4990x the reference's" in near.detail  # never "0.50x ... (below 0.50x)"
    far = _work_check(Arithmetic(outside=270.0, kernel_calls=1, unknown_loops=0, error="", inside=None), reference,
                      FiringSpec())
    assert "0.27x the reference's" in far.detail
