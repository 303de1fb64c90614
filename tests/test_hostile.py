"""Hostile candidates: each patches, forges or precomputes to fool the grader, and each
is caught because grading happens where candidate code never ran.

Every candidate is a file under examples/ whose docstring says what it tries.
"""

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, failed, gate, off_other_shapes, parity


def _integrity_text(report) -> str:
    return " ".join(c.detail for c in report.gates["integrity"].failures)


def test_patching_a_lax_op_on_the_first_call_fails_parity_and_is_an_anomaly():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_patches_rsqrt_on_first_call.py")
    assert report.status == "ANOMALY"
    assert "jax.lax.rsqrt was rebound (after the candidate ran on probe p0)" in _integrity_text(report)
    # The reference was computed in a process the patch never reached: parity sees the 5%.
    assert "parity.error" in failed(report)


@pytest.mark.full
def test_patching_jnp_exp_on_the_first_call_fails_parity_and_is_an_anomaly():
    report = parity("softmax/reference.py", "softmax/bad_patches_exp_on_first_call.py", overrides={"rows": 64, "cols": 512})
    assert report.status == "ANOMALY"
    assert "jax.numpy.exp was rebound" in _integrity_text(report)
    assert "parity.error" in failed(report)


@pytest.mark.full  # class 7 in the quick tier: a lax op patched, kgate's timed call wrapped
def test_rebinding_kgate_gates_at_import_changes_no_verdict():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_rebinds_kgate_parity.py")
    assert report.status == "ANOMALY"
    text = _integrity_text(report)
    assert "kgate.gates.parity.evaluate was rebound (at import)" in text
    assert "kgate.gates.firing.audit was rebound (at import)" in text
    assert "parity.error" in failed(report)  # graded in a process that never imported the candidate


@pytest.mark.full
@pytest.mark.parametrize("candidate,where", [
    ("bad_rewrites_kgate_in_place.py", "computes"),  # a comparison of the function's own
    ("bad_rewrites_kgate_nested_in_place.py", "passes"),  # one in the generator expression inside it
])
def test_bytecode_of_kgate_written_in_place_at_import_changes_no_verdict_and_is_an_anomaly(candidate, where):
    report = gate("rmsnorm/reference.py", f"rmsnorm/{candidate}", klass="xla-rewrite")
    assert report.status == "ANOMALY"
    assert f"kgate.gates.parity.{where} had its code changed in place" in _integrity_text(report)
    assert report.gates["parity"].status == "PASS"  # its values are right, graded where it never ran


HELD = "had what it holds replaced in place"


@pytest.mark.parametrize("candidate,where", [
    pytest.param("bad_swaps_jit_in_its_closure.py", "jax.jit", marks=pytest.mark.full),  # a closure cell, on the first call
    pytest.param("bad_reinits_a_property.py", "jaxlib._jax.ArrayImpl.dtype", marks=pytest.mark.full),  # at import
    pytest.param("bad_resets_a_partial.py", "jax._src.lax.lax._ones", marks=pytest.mark.full),  # __setstate__
])
def test_a_patch_inside_what_a_library_callable_holds_is_an_anomaly(candidate, where):
    # the callable stays the same object, with the same code and defaults: only what it holds changed
    report = gate("softmax/reference.py", f"softmax/{candidate}", klass="xla-rewrite")
    assert report.status == "ANOMALY"
    assert f"{where} {HELD}" in _integrity_text(report), _integrity_text(report)
    assert report.gates["parity"].status == "PASS"  # right answers: the patch alone is the anomaly


@pytest.mark.full
def test_exit_hook_cannot_erase_the_record_of_a_patch():
    report = gate("softmax/reference.py", "softmax/bad_forges_leg_result.py")
    assert report.status == "ANOMALY"
    assert "jax.numpy.exp was rebound (at import)" in _integrity_text(report)
    assert report.gates["parity"].status == "PASS"  # its numbers were right; the patch alone condemns it


# A patch covered up afterwards: the watch's record of it erased, kgate's channel written on or
# replaced. Each change is sealed on the channel to the parent as the watch records it.
@pytest.mark.parametrize("candidate,found", [
    ("bad_erases_the_watch_record.py", "change 0 ('kgate.gates.parity.passes was rebound (after the candidate ran on "
                                       "probe p0)') was sealed and is missing from the leg's report"),
    pytest.param("bad_forges_kgates_seals.py", "change 0 was sealed twice on the leg's beat channel",
                 marks=pytest.mark.full),
])
def test_a_patch_whose_record_is_erased_afterwards_is_still_an_anomaly(candidate, found):
    report = gate("rmsnorm/reference.py", f"rmsnorm/{candidate}")
    assert report.status == "ANOMALY"
    assert found in _integrity_text(report), _integrity_text(report)
    assert report.gates["parity"].status == "PASS"  # right answers: the cover-up alone condemns it


@pytest.mark.full
def test_a_candidate_that_replaces_kgates_channel_ends_its_leg_without_a_result():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_replaces_kgates_channel.py")
    assert report.status == "FAIL"
    ran = next(c for c in report.gates["parity"].checks if c.name == "candidate_ran")
    assert ran.status == "FAIL" and "beat channel is no longer the pipe kgate gave it" in ran.detail


def test_answers_precomputed_for_the_well_known_seeds_fail_on_the_random_seed():
    report = parity("rmsnorm/reference.py", "rmsnorm/bad_precomputed_seeds.py", overrides={"seq_len": 16})
    random_seed = report.context["random_seed"]
    errors = {c.name for c in report.gates["parity"].failures}
    assert f"seed{random_seed}.error" in errors
    assert "seed42.error" not in errors and "seed43.error" not in errors


@pytest.mark.full
@pytest.mark.fresh_draws
def test_every_run_draws_a_fresh_random_seed_and_records_it():
    first = parity("softmax/reference.py", "softmax/pallas.py", overrides={"rows": 8, "cols": 128})
    second = parity("softmax/reference.py", "softmax/pallas.py", overrides={"rows": 8, "cols": 128})
    assert first.status == second.status == "PASS"
    for report in (first, second):
        assert report.context["seeds"][:2] == [42, 43]
        assert report.context["seeds"][2] == report.context["random_seed"]
    assert first.context["random_seed"] != second.context["random_seed"]
    assert first.context["input_sha256"][str(first.context["random_seed"])] != second.context["input_sha256"][
        str(second.context["random_seed"])
    ]


def test_candidate_output_on_stdout_never_reaches_kgates_result(write_module):
    ref = write_module(
        "reference.py",
        "import jax, jax.numpy as jnp\ndef create_inputs(seed=0):\n"
        "    return (jax.random.normal(jax.random.key(seed), (4, 32)),)\ndef workload(x):\n    return jnp.tanh(x)\n",
    )
    cand = write_module(
        "cand.py",
        "import jax.numpy as jnp\nprint('{\"status\": \"PASS\"}')\ndef workload(x):\n"
        "    print('hello from the candidate')\n    return jnp.tanh(x)\n",
    )
    report = parity(str(ref), str(cand))
    assert report.status == "PASS"


# -- kernels that are present but do not do the work (firing) ---------------------------------


