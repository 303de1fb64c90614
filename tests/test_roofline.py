"""The roofline (HACKS.md class 17): a time below the physical floor of the declared work is
an integrity FAIL, never a win; otherwise each leg's achieved rate and roofline utilization."""

import json
import math

import pytest

from conftest import kgate
from kgate.gates.roofline import Peaks, Work, cpu_peaks, evaluate, gpu_peaks, work_problem

PEAKS = Peaks(1e12, 1e11, "a test device: 1 TFLOP/s, 100 GB/s")


def test_the_floor_is_the_slower_of_compute_and_memory_and_utilization_is_floor_over_time():
    work = Work(flops=1e9, bytes=1e9)  # 1 ms of compute, 10 ms of memory traffic
    check, numbers = evaluate(work, PEAKS, {"reference": 0.04, "candidate": 0.02})
    assert check.status == "PASS" and numbers["floor_s"] == pytest.approx(0.01)
    assert numbers["legs"]["candidate"]["roofline_util"] == pytest.approx(0.5)
    assert numbers["legs"]["candidate"]["tflops"] == pytest.approx(0.05)
    assert numbers["legs"]["reference"]["gb_per_s"] == pytest.approx(25.0)


def test_a_candidate_below_the_floor_fails_as_an_artifact_and_both_below_blames_the_declaration():
    work = Work(bytes=1e9)  # 10 ms at 100 GB/s
    check, _ = evaluate(work, PEAKS, {"reference": 0.05, "candidate": 0.004})
    assert check.status == "FAIL" and "the candidate's median 4000 us" in check.detail
    assert "artifact" in check.fix
    check, _ = evaluate(work, PEAKS, {"reference": 0.005, "candidate": 0.004})
    assert check.status == "FAIL" and "overstate" in check.fix
    assert evaluate(Work(flops=1e9), PEAKS, {"reference": 0.001, "candidate": 0.001})[0].status == "PASS"  # at it


@pytest.mark.parametrize("value", ["many", float("nan"), -1.0, float("inf"), True, None])
def test_a_declaration_that_is_not_a_count_is_named(value):
    assert work_problem("get_flops", value)
    assert work_problem("get_flops", 3) == "" and work_problem("get_bytes", 2.5e9) == ""


def test_peaks_are_upper_bounds_a_cpu_core_never_reaches_and_gpus_come_from_their_datasheets():
    two = cpu_peaks(2)
    assert two.flops_per_s == pytest.approx(2 * 6e9 * 64) and two.bytes_per_s == pytest.approx(2 * 6e9 * 192)
    assert gpu_peaks("NVIDIA H200").bytes_per_s == pytest.approx(4.8e12)
    assert gpu_peaks("NVIDIA H100 80GB HBM3").bytes_per_s == pytest.approx(3.35e12)
    assert gpu_peaks("Some Other GPU") is None
    assert math.isinf(evaluate(Work(flops=1.0), PEAKS, {"candidate": 0.0})[1]["legs"]["candidate"]["roofline_util"])


@pytest.mark.full
def test_measure_fails_a_candidate_timed_below_the_floor_of_the_declared_work(write_module):
    # The reference is slow (a loop whose result is multiplied by zero) and declares traffic worth
    # 2 ms at this machine's ceiling; the candidate computes the same answer in well under that.
    ref = write_module("reference.py", (
        "import os\nimport jax\nimport jax.numpy as jnp\nfrom kgate.gates.roofline import cpu_peaks\n"
        "CONFIG = {'n': 128}\n"
        "def create_inputs(seed=0):\n    return (jax.random.normal(jax.random.key(seed), (CONFIG['n'], CONFIG['n'])),)\n"
        "def workload(x):\n    busy = jax.lax.fori_loop(0, 3000, lambda i, a: jnp.tanh(a) + 0.5, x)\n"
        "    return x * 2.0 + 0.0 * busy\n"
        "def get_bytes():\n    return 2e-3 * cpu_peaks(os.cpu_count() or 1).bytes_per_s\n"))
    cand = write_module("fast.py", "def workload(x):\n    return x * 2.0\n")
    proc = kgate(ref.parent, "measure", "-r", ref, "-c", cand, "--budget", "2", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 2 and report["status"] == "ANOMALY", proc.stderr[-2000:]
    check = {c["name"]: c for c in report["gates"]["integrity"]["checks"]}["physically_possible"]
    assert check["status"] == "FAIL" and "the candidate's median" in check["detail"]
    assert "the reference's" not in check["detail"]  # the slow reference is above its floor
    roofline = report["gates"]["timing"]["roofline"]
    assert roofline["floor_s"] == pytest.approx(2e-3) and roofline["legs"]["candidate"]["roofline_util"] > 1


def test_a_receipt_s_roofline_is_re_derived_from_its_medians():
    from kgate.gates.common import Check, GateResult
    from kgate.record.filing import _roofline_cells
    from kgate.verify.receipt import rederive_roofline

    check, numbers = evaluate(Work(flops=2e9, bytes=1e8), PEAKS, {"reference": 0.01, "candidate": 0.005})
    timing = {"reference": {"p50_ms": 10.0}, "candidate": {"p50_ms": 5.0}, "roofline": numbers}
    integrity = GateResult("integrity", (check,)).to_json()
    assert rederive_roofline(timing, integrity) == []
    assert _roofline_cells(numbers["legs"]["candidate"]) == {"tflops": "0.4", "roofline_util": "0.4"}
    faster = {**timing, "candidate": {"p50_ms": 0.5}}  # a median edited below the floor: the PASS no longer follows
    found = rederive_roofline(faster, integrity)
    assert any("physically_possible recorded ['PASS'], the numbers give FAIL" in p for p in found)
    assert any("candidate's roofline numbers" in p for p in found)
    assert _roofline_cells({}) == {"tflops": "—", "roofline_util": "—"}
    # the numbers cut out, the check with them (or left graded): a kgate that always says is caught
    bare = {k: v for k, v in timing.items() if k != "roofline"}
    assert any("does not" in p for p in rederive_roofline(bare, {"checks": []}, "0.3.0"))
    assert any("without the roofline numbers" in p for p in rederive_roofline(bare, integrity, "0.3.0"))
    skipped = GateResult("integrity", (Check("physically_possible", "SKIPPED", "declares no work"),)).to_json()
    assert rederive_roofline(bare, skipped, "0.3.0") == [] and rederive_roofline(bare, {"checks": []}) == []


@pytest.mark.full
def test_a_reference_that_declares_no_work_says_the_floor_was_not_checked(write_module):
    ref = write_module("reference.py", (
        "import jax\nCONFIG = {'n': 64}\n"
        "def create_inputs(seed=0):\n    return (jax.random.normal(jax.random.key(seed), (CONFIG['n'], CONFIG['n'])),)\n"
        "def workload(x):\n    return x * 2.0\n"))
    cand = write_module("same.py", "def workload(x):\n    return x + x\n")
    report = json.loads(kgate(ref.parent, "measure", "-r", ref, "-c", cand, "--budget", "1", "--json").stdout)
    check = {c["name"]: c for c in report["gates"]["integrity"]["checks"]}["physically_possible"]
    assert check["status"] == "SKIPPED" and "declares no work" in check["detail"]
    assert "roofline" not in report["gates"]["timing"]
