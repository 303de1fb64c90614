"""`kgate measure` and `kgate calibrate` end to end, in-process, with small budgets.

No test asserts a speed target: only directions and effects far outside the noise
(a 16-pass slowdown, tampering, escaped work), and the report's shape.
"""

import json
import math

import numpy as np
import pytest

from conftest import EXAMPLES
from kgate.gates import stats
from kgate.gates.bar import parse_bar
from kgate.jsonio import clean
from kgate.verify.calibrate import CalibrateRequest, run_calibrate
from kgate.verify.measure import MeasureRequest, run_measure

# Directions and effects, measured: each runs alone under `make test-full` (see the Makefile).
pytestmark = pytest.mark.timing

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
    # the power stated before any candidate is timed: as many sessions as the budget held
    assert cal["power"]["sessions_in_budget"] == cal["power"]["sessions_seen"] >= 3
    assert cal["bar_measurable"]["1.0200"] == (cal["detectable_speedup"] < 1.02)
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


# -- the sequential stop, and a receipt that re-derives it ------------------------------------


def test_a_clear_win_stops_as_soon_as_the_bar_is_decided_and_records_every_look():
    cumsum = EXAMPLES / "cumsum"
    report = run_measure(MeasureRequest(reference=cumsum / "reference.py", candidate=cumsum / "xla_rewrite.py",
                                        bar=parse_bar("speedup > 1.5x"), budget_s=20.0))  # measured 2.0-2.1x here
    method = report.gates["timing"].details["method"]
    assert report.gates["bar"].details["outcome"] == "MET", method["looks"]
    assert method["stop_reason"].startswith("the bar was decided (MET)")
    looks = method["looks"]
    assert looks[-1]["decided"] == "MET" and not any(look["decided"] for look in looks[:-1])
    assert looks[-1]["sessions"] == method["sessions"] >= 3  # never before the sessions asked for
    assert method["interval_method"] == stats.CS_METHOD


def _timed_receipt(bar_text, speedup=2.0, sessions=5, seed=0):
    """A receipt's gates from kgate's own timing gate, on synthetic samples, as verify seals them."""
    from kgate.gates.bar import interval_decision
    from kgate.verify.measure import LegPair, Samples, _bar_gate, timing_gate

    rng = np.random.default_rng(seed)
    samples = Samples()
    for s in range(sessions):
        shift = np.exp(rng.normal(0, 0.01))
        for _ in range(4):
            samples.reference.append(list(2.0 * np.exp(rng.normal(0, 0.02, 5))))
            samples.candidate.append(list(2.0 / speedup * shift * np.exp(rng.normal(0, 0.02, 5))))
            samples.candidate_first.append([True, False, True, False, True])
            samples.session.append(s)
    bar = parse_bar(bar_text)
    looks = []
    for k in range(2, sessions + 1):  # the looks collect() would have made
        rows = [i for i, s in enumerate(samples.session) if s < k]
        r, c, _ = samples.arrays()
        interval = stats.sequential_interval(r[rows], c[rows], [samples.session[i] for i in rows])
        decided = interval_decision(bar, interval.low, interval.high) if k >= 3 and len(rows) >= 10 else None
        looks.append({"sessions": k, "rounds": len(rows), "elapsed_s": 0.1 * k, **interval.to_json(),
                      "relative_width": interval.relative_width, "decided": decided or ""})
    timing, numbers = timing_gate(samples, "test", False, 3.0, LegPair("reference", "candidate"), 0.001, "none",
                                  looks, 3, 10, 3.0, 200)
    gates = {"timing": timing.to_json(), "bar": _bar_gate(bar, numbers, False).to_json()}
    return json.loads(json.dumps(clean(gates)))