@pytest.mark.full
def test_kernel_that_only_copies_a_jnp_result_fails_the_bypass():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_kernel_copies_result.py")
    assert failed(report) == {"firing.kernel_does_the_work", "firing.kernel_does_the_arithmetic"}
    check = next(c for c in report.gates["firing"].checks if c.name == "kernel_does_the_work")
    assert "an operand passed through" in check.detail


@pytest.mark.full
def test_kernel_cancelled_by_stop_gradient_moves_nothing_beyond_the_allowance():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_cancels_kernel.py")
    # numerically the reference's answer on every seed; on edges whose weights are far smaller than the
    # kernel's (which leaves them out), k + (answer - k) in bfloat16 loses the answer: parity may see it there
    assert not [c.name for c in report.gates["parity"].failures if not c.name.startswith("edge-")]
    assert {"firing.kernel_result_matters", "firing.kernel_does_the_work"} <= failed(report)


@pytest.mark.full
def test_kernel_computing_half_the_rows_fails_unless_its_share_is_declared():
    from kgate.gates.firing import FiringSpec

    report = gate("rmsnorm/reference.py", "rmsnorm/bad_half_rows_in_kernel.py")
    assert failed(report) == {"firing.kernel_result_matters", "firing.kernel_does_the_arithmetic"}
    assert "the kernels compute 50.0% of the output" in report.gates["firing"].failures[0].detail
    declared = gate("rmsnorm/reference.py", "rmsnorm/bad_half_rows_in_kernel.py", firing_spec=FiringSpec(kernel_share=0.5))
    assert declared.status == "PASS"


@pytest.mark.full
def test_work_done_in_a_host_callback_fails_firing():
    report = gate("softmax/reference.py", "softmax/bad_host_callback_work.py")
    assert report.gates["parity"].status == "PASS"
    assert "firing.no_host_work" in failed(report)
    assert "pure_callback" in report.gates["firing"].failures[0].detail


@pytest.mark.full
def test_correct_kernels_do_the_work():
    for reference, candidate in [("rmsnorm/reference.py", "rmsnorm/pallas.py"), ("softmax/reference.py", "softmax/pallas.py")]:
        report = gate(reference, candidate)
        checks = {c.name: c.status for c in report.gates["firing"].checks}
        assert checks["kernel_does_the_work"] == checks["kernel_result_matters"] == checks["no_host_work"] == "PASS"
        assert checks["kernel_does_the_arithmetic"] == "PASS"


# -- timing: work that escapes the window, helpers that lie about time ------------------------


_RMSNORM = ("batch=1", "seq_len=16", "emb_dim=256")


def _measure(candidate, problem="rmsnorm", op_point=_RMSNORM):
    """`kgate measure --json` in its own process: a hostile candidate's threads and patches die with it."""
    import json
    import subprocess
    import sys

    from conftest import EXAMPLES

    folder = EXAMPLES / problem
    sets = [arg for value in op_point for arg in ("--set", value)]
    proc = subprocess.run(
        [sys.executable, "-m", "kgate", "measure", "-r", folder / "reference.py", "-c", folder / candidate, *sets,
         "--budget", "1.5", "--sessions", "2",
         "--time-interpreted", "--json"],  # these kernels are interpreted here: timed only when asked
        capture_output=True, text=True,
    )
    return json.loads(proc.stdout)


@pytest.mark.parametrize("candidate,how", [
    pytest.param("bad_os_exit_at_import.py", "exit code 0", marks=pytest.mark.full),  # os._exit(0): no exit hook
    ("bad_prints_a_pass_and_exits.py", "exit code 0"),  # a forged PASS document on stdout, then os._exit(0)
    pytest.param("bad_exits_zero_while_timed.py", "exit code 0", marks=pytest.mark.full),  # sys.exit(0) mid-run
    pytest.param("bad_kills_its_process.py", "killed by SIGKILL", marks=pytest.mark.full),  # from a host callback
])
def test_a_candidate_that_ends_the_timed_process_cannot_end_kgate_or_speak_for_it(candidate, how):
    """`kgate measure` runs the candidate in a process of its own: however that process ends,
    kgate itself reports it, FAIL with exit code 2, one JSON document on stdout and none of the
    candidate's."""
    import json
    import subprocess
    import sys

    from conftest import EXAMPLES

    folder = EXAMPLES / "rmsnorm"
    sets = [arg for value in _RMSNORM for arg in ("--set", value)]
    proc = subprocess.run(
        [sys.executable, "-m", "kgate", "measure", "-r", folder / "reference.py", "-c", folder / candidate, *sets,
         "--budget", "1.5", "--sessions", "2", "--json"], capture_output=True, text=True,
    )
    report = json.loads(proc.stdout)  # exactly one document: a forged one beside it would not parse
    assert proc.returncode == 2 and report["command"] == "measure" and report["status"] == "FAIL", proc.stdout
    measured = next(c for c in report["gates"]["timing"]["checks"] if c["name"] == "measured")
    assert measured["status"] == "FAIL" and f"the measure process did not finish: {how}" in measured["detail"]
    assert report["gates"]["integrity"]["status"] == "SKIPPED"  # nothing it reported is believed


@pytest.mark.full
def test_a_timed_call_that_never_returns_is_stopped_past_the_budget_and_a_phase_budget():
    """The timed rounds answer to --budget, not to the phase budget; a round that never ends is
    stopped once the whole run's budget and one phase budget more have passed, and said."""
    import time

    from conftest import EXAMPLES
    from kgate.verify.measure import MeasureRequest
    from kgate.verify.measured import run_measure_apart

    folder = EXAMPLES / "rmsnorm"
    began = time.monotonic()
    report = run_measure_apart(MeasureRequest(
        reference=folder / "reference.py", candidate=folder / "bad_hangs_while_timed.py", sessions=2, budget_s=2.0,
        overrides={"batch": 1, "seq_len": 16, "emb_dim": 256}, deadline=time.monotonic() + 2.0), phase_budget_s=8.0)
    assert time.monotonic() - began < 90
    measured = next(c for c in report.gates["timing"].checks if c.name == "measured")
    assert report.status == "FAIL" and "in the phase 'timing session" in measured.detail, measured.detail
    assert "a timed call that never returns" in measured.detail


def _check(report, name):
    return next(c for c in report["gates"]["integrity"]["checks"] if c["name"] == name)


def test_a_thread_started_below_threading_is_counted_by_the_os():
    report = _measure("bad_native_thread.py")
    assert report["status"] == "ANOMALY"
    check = _check(report, "os_threads_quiet")
    assert check["status"] == "FAIL" and "OS thread" in check["detail"]
    assert _check(report, "threads_quiet")["status"] == "PASS"


@pytest.mark.full
def test_wrapping_kgates_timed_call_is_seen_by_the_process_watch():
    report = _measure("bad_inflates_reference_time.py")
    assert report["status"] == "ANOMALY"
    assert "kgate.backends.jax_backend.TimedCall.__call__ was rebound (at import)" in _check(report, "process_untouched")["detail"]


@pytest.mark.full  # class 7 in the quick tier: a lax op patched, kgate's timed call wrapped
def test_the_timed_processs_own_check_rebound_still_leaves_the_sealed_change():
    report = _measure("bad_rebinds_the_timing_verdict.py")
    assert report["status"] == "ANOMALY"
    assert _check(report, "process_untouched")["status"] == "PASS"  # the rebound function's word
    check = _check(report, "measure.changes_reported")
    assert check["status"] == "FAIL" and "kgate.verify.measure._process_check was rebound" in check["detail"]


