"""The CLI contract, exercised through real `kgate` subprocesses."""

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES

pytestmark = pytest.mark.slow
RMS = EXAMPLES / "rmsnorm"


def kgate(*args, cwd=None):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kgate", *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.mark.full
def test_gate_json_on_good_candidate_prints_only_json_and_writes_the_same_file(tmp_path):
    out = tmp_path / "report.json"
    proc = kgate("gate", "--baseline", RMS / "reference.py", "--candidate", RMS / "pallas.py", "--json", "-o", out)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # stdout is exactly one JSON document
    assert data["status"] == "PASS" and data["exit_code"] == 0
    assert set(data["gates"]) == {"integrity", "parity", "firing", "lowering"}
    assert json.loads(out.read_text()) == data


@pytest.mark.full
def test_gate_human_output_on_bad_candidate_names_the_check_and_next_step():
    proc = kgate("gate", "-r", RMS / "reference.py", "-c", RMS / "bad_ghost.py")
    assert proc.returncode == 2
    assert "kgate gate: FAIL" in proc.stdout
    assert "kernel_reaches_output" in proc.stdout and "ghost kernel" in proc.stdout
    assert "next: fix firing.kernel_reaches_output" in proc.stdout


@pytest.mark.full
def test_bad_inputs_exit_2_with_problem_and_fix_and_write_nothing(tmp_path):
    out = tmp_path / "r.json"
    cases = [
        (["--candidate", tmp_path / "missing.py"], "does not exist"),
        (["--candidate", RMS / "pallas.py", "--set", "hidden=3"], "not a CONFIG key"),
        (["--candidate", RMS / "pallas.py", "--parity", "close"], "parity spec 'close' is not understood"),
        (["--candidate", RMS / "pallas.py", "--class", "kernel"], "is not an intervention class"),
        (["--candidate", RMS / "pallas.py", "--forbid-hlo", "dot("], "not a valid regular expression"),
    ]
    for extra, message in cases:
        proc = kgate("gate", "-r", RMS / "reference.py", *extra, "-o", out)
        assert proc.returncode == 2, (extra, proc.stdout, proc.stderr)
        assert message in proc.stderr and "fix:" in proc.stderr, proc.stderr
        assert not out.exists()
    proc = kgate("gate", "-r", RMS / "reference.py", "-c", RMS / "pallas.py", "-o", tmp_path / "no" / "dir.json")
    assert proc.returncode == 2 and "does not exist" in proc.stderr


@pytest.mark.full
def test_bad_input_under_json_is_a_json_error_object(tmp_path):
    proc = kgate("parity", "-r", RMS / "reference.py", "-c", tmp_path / "nope.py", "--json")
    assert proc.returncode == 2
    data = json.loads(proc.stdout)
    assert data["status"] == "ERROR" and "does not exist" in data["error"]["problem"] and data["error"]["fix"]


def test_help_documents_the_contract():
    proc = kgate("gate", "--help")
    assert proc.returncode == 0
    for flag in ("--reference", "--baseline", "--candidate", "--entry", "--class", "--set", "--json", "--output"):
        assert flag in proc.stdout


@pytest.mark.full
def test_measure_json_and_human_output_label_interpreter_timings():
    args = ["measure", "-r", RMS / "reference.py", "-c", RMS / "pallas.py", "--set", "seq_len=16", "--budget", "1"]
    untimed = kgate(*args)  # by default an interpreted kernel is not timed, and says so
    assert untimed.returncode == 1 and "SKIPPED" in untimed.stdout and "not timed" in untimed.stdout
    assert "where the seconds went" in untimed.stdout and "95% CI" not in untimed.stdout
    args.append("--time-interpreted")
    proc = kgate(*args, "--json")
    assert proc.returncode in (0, 1, 2), proc.stderr
    data = json.loads(proc.stdout)
    assert data["command"] == "measure" and data["interpreted"] is True  # the Pallas kernel ran in interpret mode
    speedup = data["gates"]["timing"]["speedup"]  # a short budget may leave it [0, inf]: JSON spells that "inf"
    assert float(speedup["low"]) <= float(speedup["estimate"]) <= float(speedup["high"])
    human = kgate(*args)
    assert "interpreter timings, NOT device timings" in human.stdout
    assert "95% CI" in human.stdout and "minimum detectable speedup" in human.stdout


def test_bar_the_grammar_rejects_is_bad_input():
    proc = kgate("measure", "-r", RMS / "reference.py", "-c", RMS / "aa_copy.py", "--bar", "faster than before")
    assert proc.returncode == 2
    assert "bar clause 'faster than before' is not understood" in proc.stderr
    assert "p50 beats naive by >2%" in proc.stderr