def test_verify_receipt_re_derives_every_look_and_the_stop():
    from kgate.verify import receipt as receipts

    gates = _timed_receipt("speedup > 3x", speedup=2.0)  # MISSED at the first look allowed
    looks = gates["timing"]["method"]["looks"]
    first = next(i for i, look in enumerate(looks) if look["decided"])
    assert looks[first]["decided"] == "MISSED"
    gates["timing"]["method"]["looks"] = looks[: first + 1]  # as the run would have stopped
    gates["timing"]["method"]["stop_reason"] = f"the bar was decided (MISSED) after {first + 2} sessions"
    kept = [i for i, s in enumerate(gates["timing"]["samples_ms"]["session"]) if s < looks[first]["sessions"]]
    for leg in ("reference", "candidate", "candidate_first", "session"):
        gates["timing"]["samples_ms"][leg] = [gates["timing"]["samples_ms"][leg][i] for i in kept]
    gates = _regraded(gates)
    assert receipts.rederive_timing(gates["timing"], gates["bar"]) == []
    went_on = _timed_receipt("speedup > 3x", speedup=2.0)  # the whole run: it went on past the decision
    assert any("yet the run went on" in p for p in receipts.rederive_timing(went_on["timing"], went_on["bar"]))
    forged = json.loads(json.dumps(gates))
    forged["timing"]["method"]["looks"][-1]["decided"] = "MET"
    assert any("records the bar MET" in p for p in receipts.rederive_timing(forged["timing"], forged["bar"]))
    moved = json.loads(json.dumps(gates))
    moved["timing"]["method"]["looks"][0]["estimate"] = 9.0
    assert any("look 1's estimate" in p for p in receipts.rederive_timing(moved["timing"], moved["bar"]))
    hidden = json.loads(json.dumps(gates))  # a look left out
    del hidden["timing"]["method"]["looks"][0]
    assert any("looks after every session" in p for p in receipts.rederive_timing(hidden["timing"], hidden["bar"]))
    claimed = json.loads(json.dumps(gates))  # a stop reason the last look does not back
    claimed["timing"]["method"]["stop_reason"] = ("time budget spent: 6.1 s of 6.0 s (compiles included; another "
                                                  "session takes about 0.4 s): undecided")
    assert any("stop reason" in p for p in receipts.rederive_timing(claimed["timing"], claimed["bar"]))


def test_a_session_cut_out_of_a_receipt_is_found():
    from kgate.verify import receipt as receipts

    gates = _timed_receipt("speedup > 1.5x", speedup=1.6, sessions=6)
    t = gates["timing"]
    t["method"]["looks"] = [look for look in t["method"]["looks"] if look["sessions"] < 6][:4]  # keep its shape
    kept = [i for i, s in enumerate(t["samples_ms"]["session"]) if s != 2]  # the slow session 2 removed
    for leg in ("reference", "candidate", "candidate_first", "session"):
        t["samples_ms"][leg] = [t["samples_ms"][leg][i] for i in kept]
    gates = _regraded(gates)
    assert any("session labels are not 0, 1, 2" in p for p in receipts.rederive_timing(gates["timing"], gates["bar"]))


def test_a_malformed_timing_is_tampered_never_a_crash():
    from kgate.verify import receipt as receipts

    for breaks in ({"session": [0, 1]}, {"candidate": "zeros"}, {"looks": "abc"}):
        gates = _timed_receipt("speedup > 1.5x")
        t = gates["timing"]
        if "looks" in breaks:
            t["method"]["looks"][0]["sessions"] = breaks["looks"]
        elif breaks.get("candidate") == "zeros":
            t["samples_ms"]["candidate"] = [[0.0] * len(row) for row in t["samples_ms"]["candidate"]]
        else:
            t["samples_ms"]["session"] = breaks["session"]
        problems = receipts.rederive({"gates": gates, "kgate": {"version": "0.2.0"}})
        assert problems, breaks


def _regraded(gates):
    """The timing and bar numbers recomputed from (trimmed) samples, as kgate would have written them."""
    from kgate.gates.bar import evaluate_bar

    t = gates["timing"]
    r, c = np.array(t["samples_ms"]["reference"]), np.array(t["samples_ms"]["candidate"])
    interval = stats.sequential_interval(r, c, t["samples_ms"]["session"])
    t["speedup"] = interval.to_json()
    t["reference"]["p50_ms"], t["candidate"]["p50_ms"] = float(np.median(r)), float(np.median(c))
    t["sigma_ms"] = stats.run_to_run_sigma(r, c)
    bar = evaluate_bar(parse_bar(gates["bar"]["bar"]), speedup=interval.estimate, low=interval.low, high=interval.high,
                       p50_difference_ms=float(np.median(r) - np.median(c)), sigma_ms=t["sigma_ms"])
    gates["bar"]["outcome"] = bar.outcome
    return json.loads(json.dumps(clean(gates)))


