"""What kgate does on a GPU that it cannot do on the CPU: Triton kernels compiled and launched for
real (recorded through Triton's compiled launcher), CUDA-event timing, and work a candidate leaves on
a side stream. The pure parts run everywhere; the rest is marked `accelerator` and skipped without
a CUDA GPU (it was run on an H200: see the issue notes)."""

import pytest

from conftest import EXAMPLES, failed, gate
from kgate.backends.base import Ablation, KernelSite, ProgramFacts
from kgate.gates.firing import audit
from kgate.gates.integrity import stream_check

SOFTMAX = "model_torch/softmax_reference.py"
BIG = {"batch_size": 8192, "dim": 16384}  # 512 MiB in, 512 MiB out: a softmax longer than its launch on an H200


def test_stream_quiet_passes_a_call_whose_device_goes_idle_with_its_stream():
    # an H200's numbers for the honest Triton softmax: 6.2 us vs the reference's 5.7 us
    (check,) = stream_check([6200, 6100, 6300], [5700, 5800, 5600], candidate_p50_ms=0.068, timed_calls=3)
    assert check.status == "PASS" and "no work escapes" in check.detail


@pytest.mark.parametrize("candidate_us, p50_ms", [(15.2, 0.0697), (120.4, 0.088), (12.0, 0.010)])
def test_stream_quiet_fails_work_left_on_a_side_stream(candidate_us, p50_ms):
    # the H200's numbers for a kernel launched on a side stream, and for the tail of the work moved there
    (check,) = stream_check([int(candidate_us * 1e3)] * 3, [6900, 7000, 6800], candidate_p50_ms=p50_ms, timed_calls=3)
    assert check.status == "FAIL" and "another stream" in check.detail and check.fix


def test_stream_quiet_sees_work_left_behind_on_a_third_of_the_calls():
    candidate = [6000] * 70 + [200_000] * 30  # 200 us left on a side stream on 30% of the calls
    (check,) = stream_check(candidate, [6000] * 100, candidate_p50_ms=0.1, timed_calls=100)
    assert check.status == "FAIL" and "upper quartile" in check.detail


def test_stream_quiet_fails_when_the_timed_calls_gaps_are_missing():
    (check,) = stream_check([6000] * 10, [6000] * 100, candidate_p50_ms=0.1, timed_calls=100)
    assert check.status == "FAIL" and "could not be evaluated" in check.detail


def test_a_triton_launch_on_a_gpu_is_the_compiled_kernel_evidence():
    site = KernelSite("triton:softmax_kernel", "softmax_kernel", True, True)
    launched = ProgramFacts("gpu", (site,), "launch 0", "", (), Ablation(True, "", 8, 8), kernel_kind="Triton launch")
    check = next(c for c in audit("kernel-authored", launched).checks if c.name == "compiled_custom_call")
    assert check.status == "PASS" and "compiled launcher" in check.detail
    none = ProgramFacts("gpu", (), "", "", (), Ablation(False, "no kernel in program"), kernel_kind="Triton launch")
    assert [c.status for c in audit("kernel-authored", none).checks if c.name == "kernel_present"] == ["FAIL"]


def _cuda() -> bool:
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    return torch.cuda.is_available()


@pytest.mark.accelerator
def test_a_triton_kernel_passes_the_gate_compiled_on_a_gpu_and_a_ghost_launch_fails():
    if not _cuda():
        pytest.skip("needs a CUDA GPU")
    report = gate(SOFTMAX, "model_torch/softmax_triton.py")
    assert report.status == "PASS", failed(report)
    assert report.context["device"]["interpreted"] is False
    checks = {c.name: c for c in report.gates["firing"].checks}
    assert checks["compiled_custom_call"].status == "PASS" and checks["kernel_carries_the_answer"].status == "PASS"
    bad = gate(SOFTMAX, "model_torch/softmax_bad_ghost_launch.py")
    assert "firing.kernel_reaches_output" in failed(bad)


@pytest.mark.accelerator
@pytest.mark.parametrize("candidate, escapes", [
    ("softmax_triton.py", False),
    ("softmax_bad_side_stream.py", True),
    ("softmax_bad_side_stream_tail.py", True),
])
def test_work_left_on_a_side_stream_is_an_anomaly_on_a_gpu(candidate, escapes):
    if not _cuda():
        pytest.skip("needs a CUDA GPU")
    from kgate.verify.measure import MeasureRequest, run_measure

    report = run_measure(MeasureRequest(reference=EXAMPLES / SOFTMAX, candidate=EXAMPLES / "model_torch" / candidate,
                                        overrides=BIG, budget_s=6.0))
    check = next(c for c in report.gates["integrity"].checks if c.name == "stream_quiet")
    assert check.status == ("FAIL" if escapes else "PASS"), check.detail
    assert (report.status == "ANOMALY") == escapes
    assert "CUDA event pair" in report.gates["timing"].details["method"]["clock"]


@pytest.mark.accelerator
def test_the_l2_flush_rewrites_a_device_buffer_larger_than_any_l2_before_each_timed_call():
    if not _cuda():
        pytest.skip("needs a CUDA GPU")
    import torch

    from kgate.backends import get_backend

    before = torch.cuda.memory_allocated()
    flush, said = get_backend("torch").cache_flusher()
    held = torch.cuda.memory_allocated() - before
    assert held >= 256 * 2**20 and "256 MiB device buffer" in said  # an H200's L2 is 50 MiB
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    flush()
    end.record()
    torch.cuda.synchronize()
    assert start.elapsed_time(end) > 0.01  # 256 MiB read and written: tens of microseconds, not a no-op


@pytest.mark.accelerator
def test_a_pallas_kernel_is_a_custom_call_in_the_program_compiled_for_a_gpu_and_a_ghost_is_not():
    jax = pytest.importorskip("jax")
    if jax.devices()[0].platform != "gpu":
        pytest.skip("needs JAX on a GPU")
    report = gate("rmsnorm/reference.py", "rmsnorm/pallas.py")
    assert report.status == "PASS", failed(report)
    checks = {c.name: c.status for c in report.gates["firing"].checks}
    assert checks["compiled_custom_call"] == "PASS", checks
    assert "firing.compiled_custom_call" in failed(gate("rmsnorm/reference.py", "rmsnorm/bad_ghost.py"))
