"""PyTorch problems in the KernelBench format, with Triton kernels under the Triton interpreter.

The examples under examples/model_torch are loaded unchanged. Correct candidates PASS the gate;
each known-bad one FAILs (or is an ANOMALY) in the gate and check that names what it does.
"""

import json
import os
import shutil
import time
import subprocess
import sys

import pytest

from conftest import EXAMPLES, failed, gate

pytest.importorskip("torch")
pytest.importorskip("triton")

SOFTMAX = "model_torch/softmax_reference.py"
LINEAR = "model_torch/linear_relu_reference.py"


def test_the_backend_is_chosen_from_what_the_reference_imports(tmp_path):
    from kgate.backends import detect

    assert detect(EXAMPLES / SOFTMAX) == "torch"
    assert detect(EXAMPLES / "model_jax/reference.py") == "jax"
    both = tmp_path / "both.py"
    both.write_text("import jax\nimport torch\n")
    assert detect(both) == "jax"  # a module that imports both is the JAX side's (its default)
    assert detect(tmp_path / "missing.py") == "jax"


def test_backend_forces_the_framework_and_refuses_one_kgate_lacks(tmp_path):
    from kgate.backends import backend_for
    from kgate.errors import KgateError

    both = tmp_path / "both.py"
    both.write_text("import jax\nimport torch\n")
    assert backend_for(both) == backend_for(both, "auto") == "jax"
    assert backend_for(both, "torch") == "torch" and backend_for(EXAMPLES / SOFTMAX, "jax") == "jax"
    with pytest.raises(KgateError, match="--backend 'tpu' is not one kgate has"):
        backend_for(both, "tpu")