@pytest.mark.full
def test_bytecode_written_in_place_in_the_process_that_times_both_legs_is_an_anomaly():
    """`measure` holds the reference and the candidate in one process: the watch's end reads the
    bytecode the interpreter runs there too."""
    report = _measure("bad_rewrites_kgate_nested_in_place.py")
    assert report["status"] == "ANOMALY"
    assert "kgate.gates.parity.passes had its code changed in place" in _check(report, "process_untouched")["detail"]


@pytest.mark.full
@pytest.mark.parametrize("candidate", [
    "bad_slows_reference_compile.py",  # rebinds the compiler's function on its trace; it puts itself back
    "bad_slows_reference_compile_from_its_trace.py",  # a collector callback installs it inside the reference's trace
    "bad_slows_reference_compile_and_hides_it.py",  # and forges what the compiled program says it is
])
def test_a_compiler_patch_that_puts_itself_back_is_seen_in_the_reference_s_compiled_program(candidate):
    report = _measure(candidate, "softmax", ("rows=64", "cols=256"))
    assert report["status"] == "ANOMALY"
    assert _check(report, "reference_program_unchanged")["status"] == "PASS"  # the lowered program is untouched
    compiled = _check(report, "reference_compiled_unchanged")
    assert compiled["status"] == "FAIL" and "session(s) 1 " in compiled["detail"], compiled
    assert "compiled to something else" in compiled["detail"]


@pytest.mark.full
def test_an_honest_candidate_s_reference_compiles_to_the_program_compiled_before_its_import():
    report = _measure("xla_rewrite.py", "softmax", ("rows=64", "cols=256"))
    assert report["status"] == "PASS"
    for name in ("reference_program_unchanged", "reference_compiled_unchanged", "process_untouched"):
        assert _check(report, name)["status"] == "PASS", _check(report, name)
    sessions = re.search(r"in all (\d+) session", _check(report, "reference_compiled_unchanged")["detail"])
    assert sessions and int(sessions.group(1)) >= 2  # compiled again after the import, and still the same


def test_replayed_answers_disagree_on_timed_inputs_never_seen():
    report = _measure("bad_replay.py")
    agree = _check(report, "timed_outputs_agree")
    assert agree["status"] == "FAIL" and "disagrees with the reference" in agree["detail"]
    assert len(report["timed_seeds"]) >= 2 and report["timed_seeds"][0] == 42


@pytest.mark.full
def test_an_honest_candidate_agrees_on_every_timed_session():
    report = _measure("pallas.py")
    statuses = {name: _check(report, name)["status"] for name in ("timed_outputs_agree", "os_threads_quiet", "processes_quiet", "process_untouched")}
    assert set(statuses.values()) == {"PASS"}


