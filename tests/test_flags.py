"""`kgate flags`, the four-leg fairness harness: its arithmetic on made-up runs, and one real run
with a real XLA flag in fresh processes."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kgate.errors import KgateError
from kgate.gates.bar import parse_bar
from kgate.verify import flags

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rmsnorm"
OPT0 = "XLA_FLAGS=--xla_backend_optimization_level=0"


def test_flags_are_environment_settings_and_xla_flags_add_to_what_is_set():
    parsed = flags.parse_flags([OPT0, "JAX_DEFAULT_MATMUL_PRECISION=highest"])
    assert [f.name for f in parsed] == ["XLA_FLAGS", "JAX_DEFAULT_MATMUL_PRECISION"]
    env = flags.flagged_env(parsed, {"XLA_FLAGS": "--xla_cpu_x=1", "JAX_DEFAULT_MATMUL_PRECISION": "default"})
    assert env == {"XLA_FLAGS": "--xla_cpu_x=1 --xla_backend_optimization_level=0",
                   "JAX_DEFAULT_MATMUL_PRECISION": "highest"}
    for bad, said in [("PATH=/tmp", "is not NAME=VALUE"), ("XLA_FLAGS", "is not NAME=VALUE"),
                      ("XLA_FLAGS=xla_foo", "holds --name=value items"), ("JAX_X=", "is not NAME=VALUE")]:
        with pytest.raises(KgateError, match=said):
            flags.parse_flags([bad])
    with pytest.raises(KgateError, match="no --flag"):
        flags.parse_flags([])
    assert flags.order(3) == ["default", "flagged", "flagged", "default", "default", "flagged"]


def test_across_processes_the_interval_comes_from_the_spread_between_them():
    tight = flags.across([2.0, 2.02, 1.98], [1.0, 1.01, 0.99])
    assert tight["estimate"] == pytest.approx(2.0, rel=1e-3) and 1.9 < tight["low"] < 2 < tight["high"] < 2.1
    loose = flags.across([2.0, 3.0], [1.0, 1.5])
    assert loose["low"] < 1.2 and loose["high"] > 3  # two processes a setting, far apart: a wide interval
    hull = flags.within([{"estimate": 1.2, "low": 1.1, "high": 1.3}, {"estimate": 1.5, "low": 1.4, "high": 1.6}])
    assert hull["low"] == 1.1 and hull["high"] == 1.6 and hull["estimate"] == pytest.approx(math.sqrt(1.2 * 1.5))


def _run(ref, cand, status="PASS", low=0.9, high=1.1):
    return {"status": status, "op_point": {"n": 8}, "gates": {"timing": {
        "status": "PASS", "reference": {"p50_ms": ref}, "candidate": {"p50_ms": cand},
        "speedup": {"estimate": ref / cand, "low": ref / cand * low, "high": ref / cand * high}}}}


def _request(klass="kernel-authored"):
    return flags.FlagsRequest(Path("r.py"), Path("c.py"), flags.parse_flags([OPT0]), klass=klass)


def test_a_flag_that_speeds_both_legs_is_credited_to_the_flag_not_the_candidate():
    runs = {"default": [_run(2.0, 2.0), _run(2.02, 2.01)], "flagged": [_run(1.0, 1.0), _run(1.01, 1.0)]}
    report = flags.evaluate(_request(), runs, {})
    assert report.status == "PASS" and report.exit_code == 1  # the advisory: the flag matters
    effects = report.gates["flags"].details["effects"]
    assert effects["flag_on_reference"]["low"] > 1.5  # the flag alone halves the reference's time
    assert effects["candidate_vs_reference_both_flagged"]["low"] < 1 < effects["candidate_vs_reference_both_flagged"]["high"]
    assert effects["candidate_flagged_vs_reference_default"]["estimate"] == pytest.approx(2.0, rel=0.02)
    (attribution,) = report.gates["flags"].checks
    assert "would be credited with the flag's effect" in attribution.detail
    assert report.gates["flags"].details["headline"]["effect"] == "candidate_vs_reference_both_flagged"
    as_flag = flags.evaluate(_request("flag"), runs, {})
    assert "the flag is the intervention" in as_flag.gates["flags"].checks[0].detail
    assert as_flag.exit_code == 0


def test_a_flag_that_handicaps_only_the_reference_earns_the_candidate_nothing():
    # the flag makes the reference 3x slower and leaves the candidate as it was: both flagged, the
    # candidate looks 3x faster; against the reference's own best setting it is the same speed
    runs = {"default": [_run(2.0, 2.0), _run(2.02, 2.01), _run(1.98, 2.0)],
            "flagged": [_run(6.0, 2.0), _run(6.05, 2.02), _run(5.95, 1.99)]}
    report = flags.evaluate(flags.FlagsRequest(Path("r.py"), Path("c.py"), flags.parse_flags([OPT0]),
                                               bar=parse_bar("speedup > 1.5x")),
                            runs, {})
    head = report.gates["flags"].details["headline"]
    assert head["effect"] == "candidate_flagged_vs_reference_default" and head["speedup"]["estimate"] == pytest.approx(1.0, rel=0.02)
    assert report.gates["bar"].details["outcome"] != "MET" and report.exit_code == 2
    assert "The flag slows the reference" in report.gates["flags"].checks[0].detail


def test_every_process_must_time_the_same_files():
    edited = _run(2.0, 2.0)
    edited["candidate"] = {"path": "c.py", "sha256": "b" * 64}
    runs = {"default": [_run(2.0, 2.0), edited], "flagged": [_run(1.0, 1.0), _run(1.0, 1.0)]}
    for run in (runs["default"][0], *runs["flagged"]):
        run["candidate"] = {"path": "c.py", "sha256": "a" * 64}
    report = flags.evaluate(_request(), runs, {})
    assert report.status == "ANOMALY" and "2 different candidate files" in report.gates["integrity"].checks[0].detail
    crashed = {"status": "CRASHED", "error": {"problem": "the leg died"}}  # hashed nothing: a FAIL, not tampering
    report = flags.evaluate(_request(), {"default": [runs["default"][0], crashed], "flagged": runs["flagged"]}, {})
    assert report.status == "FAIL" and "integrity" not in report.gates


def test_a_process_that_fails_or_tampers_fails_the_harness_and_an_interpreter_is_not_timed():
    bad = {"status": "FAIL", "gates": {"parity": {"status": "FAIL", "checks": [
        {"name": "timed_outputs_agree", "status": "FAIL", "detail": "the flagged run answered differently"}]}}}
    report = flags.evaluate(_request(), {"default": [_run(2, 2), _run(2, 2)], "flagged": [bad, _run(1, 1)]}, {})
    assert report.status == "FAIL" and "timed_outputs_agree" in report.gates["processes"].failures[0].detail
    anomaly = {**bad, "status": "ANOMALY"}
    report = flags.evaluate(_request(), {"default": [_run(2, 2), anomaly], "flagged": [_run(1, 1), _run(1, 1)]}, {})
    assert report.status == "ANOMALY" and report.gates["integrity"].status == "FAIL"
    skipped = {"status": "PASS", "gates": {"timing": {"status": "SKIPPED", "checks": []}}}
    report = flags.evaluate(_request(), {"default": [skipped] * 2, "flagged": [skipped] * 2}, {})
    assert report.gates["flags"].status == "SKIPPED" and report.exit_code == 1 and "interpreter" in report.next_step + \
        report.gates["flags"].skipped_reason


@pytest.mark.slow
@pytest.mark.timing
def test_a_real_xla_flag_in_fresh_processes_with_each_leg_in_the_report(tmp_path):
    out = tmp_path / "flags.json"
    proc = subprocess.run([sys.executable, "-m", "kgate", "flags", "-r", "reference.py", "-c", "xla_rewrite.py",
                           "--class", "xla-rewrite", "--set", "seq_len=256", "--flag", OPT0, "--budget", "1", "--repeats", "2",
                           "-o", str(out), "--json"], cwd=EXAMPLE, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report == json.loads(out.read_text()) and report["command"] == "flags"
    assert report["flagged_env"]["XLA_FLAGS"].endswith("--xla_backend_optimization_level=0")
    gate = report["gates"]["flags"]
    assert all(len(gate["legs_p50_ms"][leg]) == 2 for leg in ("reference", "candidate", "reference+flag", "candidate+flag"))
    # XLA without its optimizations is several times slower: the flag's own effect, on both legs
    assert gate["effects"]["flag_on_reference"]["estimate"] < 0.7 and gate["effects"]["flag_on_candidate"]["estimate"] < 0.7
    assert [c["name"] for c in report["gates"]["processes"]["checks"]] == ["default_1", "default_2", "flagged_1", "flagged_2"]


def test_bad_flags_are_refused_before_any_process_starts():
    proc = subprocess.run([sys.executable, "-m", "kgate", "flags", "-r", "reference.py", "-c", "xla_rewrite.py",
                           "--flag", "PATH=/tmp"], cwd=EXAMPLE, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is not NAME=VALUE" in proc.stderr and "fix:" in proc.stderr


def test_the_bar_is_graded_on_the_headline_and_the_records_read_it():
    from kgate.jsonio import document
    from kgate.record.summary import ReportSummary

    runs = {"default": [_run(2.0, 2.0), _run(2.02, 2.01), _run(1.98, 1.99)],
            "flagged": [_run(1.0, 1.0), _run(1.01, 1.0), _run(0.99, 1.0)]}
    bar = parse_bar("speedup > 1.5x")
    as_flag = flags.evaluate(flags.FlagsRequest(Path("r.py"), Path("c.py"), flags.parse_flags([OPT0]), klass="flag",
                                                bar=bar), runs, {})
    assert as_flag.gates["flags"].details["headline"]["effect"] == "flag_on_reference"
    assert as_flag.gates["bar"].details["outcome"] == "MET"  # the flag alone doubles the reference's speed
    as_kernel = flags.evaluate(flags.FlagsRequest(Path("r.py"), Path("c.py"), flags.parse_flags([OPT0]), bar=bar), runs, {})
    assert as_kernel.gates["bar"].details["outcome"] == "MISSED"  # the flag's doubling is not the kernel's
    summary = ReportSummary.from_json(json.loads(document(as_kernel.to_json(), "report")), Path("f.json"), "0" * 64)
    assert summary.command == "flags" and summary.bar_outcome == "MISSED" and summary.p50_ms == pytest.approx(1.0)
    assert summary.speedup[0] == pytest.approx(1.0, rel=0.02)