def test_a_receipt_from_before_the_sequential_stop_still_re_derives_and_an_unknown_method_is_not_tampering():
    from kgate.verify import receipt as receipts

    gates = _timed_receipt("speedup > 1.5x")
    old = json.loads(json.dumps(gates))
    del old["timing"]["method"]["interval_method"], old["timing"]["method"]["looks"]
    r, c = np.array(old["timing"]["samples_ms"]["reference"]), np.array(old["timing"]["samples_ms"]["candidate"])
    boot = stats.speedup_interval(r, c, sessions=old["timing"]["samples_ms"]["session"], method=stats.LEGACY_BOOTSTRAP)
    old["timing"]["speedup"] = boot.to_json()
    old["bar"]["outcome"] = "MET" if boot.low > 1.5 else "MISSED" if boot.high < 1.5 else "UNDECIDED"
    assert receipts.rederive_timing(old["timing"], old["bar"]) == []
    # ... but a receipt from a kgate that always records its method, stripped of it, is a downgrade
    assert any("cannot be re-graded by the old bootstrap" in p
               for p in receipts.rederive_timing(old["timing"], old["bar"], "0.2.0"))
    future = json.loads(json.dumps(gates))
    future["timing"]["method"]["interval_method"] = "kgate.cs.future.v9"
    with pytest.raises(receipts.CannotRederive, match="kgate.cs.future.v9"):
        receipts.rederive_timing(future["timing"], future["bar"])


def test_an_undecided_bar_below_the_runs_power_says_what_would_resolve_it():
    from kgate.gates.common import GateResult
    from kgate.verify.measure import _power_short_of_bar

    bar = parse_bar("speedup > 1.02x")
    power = stats.power_at_budget([0.05, -0.04, 0.01, 0.0], elapsed_s=1.0, budget_s=3.0)  # 12 sessions
    undecided = GateResult("bar", (), {"outcome": "UNDECIDED"}, "")
    check = _power_short_of_bar(bar, undecided, power)
    assert check is not None and check.status == "ADVISORY" and "1.02x" in check.detail and "--budget" in check.fix
    assert f"{power['detectable_speedup']:.4f}x" in check.detail and "about 12 sessions" in check.detail
    assert _power_short_of_bar(bar, GateResult("bar", (), {"outcome": "MET"}, ""), power) is None  # decided: said enough
    assert _power_short_of_bar(parse_bar("speedup > 3x"), undecided, power) is None  # a bar above the power


def test_the_budget_stops_before_a_session_that_would_pass_it_and_says_the_time_really_spent():
    from kgate.verify.measure import budget_stop

    assert budget_stop(1.0, 2, 3, 20.0) == ""  # the sessions asked for always run
    assert budget_stop(3.0, 3, 3, 20.0) == ""  # another session (1 s) fits
    near = budget_stop(19.2, 12, 3, 20.0)  # another session (1.6 s) would end at 20.8 s: stop now, under the budget
    assert near.startswith("time budget spent: 19.2 s of 20.0 s") and "always run" not in near and "1.6 s" in near
    over = budget_stop(3.79, 3, 3, 2.0)  # the asked sessions alone outgrew the budget: the real time is given
    assert "3.8 s of 2.0 s" in over and "the 3 sessions asked for always run" in over and over.endswith("undecided")
    # the whole run's budget counts every phase before the timing (verify's checks, loading, inputs)
    whole = budget_stop(3.0, 3, 3, 6.0, whole=(19.5, 20.0))  # the timing has room; the run does not
    assert whole.startswith("time budget spent: 19.5 s of 20.0 s (every phase included; another session takes about 1.0 s")
    assert budget_stop(3.0, 3, 3, 6.0, whole=(12.0, 20.0)) == ""
    assert "24.0 s of 20.0 s (every phase included" in budget_stop(3.0, 3, 3, 6.0, whole=(24.0, 20.0))
    assert "always run" in budget_stop(3.0, 3, 3, 6.0, whole=(24.0, 20.0))