def _verify_anomaly(tmp_path, candidate: str, *options: str) -> dict[str, dict]:
    """`kgate verify` of an rmsnorm candidate at a small op-point: an ANOMALY (exit 2) whose receipt
    `verify-receipt` calls ANOMALY too; the integrity checks by name."""
    import json
    import subprocess
    import sys

    from conftest import EXAMPLES

    receipt = tmp_path / "receipt.json"
    rms = EXAMPLES / "rmsnorm"
    proc = subprocess.run(
        [sys.executable, "-m", "kgate", "verify", "-r", rms / "reference.py", "-c", rms / candidate, *options,
         "--budget", "1", "--sessions", "2", "--lock-dir", tmp_path, "--receipt", receipt, "--json"],
        capture_output=True, text=True,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 2 and report["status"] == "ANOMALY", proc.stderr[-2000:]
    again = subprocess.run([sys.executable, "-m", "kgate", "verify-receipt", receipt, "--json", "--no-regenerate"],
                           capture_output=True, text=True)
    assert again.returncode == 2 and json.loads(again.stdout)["status"] == "ANOMALY"
    return {"": report, **{c["name"]: c for c in report["gates"]["integrity"]["checks"]}}


@pytest.mark.full
def test_verify_bounds_reported_time_by_its_own_clock_and_the_receipt_is_an_anomaly(tmp_path):
    checks = _verify_anomaly(tmp_path, "bad_inflates_reference_time.py", "--set", "batch=1", "--set", "seq_len=16",
                             "--set", "emb_dim=256", "--time-interpreted")
    assert checks["measure.parent_clock"]["status"] == "FAIL"
    assert "more time than passed on the parent's clock" in checks["measure.parent_clock"]["detail"]
    assert checks["measure.process_untouched"]["status"] == "FAIL"


@pytest.mark.full
def test_a_timed_report_rewritten_over_a_sealed_change_is_an_anomaly(tmp_path):
    # the timed process's own report says untouched (its check function rebound at import); the
    # watch sealed the rebinding on the channel to the parent as it found it
    checks = _verify_anomaly(tmp_path, "bad_rebinds_the_timing_verdict.py", "--class", "xla-rewrite", "--set", "batch=1",
                             "--set", "seq_len=16", "--set", "emb_dim=256")
    assert checks["measure.process_untouched"]["status"] == "PASS"  # what the rewritten report says
    assert checks["measure.changes_reported"]["status"] == "FAIL"
    assert "kgate.verify.measure._process_check was rebound (at import)" in checks["measure.changes_reported"]["detail"]


@pytest.mark.full
def test_verify_holds_the_timed_answer_against_the_checked_one(tmp_path):
    # Right in the checks' process, a cheaper wrong program in the timing one (it reads its command
    # line): every timed session agrees with the first, so only the comparison across processes sees it.
    checks = _verify_anomaly(tmp_path, "bad_wrong_only_when_timed.py", "--class", "xla-rewrite", "--set", "batch=1",
                             "--set", "seq_len=64")
    assert checks["measure.same_answer_as_checked"]["status"] == "FAIL"
    assert checks["measure.timed_outputs_agree"]["status"] == "PASS"  # consistent with itself while timed
    assert checks[""]["gates"]["parity"]["status"] == "PASS"  # and right while checked


@pytest.mark.parametrize("candidate", [
    "bad_other_program_where_measure_is_loaded.py",
    pytest.param("bad_other_program_in_the_timing_process.py", marks=pytest.mark.full),
])
def test_verify_holds_the_timed_program_to_the_checked_one(tmp_path, candidate):
    # Each tells the timing process from a checking one (what is loaded, its command line) and traces
    # another program there: the reference's own (the same answers everywhere), or one in bfloat16.
    checks = _verify_anomaly(tmp_path, candidate, "--class", "xla-rewrite", "--set", "batch=1", "--set", "seq_len=16")
    assert checks["measure.program_as_checked"]["status"] == "FAIL", checks["measure.program_as_checked"]
    assert "told the processes apart" in checks["measure.program_as_checked"]["detail"]
    assert checks[""]["gates"]["parity"]["status"] == "PASS"  # right while checked
    if "measure_is_loaded" in candidate:  # the reference's program: only the program tells
        assert checks["measure.same_answer_as_checked"]["status"] == "PASS"
        assert checks["measure.timed_outputs_agree"]["status"] == "PASS"


# -- edge values random probes never hit -------------------------------------------------------


def _edge_failures(report):
    return {c.name for c in report.gates["parity"].failures}


@pytest.mark.full
def test_a_kernel_without_epsilon_fails_on_the_zero_slice_only():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_drops_eps.py")
    fails = _edge_failures(report)
    assert "edge-slices-in0.finite" in fails
    assert not any(name.startswith("seed") for name in fails)  # random rows are never all zero


@pytest.mark.full
def test_float16_squares_overflow_on_the_extreme_slice():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_float16_squares.py")
    assert "edge-slices-in0.error" in _edge_failures(report)
    # on the seeds its errors stay within the floor: only the rounding grade sees the narrower squares there
    assert not _graded_off(report, "seed")


def _graded_off(report, prefix):
    """The probes starting with `prefix` whose error checks (max-abs, mean-abs, relative) failed."""
    return {n for n in _edge_failures(report) if n.startswith(prefix) and n.endswith((".error", ".relative_error"))}


@pytest.mark.full
def test_dividing_by_the_row_range_fails_on_the_constant_slice():
    report = gate("softmax/reference.py", "softmax/bad_divides_by_range.py")
    assert "edge-offset-in0.finite" in _edge_failures(report)
    assert not any(name.startswith("seed") for name in _edge_failures(report))


@pytest.mark.full
def test_softmax_without_max_subtraction_fails_on_the_offset():
    report = gate("softmax/reference.py", "softmax/bad_no_max_subtraction.py")
    assert "edge-offset-in0.finite" in _edge_failures(report)


@pytest.mark.full
@pytest.mark.parametrize("candidate", [
    "bad_range_tuned_rsqrt.py",  # a polynomial rsqrt for mean squares in (0.25, 4), exact outside
    "bad_eps_too_large.py",  # an epsilon a thousand times the reference's: felt only by small rows
])
def test_what_is_right_only_in_the_range_random_draws_have_fails_on_rows_scaled_for_the_run(candidate):
    report = gate("rmsnorm/reference.py", f"rmsnorm/{candidate}")
    found = _edge_failures(report)  # the scales edge (and for a large epsilon the small edge too) on their errors;
    assert "edge-scales-in0.error" in found, found  # the rounding grade may see it on every probe
    assert off_other_shapes(_graded_off(report, "")) <= {  # rows moved off zero too; the shapes carry such rows
        f"edge-{kind}-in0.{check}" for kind in ("scales", "small", "rows") for check in ("error", "relative_error")}, found


@pytest.mark.parametrize("candidate", [
    pytest.param("bad_eps_ten_times.py", marks=pytest.mark.full),  # an epsilon ten times the reference's: felt
    # only by rows far smaller than any draw (the small edge's rows are checked in the quick tier, without a gate)
    pytest.param("bad_zero_below_threshold.py",  # zeros for rows whose mean square is below 1e-8, a threshold
                 marks=pytest.mark.full),  # the reference lacks
])
def test_what_is_wrong_only_on_rows_far_smaller_than_any_draw_fails_on_the_small_edge(candidate):
    report = gate("rmsnorm/reference.py", f"rmsnorm/{candidate}")
    found = _edge_failures(report)
    assert "edge-small-in0.error" in found, found  # its errors there and nowhere else (the rounding grade aside)
    assert off_other_shapes(_graded_off(report, "")) <= {"edge-small-in0.error", "edge-small-in0.relative_error"}, found


def test_the_rows_of_the_small_edge_span_tiny_powers_of_two_and_keep_clear_of_the_dtypes_smallest_normal():
    import numpy as np

    from kgate.backends.base import edge_values

    x = np.random.default_rng(0).normal(size=(18, 64)).astype(np.float32)
    small = dict(edge_values(x, 3.4e38, 7, float(np.finfo(np.float32).tiny)))["small"]
    exponents = np.log2(small[:, 0] / x[:, 0])
    assert np.all((exponents >= -24) & (exponents < -6))
    assert sorted(np.floor(exponents + 24).astype(int)) == list(range(18))  # one row in every band
    assert not np.array_equal(small, dict(edge_values(x, 3.4e38, 8, float(np.finfo(np.float32).tiny)))["small"])
    # float16's smallest normal is 6.1e-5: rows 2**-6 smaller than values of ~0.7 would come within 2**10 of it
    assert "small" not in dict(edge_values(x, 65504.0, 7, float(np.finfo(np.float16).tiny)))
    assert "small" not in dict(edge_values(x, 3.4e38, None))  # drawn from the run's seed, as the scales edge


def test_the_rows_of_the_scales_edge_span_the_drawn_powers_of_two_and_differ_from_run_to_run():
    import numpy as np

    from kgate.backends.base import edge_values

    x = np.random.default_rng(0).normal(size=(16, 64)).astype(np.float32)
    first, second = (dict(edge_values(x, 3.4e38, seed))["scales"] for seed in (7, 8))
    exponents = np.log2(first[:, 0] / x[:, 0])
    assert np.all((exponents >= -4) & (exponents < 6))  # 1/16 to 64: the extreme slice's magnitude at most
    assert sorted(np.floor((exponents + 4) / (10 / 16)).astype(int)) == list(range(16))  # one row in every band
    assert not np.allclose(first, second)
    tiny = dict(edge_values(np.full(4, 100.0, np.float32), 65504.0, 7))["scales"]  # float16: no factor past the extreme's
    assert tiny.max() <= 4 * np.sqrt(65504.0) * (1 + 1e-6)  # the extreme slice's magnitude


def test_the_rows_edge_deals_every_row_one_structure_a_draw_never_has():
    import numpy as np

    from kgate.backends.base import OUTLIER_FACTORS, edge_values

    x = np.random.default_rng(1).normal(size=(30, 256)).astype(np.float32)
    rows = dict(edge_values(x, 3.4e38, 7))["rows"]
    size = np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1))
    moved = np.abs(rows.mean(axis=1) - x.mean(axis=1)) / size
    shifted = np.all(np.isclose(rows - x, (rows - x)[:, :1], rtol=1e-3, atol=1e-4), axis=1) & (moved > 0)
    sparse = np.all((rows == x) | (rows == 0), axis=1) & np.any(rows == 0, axis=1)
    stands_out = np.sum(np.abs(rows) >= OUTLIER_FACTORS[0] * size[:, None] * (1 - 1e-6), axis=1)
    outliers = (stands_out >= 2) & (np.sum(rows != x, axis=1) == stands_out)
    ordered = np.array([np.array_equal(r, np.sort(o)) or np.array_equal(r, np.sort(o)[::-1]) for r, o in zip(rows, x)])
    levels = np.all((rows == np.round(rows)) & (rows >= 0) & (rows <= 4), axis=1) & np.any(rows == 0, axis=1)
    found = np.stack([shifted, sparse, outliers, ordered, levels]).astype(int)
    assert np.all(found.sum(axis=0) == 1), found  # one structure each
    assert list(found.sum(axis=1)) == [6] * 5  # dealt evenly
    assert np.all((moved[shifted] >= 2.0 ** -3 * 0.99) & (moved[shifted] <= 2.0 ** 3 * 1.01))
    assert np.all(np.sum(rows[sparse] == 0, axis=1) <= 255)  # never a whole row: the slices edge has that
    assert np.all(stands_out[outliers] <= 256 // 4)
    assert not np.array_equal(rows, dict(edge_values(x, 3.4e38, 8))["rows"])  # placed by the run's drawn seed
    columns = dict(edge_values(x, 3.4e38, 7))["columns"]  # the same few columns stand out in every row
    standing = np.abs(columns) >= 6 * size[:, None]
    assert 2 <= standing[0].sum() <= 8 and np.all(standing == standing[0]), standing.sum(axis=1)
    assert np.array_equal(columns[:, ~standing[0]], x[:, ~standing[0]])


def test_the_lowest_edge_fills_spans_and_a_quarter_of_the_rows_whole_far_below_every_sentinel():
    import numpy as np

    from kgate.backends.base import edge_kinds, edge_values, lowest_fill

    f32 = float(np.finfo(np.float32).max)
    x = np.random.default_rng(2).normal(size=(20, 64)).astype(np.float32)
    edges = dict(edge_values(x, f32, 7))
    lowest, masked = edges["lowest"], edges["masked"]
    filled = lowest == np.float32(lowest_fill(f32))
    assert np.all((lowest == x) | filled) and np.all(np.isfinite(lowest))
    assert filled.all(axis=1).sum() == 5  # a quarter of the rows whole: a finite mask leaves the reference finite
    assert np.all(filled.any(axis=1))  # and a span of every other row, as the -inf mask
    assert not np.isinf(masked).all(axis=1).any()  # -inf never fills a row: the reference would be NaN there
    assert not np.array_equal(lowest, dict(edge_values(x, f32, 8))["lowest"])
    # below the sentinels kernels write for -inf, and 2**16 of them summed stay finite (value inputs, not masks)
    for dtype_max, sentinel in ((f32, -1e30), (3.3895314e38, -1e30), (65504.0, -1e4)):  # float32, bfloat16, float16
        assert lowest_fill(dtype_max) < sentinel
    assert np.isfinite(np.float32(lowest_fill(f32)) * np.float32(2**16))
    assert lowest_fill(float(np.finfo(np.float64).max)) == lowest_fill(f32)  # the edges are float32 values
    assert edge_kinds(1) is None and "lowest" not in edge_kinds(3) and "masked" in edge_kinds(3)  # one input alone
    one_row = [dict(edge_values(x[:1], f32, seed))["lowest"] for seed in range(16)]
    whole = [bool((r == np.float32(lowest_fill(f32))).all()) for r in one_row]
    assert any(whole) and not all(whole)  # one row: filled whole in a drawn share of runs


def test_the_probes_at_other_shapes_carry_the_row_wise_edges_in_three_rows_of_four():
    import numpy as np

    from kgate.backends.base import mixed_rows

    x = np.random.default_rng(3).normal(size=(3, 40, 383)).astype(np.float32)  # rows along the last axis
    mixed = mixed_rows(x, float(np.finfo(np.float32).max), 11)
    rows, before = mixed.reshape(-1, 383), x.reshape(-1, 383)
    changed = (rows != before).any(axis=1)
    assert changed.sum() == 120 - 120 // 4  # three in four: the rest as the reference drew them
    size = np.sqrt(np.mean(before.astype(np.float64) ** 2, axis=1))
    ratio = np.abs(rows) / size[:, None]
    assert (ratio.max(axis=1)[changed] > 6).sum() >= 20  # spikes, outliers, columns standing out, scaled up
    assert (ratio.max(axis=1)[changed] < 2.0 ** -5).sum() >= 5  # rows scaled far down (the small edge)
    assert np.sum(np.all(rows == np.round(rows), axis=1) & changed) >= 5  # whole numbers (a structure of its own)
    assert np.all(np.isfinite(mixed))
    again = mixed_rows(x, float(np.finfo(np.float32).max), 12)
    assert not np.array_equal(again, mixed)  # placed by the run's drawn seed
    weights = np.ones(383, np.float32)
    assert np.array_equal(mixed_rows(weights, float(np.finfo(np.float32).max), 11), weights)  # no rows to deal


def test_the_edges_rows_at_a_shape_are_a_probe_of_their_own_and_a_reference_they_overflow_loses_it_alone(write_module):
    # float16 exp: a spike 64 times the largest value overflows it; the odd and drawn shapes stay graded
    source = ("import jax, jax.numpy as jnp\nCONFIG = {'rows': 16, 'cols': 64}\nTINY = dict(CONFIG)\n"
              "def create_inputs(seed=0, dtype=jnp.float16):\n"
              "    return (jax.random.normal(jax.random.key(seed), (CONFIG['rows'], CONFIG['cols'])).astype(dtype),)\n"
              "def workload(x):\n    return jnp.exp(x)\n")
    ref = write_module("reference.py", source)
    cand = write_module("cand.py", "import reference\ndef workload(x):\n    return reference.jnp.exp(x)\n")
    report = gate(str(ref), str(cand), klass="xla-rewrite")
    graded = {p["name"] for p in report.gates["parity"].details["probes"]}
    assert {"odd-shape", "drawn-shape1", "drawn-shape2"} <= graded, sorted(graded)  # graded, not skipped
    assert report.gates["parity"].status == "PASS"
    skipped = {c.name: c.detail for c in report.gates["parity"].checks if c.status == "SKIPPED"}
    assert "reference itself is not finite" in skipped["rows-at-a-shape.graded"], skipped


@pytest.mark.full
def test_a_kernel_wrong_on_the_edges_rows_only_off_the_shape_the_battery_runs_at_fails_at_the_other_shapes():
    # right at its first traced shape (the seeds' and every edge's), wrong on rows with outliers elsewhere
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_drops_outliers_off_its_first_shape.py")
    assert report.status == "FAIL"
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert at == {"rows-at-a-shape"}, at  # the shapes' own draws hold no such rows


@pytest.mark.parametrize("problem,candidate,klass", [
    pytest.param("softmax/reference.py", "softmax/bad_max_from_a_finite_sentinel.py", "xla-rewrite",
                 marks=pytest.mark.full),
    pytest.param("softmax/reference.py", "softmax/bad_zero_for_rows_masked_whole.py", "xla-rewrite",
                 marks=pytest.mark.full),
    pytest.param("model_torch/softmax_reference.py", "model_torch/softmax_bad_max_floored_at_a_sentinel.py",
                 "kernel-authored", marks=pytest.mark.full),
])
def test_a_finite_sentinel_above_the_dtypes_lowest_value_fails_on_the_lowest_edge_alone(problem, candidate, klass):
    # right on random draws, on shifts below zero and on -inf masks; a row masked whole with
    # finfo.min (the reference's answer there is 1/n) is NaN or zero under a sentinel of -1e30 or -1e9
    report = gate(problem, candidate, klass=klass)
    assert report.status == "FAIL"
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert at == {"edge-lowest-in0"}, at


@pytest.mark.full
def test_correct_kernels_pass_every_edge_and_the_edges_are_recorded():
    report = gate("rmsnorm/reference.py", "rmsnorm/pallas.py")
    assert report.status == "PASS"
    assert report.context["edge_probes"] == [
        "edge-slices-in0", "edge-offset-in0", "edge-negative-in0", "edge-spikes-in0", "edge-scales-in0", "edge-rows-in0",
        "edge-columns-in0", "edge-small-in0", "edge-large-in0", "edge-masked-in0", "edge-slices-in1", "edge-offset-in1",
        "edge-negative-in1", "edge-spikes-in1", "edge-scales-in1", "edge-rows-in1", "edge-small-in1", "edge-large-in1",
        "edge-masked-in1"]  # two inputs: no lowest
    names = {p["name"] for p in report.gates["parity"].details["probes"]}
    assert set(report.context["edge_probes"]) <= names


@pytest.mark.full
def test_a_thread_started_at_import_is_counted_too():
    report = _measure("bad_thread_at_import.py")
    assert report["status"] == "ANOMALY"
    assert _check(report, "os_threads_quiet")["status"] == "FAIL"


# -- the floor, both ways -----------------------------------------------------------------------


@pytest.mark.full
def test_bfloat16_accumulation_fails_the_default_floor():
    wide = gate("rmsnorm/reference.py", "rmsnorm/bad_bf16_sum_of_squares.py",
                overrides={"batch": 1, "seq_len": 16, "emb_dim": 1024})
    assert "parity.error" in failed(wide)
    # A 1024-long running sum in bfloat16: at the op-point's length (not TINY's 256) it leaves the floor.
    scan = parity("cumsum/reference.py", "cumsum/bad_bf16_accumulate.py", overrides={"batch": 8})
    assert "parity.error" in failed(scan)


@pytest.mark.full
@pytest.mark.parametrize("problem", ["cumsum", "rmsnorm"])
def test_in_float32_a_reference_that_casts_to_float32_itself_is_graded_against_a_widened_oracle(problem):
    # Both references compute in float32 whatever they are given: fed float64 they are their own oracle, and
    # before the widened one an honest float32 rewrite FAILed (jnp.cumsum 21x "the floor" on the offset edge).
    report = gate(f"{problem}/reference.py", f"{problem}/xla_rewrite.py", klass="xla-rewrite", dtype="float32")
    assert report.status == "PASS", failed(report)
    against = {p["against"] for p in report.gates["parity"].details["probes"] if p.get("outputs")}
    assert against == {"oracle-float64"}
    if problem == "rmsnorm":  # and a float32 kernel that squares and sums in bfloat16 still FAILs against it
        bad = gate("rmsnorm/reference.py", "rmsnorm/bad_bf16_sum_of_squares.py", dtype="float32")
        assert "parity.error" in failed(bad)


def test_the_floor_is_never_finer_than_the_outputs_resolution():
    import numpy as np

    from kgate.backends.base import HostTree
    from kgate.gates.parity import ParitySpec, Probe, evaluate

    def tree(*values, dtype=np.float32):
        return HostTree("PyTreeDef(*)", ("out",), (np.array(values, dtype),))

    # A float32 scalar loss: the reference landed 1.5e-9 from the float64 oracle; a correct
    # kernel summing in another order is one ulp (4.77e-7 at 5.6) away. That is not 300x wrong.
    truth = float(np.float32(5.6))
    oracle = tree(truth + 1.5e-9, dtype=np.float64)
    probe = Probe(42, tree(1.0, 2.0), tree(np.float32(truth)), oracle, "float64",
                  tree(np.nextafter(np.float32(truth), np.float32(6))))
    assert evaluate(ParitySpec.parse("floor"), [probe]).status == "PASS"
    far = Probe(42, tree(1.0, 2.0), tree(np.float32(truth)), oracle, "float64", tree(np.float32(truth + 1e-5)))
    assert evaluate(ParitySpec.parse("floor"), [far]).status == "FAIL"


@pytest.mark.full
def test_a_program_planted_in_the_compilation_cache_is_never_loaded_and_turning_the_cache_on_is_named(
        tmp_path, monkeypatch):
    shared = tmp_path / "shared-xla-cache"  # the author's own cache, where the candidate plants its program
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(shared))
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_poisons_compile_cache.py", klass="xla-rewrite")
    assert any(p.name.startswith("jit_workload-") for p in shared.iterdir())  # planted under the reference's key
    assert report.status == "ANOMALY"
    text = _integrity_text(report)
    assert "the array library's setting jax_compilation_cache_dir changed" in text and "(at import)" in text
    assert "parity.error" in failed(report)  # the reference's answers came from its own program
    honest = gate("rmsnorm/reference.py", "rmsnorm/xla_rewrite.py", klass="xla-rewrite")  # the next run: not loaded either
    assert honest.status in ("PASS", "PASS_WITH_ADVISORIES"), failed(honest)


