"""`kgate measure` and `kgate calibrate` end to end, in-process, with small budgets.

No test asserts a speed target: only directions and effects far outside the noise
(a 16-pass slowdown, tampering, escaped work), and the report's shape.
"""

import math

from conftest import EXAMPLES
from kgate.gates.bar import parse_bar
from kgate.verify.calibrate import CalibrateRequest, run_calibrate
from kgate.verify.measure import MeasureRequest, run_measure

RMS = EXAMPLES / "rmsnorm"
SMALL = {"seq_len": 64}


def measure(candidate, **kwargs):
    kwargs.setdefault("overrides", SMALL)
    kwargs.setdefault("budget_s", 3.0)
    return run_measure(MeasureRequest(reference=RMS / "reference.py", candidate=RMS / candidate, **kwargs))


def failed(report):
    return {c.name for g in report.gates.values() for c in g.failures}


def test_report_has_the_numbers_and_the_methodology_and_compiled_cpu_code_is_not_interpreted():
    report = measure("aa_copy.py", bar=parse_bar("p50 beats naive by >2% AND 3σ"), order_seed=1)
    data = report.to_json()
    timing = data["gates"]["timing"]
    for leg in ("reference", "candidate"):
        assert {"p50_ms", "mean_ms", "std_ms", "min_ms", "iqr_ms", "n"} <= set(timing[leg])
        assert timing[leg]["n"] == len(sum(timing["samples_ms"][leg], []))
    assert {"estimate", "low", "high"} <= set(timing["speedup"])
    assert timing["sigma_ms"] >= 0 and "minimum_detectable_speedup" in timing
    assert "stop_reason" in timing["method"] and timing["method"]["rounds"] >= 2
    assert data["interpreted"] is False  # no kernel on either side: compiled XLA:CPU code, the CPU is the device
    assert not any(c["name"] == "interpreted" for c in timing["checks"])
    # A/A: the bar must not be MET (a false claim); ANOMALY would mean a broken rig.
    assert data["gates"]["bar"]["outcome"] != "MET"
    assert data["status"] in {"FAIL", "PASS"}


def test_known_slowdown_is_slower_with_an_interval_excluding_one_and_no_anomaly(write_module):
    slow = write_module(
        "slow16.py",
        (RMS / "slow_extra_work.py").read_text().replace("passes=1", "passes=16"),
    )
    report = run_measure(MeasureRequest(reference=RMS / "reference.py", candidate=slow, overrides=SMALL, budget_s=3.0))
    speedup = report.gates["timing"].details["speedup"]
    assert speedup["high"] < 1.0
    assert report.status == "PASS", failed(report)


def test_timer_patching_is_an_anomaly_naming_the_timer():
    report = measure("bad_timer_patch.py")
    assert report.status == "ANOMALY"
    check = next(c for c in report.gates["integrity"].failures if c.name == "timer_untouched")
    assert "time.perf_counter" in check.detail and "time.perf_counter_ns" in check.detail
    import time

    from kgate import clock

    assert time.perf_counter_ns is clock.BOUND["perf_counter_ns"]  # restored after the run


def test_wrapping_the_reference_is_caught_and_does_not_inflate_the_ratio():
    report = measure("bad_wraps_reference.py")
    assert "reference_untouched" in failed(report)
    # kgate timed the reference it bound before the import: the A/A-like ratio stays near 1,
    # far from the ~3x a harness timing the wrapped reference would report.
    assert report.gates["timing"].details["speedup"]["estimate"] < 1.5


def test_work_escaping_into_a_background_thread_is_an_anomaly():
    report = measure("bad_background_work.py")
    assert report.status == "ANOMALY" and "threads_quiet" in failed(report)


def test_candidate_that_cannot_run_fails_timing(write_module):
    bad = write_module("broken.py", "def workload(x, w):\n    raise RuntimeError('no kernel for this shape')\n")
    report = run_measure(MeasureRequest(reference=RMS / "reference.py", candidate=bad, overrides=SMALL))
    assert report.status == "FAIL"
    assert "no kernel for this shape" in report.gates["timing"].failures[0].detail


def test_calibrate_reports_noise_floor_dispatch_floor_and_measurability():
    report = run_calibrate(CalibrateRequest(reference=RMS / "reference.py", overrides=SMALL, budget_s=2.0))
    cal = report.gates["calibration"].details
    assert cal["dispatch_floor_ms"] > 0 and cal["noise_floor"] >= 0
    assert math.isfinite(cal["aa_speedup"]["estimate"])
    assert "1.0200" in cal["bar_measurable"]
    assert any(c.name == "aa_unbiased" for c in report.gates["calibration"].checks)


def test_a_kernel_in_interpret_mode_is_not_timed_by_default_and_the_bar_stays_undecided():
    report = measure("pallas.py", overrides={"seq_len": 16}, budget_s=1.0, bar=parse_bar("speedup > 1.01x"))
    data = report.to_json()
    assert data["interpreted"] is True
    assert data["gates"]["timing"]["status"] == "SKIPPED" and "--time-interpreted" in data["gates"]["timing"]["reason"]
    assert "samples_ms" not in data["gates"]["timing"] and "speedup" not in data["gates"]["timing"]
    assert data["gates"]["bar"]["status"] == "SKIPPED" and data["gates"]["bar"]["outcome"] == "UNDECIDED"
    assert data["gates"]["integrity"]["status"] == "PASS"
    assert data["exit_code"] == 1 and any("timing skipped" in a for a in data["advisories"])  # never a silent 0
    assert data["next_step"].startswith("not timed")


def test_an_interpreted_reference_is_not_calibrated_by_default(write_module):
    kernel_reference = write_module("kernel_reference.py", (
        f"import sys\nsys.path.insert(0, {str(RMS)!r})\n"
        "from reference import CONFIG, create_inputs\nfrom pallas import workload\n"))
    report = run_calibrate(CalibrateRequest(reference=kernel_reference, overrides={"seq_len": 16}, budget_s=1.0))
    assert report.gates["calibration"].status == "SKIPPED" and report.gates["timing"].status == "SKIPPED"
    assert report.exit_code == 1


def test_time_interpreted_times_it_and_labels_the_timings_interpreted():
    report = measure("pallas.py", overrides={"seq_len": 16}, budget_s=1.0, bar=parse_bar("speedup > 1.01x"),
                     time_interpreted=True)
    data = report.to_json()
    assert data["interpreted"] is True
    assert any(c["name"] == "interpreted" for c in data["gates"]["timing"]["checks"])
    assert any(c["name"] == "interpreted" for c in data["gates"]["bar"]["checks"])