def test_each_timed_call_gets_new_tensor_objects_in_new_memory():
    """An eager candidate runs its Python at every timed call: an answer cached by the input's
    identity, or by its buffer and version, must never hit. The cache of
    examples/model_torch/softmax_bad_caches_by_input_identity.py computes at every call."""
    import importlib.util

    import torch

    from kgate.backends import get_backend

    spec = importlib.util.spec_from_file_location("caches", EXAMPLES / "model_torch" / "softmax_bad_caches_by_input_identity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, seen, computed = module.ModelNew(), [], []
    forward = model.forward

    def entry(x):
        seen.append((x, x.data_ptr()))  # each kept alive: an id or a buffer is never reused
        out = forward(x)
        computed.append(model._last[3] is out and model._last[0] is x)  # True: this call computed its answer
        return out

    x = torch.randn(8, 96)
    timed = get_backend("torch").compile_timed(entry, (x,), time.perf_counter_ns)
    seen.clear(), computed.clear()
    for _ in range(4):
        timed()
    assert len({id(s[0]) for s in seen}) == 4 and len({s[1] for s in seen}) == 4  # new objects in new memory
    assert x.data_ptr() not in {s[1] for s in seen} and all(computed)  # never the session's buffer; none replayed


def test_settings_a_candidate_changed_are_each_put_back_and_unchanged_ones_are_not_touched():
    """A leg restores torch's process-wide settings as they were before candidate code ran: every
    one it watches (the backends' flags too), each on its own, and only where it changed (setting
    determinism imports torch's compiler stack: seconds a leg would spend for nothing)."""
    import subprocess

    code = """
import sys, torch
from kgate.backends import get_backend
b = get_backend("torch")
before = b.settings()
b.restore_settings(before)
assert "torch._inductor" not in sys.modules, "an unchanged setting was set"
torch.set_float32_matmul_precision("medium"); torch.set_num_threads(1); torch.set_grad_enabled(False)
torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
m = torch.backends.cuda.matmul; m.allow_bf16_reduced_precision_reduction = not m.allow_bf16_reduced_precision_reduction
b.restore_settings(before)
assert b.settings() == before, (b.settings(), before)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.full
def test_a_torch_problem_that_also_imports_jax_runs_on_torch_with_backend(tmp_path):
    """A torch reference that imports jax too: auto takes it for JAX (and it fails there);
    --backend torch runs it on torch. jax's own import (a garbage-collector callback) is not the
    candidate's doing; the receipt records the backend, and verify-receipt regenerates with it."""
    reference = tmp_path / "reference.py"
    reference.write_text("import jax  # noqa: F401\n" + (EXAMPLES / SOFTMAX).read_text())
    candidate = EXAMPLES / "model_torch" / "softmax_rewrite.py"
    auto = _cli("gate", "-r", str(reference), "-c", str(candidate), "--class", "rewrite", "--json")
    assert auto.returncode == 2 and "not a valid JAX type" in auto.stdout
    receipt = tmp_path / "r.json"
    done = _cli("verify", "-r", str(reference), "-c", str(candidate), "--class", "rewrite", "--backend", "torch",
                "--budget", "2", "-o", str(receipt), "--json")
    assert done.returncode in (0, 1), done.stdout[-3000:]
    assert json.loads(done.stdout)["device"]["versions"]["torch"].startswith("2.")
    assert json.loads(receipt.read_text())["backend"] == "torch"
    checked = _cli("verify-receipt", str(receipt), "--json")
    assert checked.returncode == 0, checked.stdout[-2000:]


@pytest.mark.parametrize("reference, candidate, klass", [
    (SOFTMAX, "model_torch/softmax_triton.py", "kernel-authored"),  # `make test` gates this one; the rest are `full`
    pytest.param(SOFTMAX, "model_torch/softmax_rewrite.py", "xla-rewrite", marks=pytest.mark.full),
    pytest.param(SOFTMAX, "model_torch/softmax_triton_epilogue.py", "kernel-authored", marks=pytest.mark.full),
    # registered as a custom operator: torch._dynamo, loaded by the registration, wraps torch.manual_seed
    pytest.param(SOFTMAX, "model_torch/softmax_triton_custom_op.py", "kernel-authored", marks=pytest.mark.full),
    # torch's compiler, named in the source: loading it, and its first compiled call, patch torch itself
    (SOFTMAX, "model_torch/softmax_rewrite_loads_the_compiler.py", "xla-rewrite"),
    pytest.param(SOFTMAX, "model_torch/softmax_compiled.py", "xla-rewrite", marks=pytest.mark.full),
    pytest.param(LINEAR, "model_torch/linear_relu_triton.py", "kernel-authored", marks=pytest.mark.full),
    pytest.param(LINEAR, "model_torch/linear_relu_triton_matmul.py", "kernel-authored", marks=pytest.mark.full),
    pytest.param(LINEAR, "model_torch/linear_relu_rewrite.py", "xla-rewrite", marks=pytest.mark.full),
])
def test_correct_torch_candidates_pass_the_gate(reference, candidate, klass):
    report = gate(reference, candidate, klass=klass)
    assert report.status == "PASS", failed(report)
    assert report.context["device"]["versions"]["torch"].startswith("2.")
    if klass == "kernel-authored":
        assert report.context["device"]["interpreted"] is True
        firing = report.gates["firing"].details
        assert firing["kernel_sites"] and all(s["site"].startswith("triton:") for s in firing["kernel_sites"])


@pytest.mark.full
def test_a_candidate_that_initializes_its_own_weights_is_given_the_references():
    report = gate(LINEAR, "model_torch/linear_relu_triton.py")  # its own init is all zeros
    assert report.status == "PASS"
    weights = report.context["candidate"]["model"]["weights"]
    assert weights["shared_by"] == "load_state_dict"
    assert weights["names"] == ["linear.weight", "linear.bias"]
    assert weights["given_sha256"] == report.context["reference"]["model"]["weights"]["sha256"]


@pytest.mark.full
def test_random_weights_are_given_to_both_and_recorded():
    report = gate(LINEAR, "model_torch/linear_relu_triton.py", weights="random:3")
    assert report.status == "PASS"
    assert report.context["reference"]["model"]["weights"]["randomized"] == ["linear.bias", "linear.weight"]
    assert report.context["candidate"]["model"]["weights"]["policy"] == "random:3"


@pytest.mark.full
def test_the_op_point_shrinks_with_set_without_edits():
    report = gate(SOFTMAX, "model_torch/softmax_triton.py", overrides={"batch_size": 3, "dim": 40})
    assert report.status == "PASS"
    assert report.context["op_point"]["values"]["batch_size"] == 3
    assert report.context["op_point"]["values"]["dim"] == 40


KNOWN_BAD_TORCH = [
    # kernels that are present but do not do the work
    (SOFTMAX, "softmax_bad_ghost_launch.py", "FAIL", {"firing.kernel_reaches_output", "firing.kernel_result_matters"}),
    (SOFTMAX, "softmax_bad_fallback.py", "FAIL", {"firing.kernel_present"}),
    (SOFTMAX, "softmax_bad_copy_kernel.py", "FAIL", {"firing.kernel_does_the_work"}),
    (SOFTMAX, "softmax_bad_copies_torch_answer.py", "FAIL", {"firing.kernel_does_the_work"}),
    (SOFTMAX, "softmax_bad_half_rows.py", "FAIL", {"firing.kernel_result_matters"}),
    (LINEAR, "linear_relu_bad_kernel_on_weights.py", "FAIL", {"firing.kernel_reads_inputs"}),
    (SOFTMAX, "softmax_bad_cancelled_kernel.py", "FAIL", {"firing.kernel_carries_the_answer"}),
    (SOFTMAX, "softmax_bad_detects_tampering.py", "FAIL", {"firing.kernel_carries_the_answer"}),
    (SOFTMAX, "softmax_bad_one_row_in_place.py", "FAIL", {"firing.kernel_result_matters"}),
    # a candidate that computes one way when graded and another when audited
    (SOFTMAX, "softmax_bad_kernel_only_when_audited.py", "FAIL", {"firing.audit_is_the_graded_run"}),
    (SOFTMAX, "softmax_bad_kernel_only_on_repeat_inputs.py", "FAIL", {"firing.audit_is_the_graded_run"}),
    # right answers where the kernel overflows, from torch: the audit's ablation on an edge drawn after grading
    (SOFTMAX, "softmax_bad_repairs_with_torch.py", "FAIL", {"firing.kernel_result_matters_on_edge"}),
    (SOFTMAX, "softmax_bad_plants_the_edge_draw.py", "FAIL", {"firing.kernel_result_matters_on_edge"}),
    # ... and rewrites kgate's in-process record of the graded runs: held to what each run sealed as it ended
    (SOFTMAX, "softmax_bad_forges_graded_record.py", "FAIL", {"firing.audit_is_the_graded_run"}),
    (SOFTMAX, "softmax_bad_rewrites_sealed_runs.py", "ANOMALY",
     {"integrity.process_untouched", "firing.audit_is_the_graded_run"}),
    # outputs never written, or not plain tensors
    (SOFTMAX, "softmax_bad_skips_last_column.py", "FAIL", {"parity.finite"}),
    (SOFTMAX, "softmax_bad_returns_subclass.py", "FAIL", {"parity.candidate_ran"}),
    # class 1, allocator result reuse: a buffer never written, where the last answer was freed
    (SOFTMAX, "softmax_bad_reuses_freed_output.py", "FAIL", {"parity.uninitialized_memory"}),
    (SOFTMAX, "softmax_bad_reuses_uninitialized_new.py", "FAIL", {"parity.uninitialized_memory"}),
    # patching what kgate or the library uses, in the candidate's own process
    (SOFTMAX, "softmax_bad_patches_torch_softmax.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_patches_tensor_method.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_rebinds_kgate.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_sets_matmul_precision.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_escapes_launch_recording.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_mutates_input.py", "ANOMALY", {"integrity.inputs_unchanged"}),
    (SOFTMAX, "softmax_bad_patches_hashlib.py", "ANOMALY", {"integrity.process_untouched"}),
    # torch's own wrapper of torch.manual_seed is accepted; a function written into its cell is not
    (SOFTMAX, "softmax_bad_swaps_the_wrapped_seed.py", "ANOMALY", {"integrity.process_untouched"}),
    # ... nor one it calls through what that wrapper looks up off the function it wraps
    (SOFTMAX, "softmax_bad_redirects_a_wrapped_seed.py", "ANOMALY", {"integrity.process_untouched"}),
    # ... and what torch's compiler patches of torch is made before the snapshot: a patch of the same
    # shape, or made with the compiler's own wrapper, by the candidate, is the candidate's
    (SOFTMAX, "softmax_bad_compiled_patches_module_init.py", "ANOMALY", {"integrity.process_untouched"}),
    # a hook torch's class keeps empty (None: state, not behaviour, until it is code) set to code
    (SOFTMAX, "softmax_bad_sets_a_hook_torch_left_empty.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_wraps_tensor_softmax_as_the_compiler_does.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_signal_slows_reference.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_mangles_kgates_seal.py", "ANOMALY", {"integrity.process_untouched"}),
    # class 6, a lazy output: a view whose negation runs when it is read
    (SOFTMAX, "softmax_bad_negative_view.py", "FAIL", {"parity.candidate_ran"}),
    # class 7, the process's scheduling changed between the candidate's calls: each thread's affinity
    # and policy are watched
    (SOFTMAX, "softmax_bad_pins_threads_after_its_call.py", "ANOMALY", {"integrity.process_untouched"}),
    (SOFTMAX, "softmax_bad_idles_threads_after_its_call.py", "ANOMALY", {"integrity.process_untouched"}),
    # the GEMM left to torch, the kernel only its epilogue: torch's heavy operators are counted
    (LINEAR, "linear_relu_bad_kernel_only_epilogue.py", "FAIL", {"firing.kernel_does_the_arithmetic"}),
    # ... and every other operator, one operation per element as a JAX program's: torch computes the
    # answer (a softmax, a GEMM spelled as a broadcast and a sum) and the kernel negates, rounds or applies
    # the ReLU
    (SOFTMAX, "softmax_bad_kernel_negates_torchs_answer.py", "FAIL", {"firing.kernel_does_the_arithmetic"}),
    (SOFTMAX, "softmax_bad_kernel_casts_a_float64_answer.py", "FAIL", {"firing.kernel_does_the_arithmetic"}),
    (LINEAR, "linear_relu_bad_gemm_by_broadcast.py", "FAIL", {"firing.kernel_does_the_arithmetic"}),
]
# `make test` gates one candidate of each class only the torch side shows (input mutation, a subclass
# for an output, an output never written); the others are `full`.
QUICK_TORCH = {"softmax_bad_mutates_input.py", "softmax_bad_returns_subclass.py", "softmax_bad_skips_last_column.py",
               "softmax_bad_forges_graded_record.py", "softmax_bad_pins_threads_after_its_call.py",
               "linear_relu_bad_gemm_by_broadcast.py", "softmax_bad_wraps_tensor_softmax_as_the_compiler_does.py"}


@pytest.mark.full  # 16 s: an inductor compile from an empty cache
def test_torch_s_compiler_is_loaded_and_run_once_before_the_snapshot_where_a_candidate_names_it(tmp_path):
    """What torch's compiler patches of torch on its first compiled call is in place before a
    leg's snapshot where the problem names the compiler, made by kgate's own compiled call; and
    nothing of it where the problem does not name it."""
    code = ("import sys, torch; from kgate.backends.torch_backend import late_state; late_state(sys.argv[1:]); "
            "print(torch.nn.Module.__init__.__code__.co_name, hasattr(torch.jit.trace, '_torchdynamo_disable'), "
            "'torch._dynamo' in sys.modules)")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    named = subprocess.run([sys.executable, "-c", code, "torch.compile"], capture_output=True, text=True, env=env,
                           timeout=300)
    assert named.stdout.split() == ["patched_init", "True", "True"], named.stdout + named.stderr[-2000:]
    plain = subprocess.run([sys.executable, "-c", code, "torch.nn.Module"], capture_output=True, text=True, env=env,
                           timeout=300)
    assert plain.stdout.split() == ["__init__", "False", "False"], plain.stdout + plain.stderr[-2000:]


def test_torch_work_outside_kernels_is_counted_as_a_jax_program_s_is():
    """A fused softmax counts its five steps per element, an elementwise operator one per element it
    writes, a reduction one per element it reads; views, copies, casts and allocations none; a GEMM
    by torch's flop formula."""
    import torch

    from kgate.backends.torch_backend import TorchBackend

    backend, x, w = TorchBackend(), torch.randn(8, 16), torch.randn(4, 16)
    assert backend.arithmetic(lambda t: torch.softmax(t, dim=1), (x,)).outside == 5 * 128
    assert backend.arithmetic(lambda t: -t, (x,)).outside == 128
    assert backend.arithmetic(lambda t: t.sum(dim=1), (x,)).outside == 128
    moved = lambda t: t.t().contiguous().to(torch.float64).reshape(-1).clone()  # noqa: E731
    assert backend.arithmetic(moved, (x,)).outside == 0
    assert backend.arithmetic(lambda t: torch.empty_like(t).fill_(1.0), (x,)).outside == 0
    assert backend.arithmetic(lambda t: t @ w.T, (x,)).outside == 2 * 8 * 4 * 16
    # the same product spelled as a broadcast multiply and a sum: as much work, counted alike
    assert backend.arithmetic(lambda t: (t[:, None, :] * w[None]).sum(-1), (x,)).outside == 2 * 8 * 4 * 16
    # masks and indices are bookkeeping: only the floating select counts
    assert backend.arithmetic(lambda t: torch.where(~(t > 0), 0.0, t), (x,)).outside == 128


@pytest.mark.skipif(shutil.which("cc") is None, reason="builds its native half with a C compiler (cc)")
def test_an_output_computed_by_a_fault_handler_below_python_is_an_anomaly():
    # the call maps memory no one may read and returns it as a plain tensor; a SIGSEGV handler installed
    # with sigaction from C computes the answer on the first read: the kernel's handler table is watched
    report = gate(SOFTMAX, "model_torch/softmax_bad_output_computed_on_first_read.py")
    assert report.status == "ANOMALY"
    changed = next(c for c in report.gates["integrity"].checks if c.name == "process_untouched")
    assert changed.status == "FAIL" and "the SIGSEGV handler the OS holds" in changed.detail, changed


@pytest.mark.parametrize("reference, candidate, status, expected", [
    case if case[1] in QUICK_TORCH else pytest.param(*case, marks=pytest.mark.full) for case in KNOWN_BAD_TORCH])
def test_known_bad_torch_candidates_fail_in_the_gate_that_names_them(reference, candidate, status, expected):
    report = gate(reference, f"model_torch/{candidate}")
    assert report.status == status
    assert expected <= failed(report), failed(report)


@pytest.mark.full
def test_a_kernel_that_overflows_on_extreme_values_fails_on_the_edge_probes_only():
    report = gate(SOFTMAX, "model_torch/softmax_bad_no_max_subtraction.py")
    fails = {c.name for c in report.gates["parity"].failures}
    assert {"edge-slices-in0.error", "edge-slices-in0.finite"} <= fails
    assert not any(name.startswith("seed") for name in fails)  # random probes never reach exp's overflow


@pytest.mark.full
def test_a_kernel_that_reads_only_fixed_places_fails_on_spikes_drawn_for_the_run():
    report = gate(SOFTMAX, "model_torch/softmax_bad_partial_row_max.py")
    fails = {c.name for c in report.gates["parity"].failures}
    assert "edge-spikes-in0.finite" in fails
    assert not any(name.startswith(("seed", "edge-slices", "edge-offset")) for name in fails)


@pytest.mark.full
def test_answers_precomputed_for_the_fixed_seeds_fail_on_the_seed_drawn_for_the_run():
    report = gate(SOFTMAX, "model_torch/softmax_bad_precomputes_fixed_seeds.py", klass="xla-rewrite")
    fails = {c.name for c in report.gates["parity"].failures}
    assert "seed42.error" not in fails and "seed43.error" not in fails  # the replay is right where it was aimed
    drawn = report.context["random_seed"]
    assert f"seed{drawn}.error" in fails


@pytest.mark.parametrize("candidate", [
    pytest.param("softmax_bad_rewrite_adds_zero.py", marks=pytest.mark.full),
    "softmax_bad_rewrite_method_alias.py",  # another entry point to the same operator
    pytest.param("softmax_bad_rewrite_dressed_alias.py", marks=pytest.mark.full),  # a composite, views, copies
    "softmax_bad_rewrite_out_form.py",  # its out= overload, a multiply thrown away beside it
    pytest.param("softmax_bad_rewrite_dead_code.py", marks=pytest.mark.full),  # a written-out softmax never returned
    pytest.param("softmax_bad_rewrite_in_place_identity.py", marks=pytest.mark.full),  # clamp_ at zero, in place
])
def test_a_rewrite_that_runs_the_references_operators_under_other_names_or_dressing_is_a_no_op(candidate):
    report = gate(SOFTMAX, f"model_torch/{candidate}", klass="xla-rewrite")
    assert failed(report) == {"firing.program_differs"}


def test_a_rewrite_written_with_out_and_in_place_operators_is_a_rewrite(write_module):
    """Operators that write into a buffer they were handed (out=, in place) compute: they are
    recorded by what they read, and followed from the output through what they write."""
    written = write_module("written_out.py", """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        m = torch.empty((x.shape[0], 1), dtype=x.dtype)
        torch.amax(x, dim=1, keepdim=True, out=m)
        torch.sub(x, m, out=out)
        out.exp_()
        return out.div_(out.sum(dim=1, keepdim=True))
""")
    report = gate(SOFTMAX, str(written), klass="xla-rewrite")
    assert report.status == "PASS", failed(report)


@pytest.mark.full
def test_a_rewrite_that_runs_the_references_calls_is_a_no_op(write_module):
    same = write_module("same_calls.py", """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
""")
    report = gate(SOFTMAX, str(same), klass="xla-rewrite")
    assert failed(report) == {"firing.program_differs"}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "kgate", *args], capture_output=True, text=True, cwd=EXAMPLES.parent)