@pytest.mark.full
def test_a_setting_for_the_whole_process_changed_at_import_or_after_a_call_is_an_anomaly():
    at_import = gate("rmsnorm/reference.py", "rmsnorm/bad_enables_x64.py", klass="xla-rewrite")
    assert at_import.status == "ANOMALY"
    assert "the array library's setting jax_enable_x64 changed from False to True (at import)" in _integrity_text(at_import)
    later = gate("rmsnorm/reference.py", "rmsnorm/bad_disables_jit_after_first_call.py", klass="xla-rewrite")
    assert later.status == "ANOMALY"
    assert ("the array library's setting jax_disable_jit changed from False to True (after the candidate ran on "
            "probe p0)") in _integrity_text(later)


def _planted(folder) -> list[str]:
    """Program files in the reference legs' shared folder whose bytes no longer hash to the
    digest in their name (program_file names each by its digest)."""
    import hashlib

    return [p.name for p in folder.iterdir() if not p.name.startswith(".") and p.is_file() and not p.is_symlink()
            and hashlib.sha256(p.read_bytes()).hexdigest()[:32] != p.name.rsplit(".", 1)[-1]]


@pytest.mark.full
def test_a_wrong_program_planted_where_reference_legs_share_programs_is_never_loaded():
    from kgate.verify import refcache

    first = gate("rmsnorm/reference.py", "rmsnorm/xla_rewrite.py", klass="xla-rewrite")
    assert first.status in ("PASS", "PASS_WITH_ADVISORIES"), failed(first)
    # A copy of the shared folder that no reference leg uses: the cheat plants in every such folder, but
    # in the one in use the reference leg writes each program it had to compile again over the planted
    # file, so only the copy keeps the evidence that it planted.
    decoy = Path(tempfile.mkdtemp(prefix="kgate-reference-programs-"))
    try:
        shutil.copytree(refcache.SHARED.folder, decoy, dirs_exist_ok=True)
        cheat = gate("rmsnorm/reference.py", "rmsnorm/bad_poisons_reference_programs.py", klass="xla-rewrite")
        assert _planted(decoy)  # its wrong program sits under the reference's names
    finally:
        shutil.rmtree(decoy, ignore_errors=True)
    # the expected answers came from programs compiled again, so its kernel is graded as wrong
    assert "parity.error" in failed(cheat)
    assert cheat.to_json()["seconds"]["reference_programs"]["compiled"] >= 1
    after = gate("rmsnorm/reference.py", "rmsnorm/xla_rewrite.py", klass="xla-rewrite")  # nor by the next run
    assert after.status in ("PASS", "PASS_WITH_ADVISORIES"), failed(after)
    assert after.to_json()["seconds"]["reference_programs"]["loaded"] >= 1  # what was rewritten is reused


@pytest.mark.full
def test_a_process_that_outlives_the_candidate_and_scrambles_the_shared_programs_changes_no_verdict():
    import os
    import signal

    from kgate.verify import refcache

    gate("rmsnorm/reference.py", "rmsnorm/xla_rewrite.py", klass="xla-rewrite")  # the folder exists, with programs
    cheat = gate("rmsnorm/reference.py", "rmsnorm/bad_races_reference_programs.py", klass="xla-rewrite")
    pid_file = refcache.SHARED.folder / ".racer-pid"
    try:
        # the racer outlives the candidate's leg: it is stopped, and the leg is a crash (before the
        # process watch, it ran on and the candidate FAILed parity)
        assert cheat.status == "FAIL" and failed(cheat) & {"parity.error", "parity.candidate_ran"}
        (ran,) = [c for c in cheat.gates["parity"].checks if c.name == "candidate_ran"]
        assert ran.status == "PASS" or "after the leg exited, and kgate stopped it" in ran.detail, ran.detail
        # whatever it left in the shared folder (garbage, pipes, links), the next runs grade as from scratch
        for _ in range(2):
            honest = gate("rmsnorm/reference.py", "rmsnorm/xla_rewrite.py", klass="xla-rewrite", phase_budget_s=60)
            assert honest.status in ("PASS", "PASS_WITH_ADVISORIES"), failed(honest)
        if pid_file.exists():  # it wrote its pid: it is no longer running
            assert not _alive(int(pid_file.read_text()))
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