@pytest.mark.full
def test_weights_that_do_not_line_up_are_refused_with_their_names():
    done = _cli("gate", "-r", f"examples/{LINEAR}", "-c", "examples/model_torch/linear_relu_bad_renamed.py", "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert "linear.weight, linear.bias" in error["problem"] and "w, b" in error["problem"]


@pytest.mark.full
def test_a_torch_rewrite_is_verified_and_its_receipt_checks(tmp_path):
    receipt = tmp_path / "r.json"
    done = _cli("verify", "-r", f"examples/{SOFTMAX}", "-c", "examples/model_torch/softmax_rewrite.py", "--class",
                "rewrite", "--budget", "2", "-o", str(receipt), "--json")
    assert done.returncode in (0, 1), done.stdout[-2000:]  # a pass, with the CPU's noise advisories
    report = json.loads(done.stdout)
    assert report["device"]["versions"]["torch"].startswith("2.")
    assert report["gates"]["integrity"]["status"] == "PASS"
    program = next(c for c in report["gates"]["integrity"]["checks"] if c["name"] == "measure.reference_program_unchanged")
    assert program["status"] == "PASS"  # the reference's torch calls, recorded before the candidate was imported
    timed = next(c for c in report["gates"]["integrity"]["checks"] if c["name"] == "measure.program_as_checked")
    assert timed["status"] == "PASS"  # the candidate's torch calls in the timing process, as the checks recorded them
    checked = _cli("verify-receipt", str(receipt), "--json")
    assert checked.returncode == 0, checked.stdout[-2000:]


@pytest.mark.full
def test_a_kernel_that_allocates_a_workspace_on_its_first_call_is_one_program():
    done = _cli("verify", "-r", f"examples/{SOFTMAX}", "-c", "examples/model_torch/softmax_triton_workspace.py",
                "--time-interpreted", "--set", "batch_size=64", "--set", "dim=256", "--budget", "2", "--sessions", "2",
                "--json")
    report = json.loads(done.stdout)
    checks = {c["name"]: c["status"] for c in report["gates"]["integrity"]["checks"]}
    assert checks["measure.program_as_checked"] == "PASS" and checks["measure.candidate_program_unchanged"] == "PASS"


@pytest.mark.full
def test_a_rewrite_that_calls_the_library_only_in_the_timing_process_is_an_anomaly():
    """It reads its process's command line: the written-out softmax where checked, torch.softmax where
    timed. Its answers agree everywhere; the torch calls the timing process recorded do not."""
    done = _cli("verify", "-r", f"examples/{SOFTMAX}", "-c",
                "examples/model_torch/softmax_bad_library_call_in_the_timing_process.py", "--class", "rewrite",
                "--set", "batch_size=64", "--set", "dim=256", "--budget", "1", "--sessions", "2", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["status"] == "ANOMALY", done.stdout[-2000:]
    checks = {c["name"]: c for c in report["gates"]["integrity"]["checks"]}
    assert checks["measure.program_as_checked"]["status"] == "FAIL", checks["measure.program_as_checked"]
    assert checks["measure.same_answer_as_checked"]["status"] == "PASS"


@pytest.mark.full
@pytest.mark.parametrize("candidate, says", [
    ("softmax_bad_patch_taken_back_in_reference.py", "torch.softmax was rebound (before a timed reference call"),
    ("softmax_bad_profile_hook_slows_reference.py", "sys.getprofile() changed"),
])
def test_a_patch_left_for_one_reference_call_and_taken_back_inside_it_is_an_anomaly(candidate, says):
    """An eager reference looks its functions up at every call: a patch (or an interpreter hook)
    the candidate leaves for the next reference call alone, and takes back inside it, is gone by
    the round's end. kgate reads them before each timed reference call."""
    done = _cli("measure", "-r", f"examples/{SOFTMAX}", "-c", f"examples/model_torch/{candidate}", "--budget", "2",
                "--set", "batch_size=64", "--set", "dim=512", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["status"] == "ANOMALY", done.stdout[-2000:]
    check = next(c for c in report["gates"]["integrity"]["checks"] if c["name"] == "process_untouched")
    assert check["status"] == "FAIL" and says in check["detail"], check


@pytest.mark.parametrize("candidate", [
    "softmax_bad_maps_every_allocation.py",
    pytest.param("softmax_bad_trims_the_heap_after_each_call.py", marks=pytest.mark.full),
])
def test_an_allocator_set_to_slow_the_reference_s_allocations_is_an_anomaly(candidate):
    """Set through ctypes (at import; on its first call, with a trim after each): every allocation
    by a fresh mmap. The candidate allocates nothing; the reference's calls pay page faults. Nothing
    Python sees changes; the reference's calls take page faults they did not take before the import."""
    done = _cli("measure", "-r", f"examples/{SOFTMAX}", "-c", f"examples/model_torch/{candidate}", "--budget", "2",
                *SHORT, "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["status"] == "ANOMALY", done.stdout[-2000:]
    check = next(c for c in report["gates"]["integrity"]["checks"] if c["name"] == "reference_undisturbed")
    assert check["status"] == "FAIL" and "before the candidate's import" in check["detail"], check


@pytest.mark.full
def test_an_honest_rewrite_leaves_the_reference_undisturbed():
    done = _cli("measure", "-r", f"examples/{SOFTMAX}", "-c", "examples/model_torch/softmax_rewrite.py", "--budget", "2",
                *SHORT, "--json")
    report = json.loads(done.stdout)
    check = next(c for c in report["gates"]["integrity"]["checks"] if c["name"] == "reference_undisturbed")
    assert check["status"] == "PASS", check


@pytest.mark.full
def test_a_thread_started_at_import_and_renamed_after_a_pool_is_counted():
    """A Python thread the candidate starts at its import, its OS name a framework pool's, burning
    CPU while the reference is timed: counted against the threads alive before the import."""
    done = _cli("measure", "-r", f"examples/{SOFTMAX}", "-c", "examples/model_torch/softmax_bad_renamed_burner_thread.py",
                "--budget", "2", "--set", "batch_size=64", "--set", "dim=512", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["status"] == "ANOMALY", done.stdout[-2000:]
    checks = {c["name"]: c["status"] for c in report["gates"]["integrity"]["checks"]}
    assert checks["threads_quiet"] == "FAIL", checks


@pytest.mark.full
@pytest.mark.parametrize("candidate", ["softmax_bad_reuses_freed_output.py", "softmax_bad_reuses_uninitialized_new.py"])
def test_an_output_left_to_the_allocator_while_timed_is_an_anomaly(candidate):
    """Timed calls on the same input buffers, one process for both legs: an unwritten output
    that lands on the last answer's freed block would look right and fast. The timed calls'
    outputs are compared with the first one's (after NaN poisoning): an ANOMALY."""
    done = _cli("measure", "-r", f"examples/{SOFTMAX}", "-c", f"examples/model_torch/{candidate}", "--budget", "2",
                "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["status"] == "ANOMALY", done.stdout[-2000:]
    checks = {c["name"]: c["status"] for c in report["gates"]["integrity"]["checks"]}
    assert checks["outputs_stable"] == "FAIL", checks


@pytest.mark.full
def test_an_interpreted_triton_kernel_is_not_timed_by_default():
    done = _cli("measure", "-r", f"examples/{SOFTMAX}", "-c", "examples/model_torch/softmax_triton.py", "--json")
    report = json.loads(done.stdout)
    timing = report["gates"]["timing"]
    assert timing["status"] == "SKIPPED" and "Triton interpreter" in timing["reason"]


def test_xla_flags_are_refused_for_a_torch_problem():
    done = _cli("flags", "-r", f"examples/{SOFTMAX}", "-c", "examples/model_torch/softmax_rewrite.py", "--flag", "XLA_FLAGS=--xla_cpu_enable_fast_math=true", "--json")
    assert done.returncode == 2
    assert "torch problem" in json.loads(done.stdout)["error"]["problem"]


@pytest.mark.full
def test_a_kernelbench_level_runs_as_a_suite(tmp_path):
    import shutil

    level, run1, run2, run3 = (tmp_path / name for name in ("level1", "run1", "run2", "run3"))
    for folder in (level, run1, run2, run3):
        folder.mkdir()
    # a candidate whose forward segfaults: that candidate's row, and the suite goes on
    (run3 / "19_softmax.py").write_text("import ctypes\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                                        "    def forward(self, x):\n        ctypes.string_at(0)\n        return x\n")
    shutil.copy(EXAMPLES / SOFTMAX, level / "19_softmax.py")
    shutil.copy(EXAMPLES / LINEAR, level / "20_linear_relu.py")  # no candidate in any folder: no row
    shutil.copy(EXAMPLES / "model_torch/softmax_triton.py", run1 / "19_softmax.py")
    shutil.copy(EXAMPLES / "model_torch/softmax_bad_ghost_launch.py", run2 / "19_softmax.py")
    shutil.copy(EXAMPLES / "model_torch/softmax_triton.py", run2 / "softmax_triton.py")  # what the ghost imports
    done = _cli("suite", str(level), "--candidates", str(run1), "--candidates", str(run2), "--candidates", str(run3),
                "--results", str(tmp_path / "results"), "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["candidate"]: row for row in json.loads(done.stdout)["rows"]}
    assert set(rows) == {"run1/19_softmax.py", "run2/19_softmax.py", "run3/19_softmax.py"}
    crashed = rows["run3/19_softmax.py"]
    assert crashed["status"] == "GATE_FAIL" and "SIGSEGV" in crashed["reason"], crashed
    triton = rows["run1/19_softmax.py"]  # correct, and interpreted here: verified, never timed
    assert triton["status"] == "PASS" and triton["speedup"] is None and triton["interpreted"] is True
    assert rows["run2/19_softmax.py"]["status"] == "GATE_FAIL"
    assert "kernel_reaches_output" in rows["run2/19_softmax.py"]["reason"]
    summary = json.loads(done.stdout)["summary"]
    assert summary["fast_p"]["1"] == 0.0


@pytest.mark.full
def test_a_torch_problem_is_recorded_from_stub_to_verdict(tmp_path):
    """The experiment record on a KernelBench-format torch problem, as on a JAX one: a family (its
    graded dtype the one get_inputs makes), a stub, a candidate gated under the family's terms and
    committed, then `verdict --verify`, which runs `verify --mode full` at filing time; lint clean."""
    import shutil
    import tomllib

    from conftest import home_repo, kgate

    root = home_repo(tmp_path / "code", EXAMPLES / SOFTMAX)

    def ok(*args):
        proc = kgate(root, *args)
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
        return proc

    ok("init")
    ok("family", "new", "softmax", "--reference", "ops/reference.py", "--target", "ops/softmax.py",
       "--set", "batch_size=64", "--set", "dim=512")
    ok("stub", "softmax", "--class", "rewrite", "--bar", "speedup > 1.0x", "--diagnosis", "torch's softmax, one op",
       "--reading", "torch.softmax", "--hypothesis", "Written out, the softmax is as fast.",
       "--mechanism", "exp of the shifted rows over their sum", "--predicted", "p50 as fast as torch's at the op-point",
       "--criterion", "the speedup interval lies below 0.9x", "--plan", "cand1: written out - predict 1.0x")
    ok("ledger", "softmax", "--loaded", "torch.softmax")
    work = root / "kernel_experiments" / "softmax" / ".repo" / "ops"
    shutil.copy(EXAMPLES / "model_torch" / "softmax_rewrite.py", work / "softmax.py")
    receipt = tmp_path / "cand1.json"
    done = subprocess.run([sys.executable, "-m", "kgate", "gate", "--family", "softmax", "-o", str(receipt)], cwd=work,
                          capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stdout[-2000:]
    assert json.loads(receipt.read_text())["dtype"] is None  # no --dtype: the family grades the reference's own
    ok("cand", "softmax", "cand1", "--receipt", str(receipt), "--why", "kept: the only candidate")
    filed = kgate(root, "verdict", "softmax", "v001", "--verify", "--budget", "2", "--lock-dir", str(tmp_path), "--json")
    assert filed.returncode in (0, 1), filed.stderr[-3000:]
    verdict = json.loads(filed.stdout)
    assert verdict["verdict"] in ("supported", "refuted", "inconclusive"), verdict
    binding = tomllib.loads((root / "kernel_experiments" / "softmax" / "family.toml").read_text())["family"]
    assert binding["graded_dtype"] == "native"
    row = (root / "kernel_experiments" / "softmax" / "RESULTS.tsv").read_text().splitlines()[1].split("\t")
    assert row[0] == "v001" and row[9] == verdict["verdict"]
    filed_receipt = root / "kernel_experiments" / "softmax" / ".repo" / "kernel_experiments" / "softmax" / "receipts"
    sealed = json.loads((filed_receipt / "v001-verify.json").read_text())
    assert sealed["mode"] == "full" and sealed["gates"]["capture"]["status"] == "PASS"  # torch's profiler, named by sha256
    assert {f["path"] for f in sealed["gates"]["capture"]["files"]} == {"operators.txt", "perfetto_trace.json.gz"}
    lint = json.loads(kgate(root, "lint", "softmax", "--json").stdout)
    assert lint["status"] in ("CLEAN", "ADVISORY"), lint["findings"]


def test_each_timed_call_sees_values_and_memory_no_earlier_call_saw():
    """A torch timed call's floating inputs have each element times its own drawn factor, in new
    memory (an answer cached by identity, buffer, version or content, or rescaled from the last
    call's, is never the call's); with nothing floating, every input is made afresh from a drawn
    seed; `output(draw)` remakes exactly the inputs a timed call saw, for grading it."""
    import numpy as np
    import torch

    from kgate import clock
    from kgate.backends.torch_backend import VARIED, TorchTimedCall

    seen = []

    def fn(x, n):
        seen.append((x.data_ptr(), x.clone(), n))
        return x * 2

    x = torch.randn(8, 16)
    timed = TorchTimedCall(fn, (x, 3), clock.perf_counter_ns, None, keep_outputs=True)
    draws, taken = [], []
    for _ in range(5):
        timed(lambda read: taken.append(read()))
        draws.append(timed.last_draw)
    assert len(set(draws)) == 5 and "own drawn factor" in timed.varied
    values = [v for _, v, _ in seen]
    ratios = [v / x for v in values]
    assert all(((1 + VARIED[0] - 1e-6 <= r) & (r <= 1 + VARIED[1] + 1e-6)).all() for r in ratios)
    assert all(r.std() > 1e-3 for r in ratios)  # a factor per element: no one number relates two calls' inputs
    assert all(not torch.equal(a, b) for i, a in enumerate(values) for b in values[i + 1:])
    assert x.data_ptr() not in {p for p, _, _ in seen} and all(n == 3 for _, _, n in seen)
    last = taken[-1]
    np.testing.assert_array_equal(last.leaves[0], (values[-1] * 2).numpy())
    np.testing.assert_array_equal(timed.output(draws[-1]).leaves[0], last.leaves[0])  # the same inputs remade
    np.testing.assert_array_equal(timed.output().leaves[0], (x * 2).numpy())  # untimed: the inputs as given

    ids = torch.arange(6)
    made = []

    def remake(seed):
        made.append(seed)
        return (torch.randint(0, 100, (6,), generator=torch.Generator().manual_seed(seed)),)

    timed = TorchTimedCall(lambda i: i + 1, (ids,), clock.perf_counter_ns, None, keep_outputs=True, remake=remake)
    timed(), timed(lambda read: taken.append(read()))
    assert "create_inputs" in timed.varied and made[-1] == timed.last_draw
    np.testing.assert_array_equal(timed.output(timed.last_draw).leaves[0], taken[-1].leaves[0])
    same = TorchTimedCall(lambda i: i + 1, (ids,), clock.perf_counter_ns, None, keep_outputs=True,
                          remake=lambda seed: (ids.clone(),))  # a create_inputs that ignores the seed
    assert same.varied == ""


# The quick case times a few short rounds: on a busy 2-core machine the default rounds (each call after a
# 64 MiB cache flush) took minutes, and every timed call of this candidate is wrong.
SHORT = ("--sessions", "2", "--per-round", "8", "--min-rounds", "3", "--max-rounds", "4")


@pytest.mark.parametrize("candidate,check,short", [
    ("model_torch/softmax_bad_garbage_when_timed_by_caller.py", "timed_outputs_agree", SHORT),
    ("model_torch/softmax_bad_finished_when_an_older_output_is_dropped.py", "timed_outputs_agree", SHORT),
    pytest.param("model_torch/softmax_bad_finished_when_its_input_is_freed.py", "timed_outputs_agree", SHORT,
                 marks=pytest.mark.full),
    pytest.param("model_torch/softmax_bad_stale_when_called_in_a_burst.py", "timed_outputs_agree", (),
                 marks=pytest.mark.full),
    pytest.param("rmsnorm/bad_other_program_in_later_sessions.py", "candidate_program_unchanged", (),
                 marks=pytest.mark.full),
])
def test_a_candidate_that_answers_otherwise_when_it_is_timed_is_an_anomaly(candidate, check, short):
    """Each passes the gate (checked, it computes the answer). Timed, it tells a timed call from
    its caller, its call count or its trace count, and returns garbage, a stale answer, another
    program's, or an output that kgate's own bookkeeping after the window (letting go of an older
    output, of the call's inputs) fills in: the outputs of timed calls drawn at random are graded,
    read the moment their window closes, and every session's program held to the first's."""
    reference = "rmsnorm/reference.py" if candidate.startswith("rmsnorm") else SOFTMAX
    done = _cli("measure", "-r", f"examples/{reference}", "-c", f"examples/{candidate}", "--budget", "2", *short, "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["status"] == "ANOMALY", done.stdout[-2000:]
    checks = {c["name"]: c["status"] for c in report["gates"]["integrity"]["checks"]}
    assert checks[check] == "FAIL", checks
    agreement = report["gates"]["timing"]["agreement"]
    assert all(r["timed_calls_graded"] >= 1 for r in agreement), agreement