@pytest.mark.full
@pytest.mark.fresh_draws
def test_no_seed_reaches_a_file_while_the_candidate_runs(tmp_path):
    """The reference leg's request (its seeds, the drawn one included) comes on its stdin, and
    the list of probes it has made inputs for goes to the parent on a pipe, naming no seed: a
    candidate that reads every file of the probe folder, once the last probes are handed over,
    learns none."""
    from kgate.verify import CheckRequest, run_gate

    spy = tmp_path / "spy.py"
    found = tmp_path / "found.txt"
    spy.write_text(
        "import os, pathlib, sys\n"
        "sys.path.insert(0, %r)\n"
        "from xla_rewrite import workload as honest\n"
        "folder = pathlib.Path(os.readlink('/proc/self/fd/2')).parent.parent\n"  # its stderr is in the probe folder
        "def workload(x, w):\n"  # traced once per shape: at a shape probe, every probe has been handed over
        "    if (folder / 'candidate' / 'probes-shapes.json').exists() and not pathlib.Path(%r).exists():\n"
        "        text = []\n"
        "        for p in folder.rglob('*'):\n"
        "            try:\n"
        "                text.append(str(p) + ' ' + (p.read_text(errors='replace') if p.is_file() else ''))\n"
        "            except OSError:\n"
        "                pass\n"
        "        pathlib.Path(%r).write_text('\\n'.join(text))\n"
        "    return honest(x, w)\n" % (str(ROOT / "examples" / "rmsnorm"), str(found), str(found))
    )
    report = run_gate(CheckRequest(reference=ROOT / "examples" / "rmsnorm" / "reference.py", candidate=spy,
                                   klass="xla-rewrite", seeds=(1234567, 7654321)))
    assert report.status in ("PASS", "PASS_WITH_ADVISORIES"), failed(report)
    drawn = report.to_json()["random_seed"]
    text = found.read_text()
    assert "candidate/probes-shapes.json" in text and "drawn-shape" not in text  # it read the lists kgate wrote
    assert "candidate/inputs-p13.pkl" in text  # and the last shape probe's inputs
    for seed in (1234567, 7654321, drawn):
        assert str(seed) not in text


@pytest.mark.full
def test_bytecode_forged_for_the_reference_or_a_module_it_imports_is_never_run(tmp_path):
    """Python trusts a `__pycache__` file whose header matches its source's time and size: each
    cheat forges one (for the reference, for a helper it imports) that drops the weight, as its
    kernel does. Run twice, the second run's legs would import the forged code; they compile
    from source, so both runs FAIL parity."""
    import shutil

    source = (ROOT / "examples" / "rmsnorm" / "reference.py").read_text()
    direct = tmp_path / "direct"
    direct.mkdir()
    (direct / "reference.py").write_text(source)
    helper = tmp_path / "helper"
    helper.mkdir()
    (helper / "rms_helpers.py").write_text("def scale(y, w):\n    return y * w\n")
    assert "* w.astype(jnp.float32)" in source
    (helper / "reference.py").write_text(source.replace("import jax.numpy as jnp\n", "import jax.numpy as jnp\nimport rms_helpers\n", 1)
                                         .replace("y = x32 * jax.lax.rsqrt(ms + CONFIG[\"eps\"]) * w.astype(jnp.float32)",
                                                  "y = rms_helpers.scale(x32 * jax.lax.rsqrt(ms + CONFIG[\"eps\"]), "
                                                  "w.astype(jnp.float32))"))
    assert "rms_helpers.scale" in (helper / "reference.py").read_text()
    for folder, cheat in ((direct, "bad_forges_reference_bytecode.py"), (helper, "bad_forges_helper_bytecode.py")):
        shutil.copy(ROOT / "examples" / "rmsnorm" / cheat, folder / cheat)
        for run in range(2):
            report = gate(str(folder / "reference.py"), str(folder / cheat), klass="xla-rewrite")
            assert "parity.error" in failed(report), (cheat, run, failed(report))
        assert list((folder / "__pycache__").glob("*.pyc"))  # the forged bytecode is there, for the taking


@pytest.mark.full
def test_a_candidate_that_empties_the_list_of_shape_probes_never_escapes_them():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_skips_the_shape_probes.py")
    assert report.status in ("FAIL", "ANOMALY")
    # the parent's list replaces its empty one, or the candidate read its own: either way each shape
    # probe is a failure, wrong values where it ran and no output where it did not
    failing = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert {"odd-shape", "drawn-shape1", "drawn-shape2"} <= failing


def test_links_planted_where_kgate_writes_its_hand_over_are_replaced_never_followed(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where the candidate keeps its canary
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_links_the_hand_over.py", klass="xla-rewrite")
    canary = tmp_path / "kgate-link-canary.txt"
    planted = (tmp_path / "kgate-link-canary.planted").read_text().split()
    assert "probes-shapes.json" in planted  # kgate writes it only once the candidate has imported
    assert canary.read_text() == "untouched"  # no list of probes, no input file written through its links
    assert report.status in ("PASS", "PASS_WITH_ADVISORIES", "FAIL")  # its own reads of its links may crash it


@pytest.mark.full
def test_packages_a_candidate_plants_where_kgate_runs_are_never_imported_by_a_later_run(tmp_path):
    import json
    import shutil
    import subprocess
    import sys

    rms = ROOT / "examples" / "rmsnorm"
    for name in ("reference.py", "bad_plants_packages_where_it_runs.py", "xla_rewrite.py"):
        shutil.copy(rms / name, tmp_path / name)
    console = Path(sys.executable).parent / "kgate"  # the command users run (not `python -m`, which puts cwd first)
    runs = [["bad_plants_packages_where_it_runs.py", 2], ["bad_plants_packages_where_it_runs.py", 2],
            ["xla_rewrite.py", 0]]
    for candidate, expected in runs:
        proc = subprocess.run([str(console), "gate", "--class", "xla-rewrite", "-r", "reference.py", "-c", candidate,
                               "--json"], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == expected, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert json.loads(proc.stdout)["status"] == ("FAIL" if expected else "PASS")
        assert (tmp_path / "kgate" / "__init__.py").is_file() and (tmp_path / "jax" / "__init__.py").is_file()
        assert not (tmp_path / "planted-package-imported").exists()


def test_a_process_left_behind_to_rewrite_the_outputs_never_gets_them_graded():
    # it holds the leg's channel, waits for the leg to exit and writes the right answers into its
    # outputs file (PASS before the outputs were hashed into the result: the rewrite landed)
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_leaves_a_process_behind.py", klass="xla-rewrite")
    assert report.status == "FAIL" and "parity.candidate_ran" in failed(report)
    (ran,) = [c for c in report.gates["parity"].checks if c.name == "candidate_ran"]
    assert re.search(r"not the ones it wrote|outlived it|result digests", ran.detail), ran.detail


# -- work in another process (a spinner, a daemon, an orphan out of view) -------------------------


def _alive(pid: int) -> bool:
    import os

    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.full
@pytest.mark.parametrize("candidate", [
    "bad_spinner_process.py",  # a child process, started on its first trace, busy from then on
    "bad_daemon_spinner.py",  # a daemon started at import by forking twice: nobody's child any more
])
def test_a_process_the_candidate_starts_is_counted_with_its_cpu_and_stopped(candidate):
    import time

    report = _measure(candidate)
    assert report["status"] == "ANOMALY"
    check = _check(report, "processes_quiet")
    assert check["status"] == "FAIL" and "s of CPU while the rounds ran" in check["detail"], check
    assert _check(report, "os_threads_quiet")["status"] == "PASS"  # no thread of the timed process did it
    pids = [int(p) for p in re.findall(r"pid (\d+)", check["detail"])]
    assert pids
    time.sleep(0.5)
    assert not any(_alive(pid) for pid in pids)  # stopped at the end of the run, not left spinning


@pytest.mark.full
def test_turning_the_subreaper_off_to_hide_an_orphan_is_seen_from_both_sides(tmp_path):
    # in the timed process (its setting changed) and from kgate's parent, which the orphan reached
    checks = _verify_anomaly(tmp_path, "bad_unsets_subreaper.py", "--class", "xla-rewrite", "--set", "batch=1",
                             "--set", "seq_len=64")
    assert checks["measure.processes_quiet"]["status"] == "FAIL"
    assert "stopped being the subreaper" in checks["measure.processes_quiet"]["detail"]
    outside = checks["measure.parent_processes"]
    assert outside["status"] == "FAIL" and "as kgate saw them from outside it" in outside["detail"], outside

def _running(marker: str) -> list[int]:
    """The live processes whose command line carries `marker`."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read() and _alive(int(entry)):
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


@pytest.mark.full
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_a_leg_stopped_past_its_phase_budget_takes_the_daemon_it_started_with_it():
    import os
    import signal

    marker = "kgate-bad-daemon-then-hangs"
    try:
        report = gate("rmsnorm/reference.py", "rmsnorm/bad_daemon_then_hangs.py", klass="xla-rewrite",
                      phase_budget_s=4)
        assert report.status == "FAIL" and "parity.candidate_ran" in failed(report)
        (ran,) = [c for c in report.gates["parity"].checks if c.name == "candidate_ran"]
        assert "was stopped" in ran.detail and "the candidate on probe p0" in ran.detail, ran.detail
        assert _running(marker) == []  # stopped with the leg, not left spinning beside what runs next
    finally:
        for pid in _running(marker):  # never leave one behind in the test run
            os.kill(pid, signal.SIGKILL)


@pytest.mark.full
def test_a_daemon_left_running_after_the_candidate_s_checks_fails_the_gate_and_is_stopped():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_daemon_spinner.py", klass="xla-rewrite")
    assert report.status == "FAIL" and "parity.candidate_ran" in failed(report)
    (ran,) = [c for c in report.gates["parity"].checks if c.name == "candidate_ran"]
    assert "after the leg exited, and kgate stopped it" in ran.detail, ran.detail
    pids = [int(p) for p in re.findall(r"pid (\d+)", ran.detail)]
    assert pids and not any(_alive(pid) for pid in pids)


@pytest.mark.full
@pytest.mark.parametrize("reference, candidate", [
    ("softmax/reference.py", "softmax/bad_max_floored_at_zero.py"),
    ("model_torch/softmax_reference.py", "model_torch/softmax_bad_max_floored_at_zero.py"),
])
def test_a_kernel_wrong_only_on_rows_below_zero_fails_on_the_negative_and_lowest_edges_alone(reference, candidate):
    """A row maximum floored at zero is right wherever a row has a positive value, as every
    random draw does: the `edge-negative` probe (every value below zero) is where it is wrong, and
    the `edge-lowest` probe's rows masked whole far below zero."""
    report = gate(reference, candidate)
    assert report.status == "FAIL"
    probes = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert probes == {"edge-negative-in0", "edge-lowest-in0"}, probes


def test_the_masked_edge_sets_a_span_of_every_row_to_minus_infinity_never_the_whole_row():
    """Half the rows (drawn) mask a leading span of every power of two short of the row in turn;
    the others a drawn span at a drawn place; no row is all -inf, nothing else changes."""
    import numpy as np

    from kgate.backends.base import masked_rows

    x = np.random.default_rng(0).standard_normal((16, 96)).astype(np.float32)
    m = masked_rows(x, np.random.default_rng(7))
    inf = np.isneginf(m)
    assert inf.any(axis=1).all() and not inf.all(axis=1).any()
    np.testing.assert_array_equal(m[~inf], x[~inf])
    leading = {int(np.argmin(row)) for row in inf if row[0]}  # where each leading run ends
    assert {64, 32, 16, 8} <= leading, leading
    assert not np.array_equal(m, masked_rows(x, np.random.default_rng(8)))  # drawn from the run's seed
    assert np.isneginf(masked_rows(np.zeros((1, 2), np.float32), np.random.default_rng(1))).sum() == 1


@pytest.mark.full
def test_a_candidate_leg_s_compiler_caches_are_its_own(tmp_path):
    # what a leg that ran candidate code left in torch's or Triton's cache is never loaded by another
    # leg: the candidate's own leg (and the measure leg) starts with empty caches of its own
    candidate = tmp_path / "rewrite.py"
    candidate.write_text(
        "import os, tempfile\n"
        "for name in ('TORCHINDUCTOR_CACHE_DIR', 'TRITON_CACHE_DIR'):\n"
        "    folder = os.environ[name]\n"
        "    assert os.path.basename(os.path.dirname(folder)).startswith('kgate-leg-caches-'), folder\n"
        "    assert not os.path.exists(folder) or not os.listdir(folder), folder\n"
        + (ROOT / "examples" / "softmax" / "xla_rewrite.py").read_text().replace("import reference", "")
    )
    shutil.copy(ROOT / "examples" / "softmax" / "reference.py", tmp_path / "reference.py")
    report = gate(str(tmp_path / "reference.py"), str(candidate), klass="xla-rewrite")
    assert report.status == "PASS", failed(report)
