"""`kgate verify` (screen), receipts, `verify-receipt`, and the chip lock, with real
subprocesses and real files."""

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES
from kgate.verify import receipt as receipts
from kgate.verify import spawn
from kgate.verify.lock import compile_slot

pytestmark = pytest.mark.slow
RMS = EXAMPLES / "rmsnorm"


def kgate(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "kgate", *map(str, args)], capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """A problem folder copied to a temp dir, verified once (a compiled rewrite: timed on the
    CPU), its measure leg started ahead while the checks ran; yields (folder, receipt path, process)."""
    folder = tmp_path_factory.mktemp("problem")
    for name in ("reference.py", "xla_rewrite.py", "pallas.py", "bad_ghost.py"):
        shutil.copy(RMS / name, folder / name)
    receipt = folder / "receipt.json"
    proc = kgate(
        "verify", "-r", folder / "reference.py", "-c", folder / "xla_rewrite.py", "--class", "xla-rewrite",
        "--set", "seq_len=16", "--budget", "2", "--lock-dir", folder, "-o", receipt, "--report", folder / "report.json",
        "--json", "--advisories-ok", env={**os.environ, "KGATE_START_AHEAD": "1"},
    )
    return folder, receipt, proc


@pytest.mark.full
def test_screen_verify_passes_a_good_candidate_and_writes_a_sealed_receipt(verified):
    folder, receipt, proc = verified
    report = json.loads(proc.stdout)
    assert report["status"] == "PASS"
    # a noisy CPU may advise; --advisories-ok makes a pass exit 0, the advisories still listed
    assert proc.returncode == 0 and report["exit_code"] == 0, proc.stderr
    assert json.loads((folder / "report.json").read_text()) == report  # --report: the report; -o: the receipt
    assert {"integrity", "parity", "firing", "timing"} <= set(report["gates"])
    assert report["gates"]["timing"]["status"] == "PASS" and report["gates"]["timing"]["samples_ms"]
    data = json.loads(receipt.read_text())
    assert data[receipts.HASH_FIELD] == receipts.digest(data) == report["receipt"]["sha256"]
    assert data["interpreted"] is False and data["mode"] == "screen"
    assert data["modules"]["candidate"]["sha256"] and data["inputs"]["42"] and data["outputs"]["42"]
    assert data["kgate"]["version"] and "argv" in data and data["device"]["platform"] == "cpu"
    legs = data["seconds"]["legs"]  # where the seconds went, in the receipt
    assert {"checks: reference leg", "checks: candidate leg", "measure leg"} <= set(legs)
    assert any(name.startswith("timing session") for name, _ in legs["measure leg"])
    phases = [name for name, _ in legs["measure leg"]]  # started ahead: held, then released, then the problem's
    assert phases[1:4] == [spawn.HELD, spawn.RELEASED, "importing the reference and the candidate"], phases
    rounding = 0.0005 * (len(phases) + 1)  # each phase and the wall are recorded to the millisecond
    assert 0 < sum(s for _, s in legs["measure leg"]) <= data["seconds"]["wall_s"] + rounding


@pytest.fixture(scope="module")
def not_timed(verified):
    """The interpreted Pallas kernel of the same folder, verified with a bar: not timed."""
    folder = verified[0]
    receipt = folder / "interpreted.json"
    proc = kgate("verify", "-r", folder / "reference.py", "-c", folder / "pallas.py", "--set", "seq_len=16",
                 "--bar", "speedup > 1.5x", "--lock-dir", folder, "-o", receipt, "--json")
    return receipt, proc


@pytest.mark.full
def test_an_interpreted_kernel_is_checked_but_not_timed_and_its_receipt_holds(not_timed):
    receipt, proc = not_timed
    report = json.loads(proc.stdout)
    assert report["status"] == "PASS" and proc.returncode == 1  # an advisory: never a silent 0
    assert any("timing skipped" in a for a in report["advisories"])
    gates = report["gates"]
    assert gates["parity"]["status"] == gates["firing"]["status"] == gates["integrity"]["status"] == "PASS"
    assert gates["timing"]["status"] == "SKIPPED" and "--time-interpreted" in gates["timing"]["reason"]
    assert gates["bar"]["status"] == "SKIPPED" and gates["bar"]["outcome"] == "UNDECIDED"
    assert "measure leg" not in report["seconds"]["legs"]  # no measure process was started
    check = json.loads(kgate("verify-receipt", receipt, "--json", "--no-regenerate").stdout)
    assert check["status"] == "OK", check


@pytest.mark.parametrize("edit", ["bar-met", "not-interpreted", "samples"])
def test_a_receipt_cannot_claim_a_timed_outcome_without_timings(not_timed, tmp_path, edit):
    receipt, _ = not_timed

    def change(d):
        if edit == "bar-met":
            d["gates"]["bar"].update(status="PASS", outcome="MET")
        elif edit == "not-interpreted":
            d["interpreted"] = False
        else:
            d["gates"]["timing"]["samples_ms"] = {"reference": [[2.0]], "candidate": [[1.0]]}

    result = _edited(receipt, tmp_path, change, True)
    assert result["status"] == "TAMPERED", result


@pytest.mark.full
def test_verify_receipt_ok_on_a_fresh_receipt(verified):
    _, receipt, _ = verified
    proc = kgate("verify-receipt", receipt, "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["status"] == "OK", result
    assert result["checked"] == {"hash": True, "statuses": True, "sources": True, "inputs": True}


def _edited(receipt, tmp_path, edit, reseal):
    data = json.loads(receipt.read_text())
    edit(data)
    if reseal:
        data = receipts.seal(data)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(data))
    return json.loads(kgate("verify-receipt", out, "--json", "--no-regenerate").stdout)


@pytest.mark.parametrize("reseal", [False, True], ids=["edited", "edited-and-rehashed"])
def test_editing_the_speedup_is_tampering(verified, tmp_path, reseal):
    _, receipt, _ = verified
    result = _edited(receipt, tmp_path, lambda d: d["gates"]["timing"]["speedup"].update(estimate=3.0), reseal)
    assert result["status"] == "TAMPERED" and result["exit_code"] == 2


def test_a_receipt_made_by_an_interval_method_this_kgate_does_not_know_is_unverifiable_not_tampered(verified, tmp_path):
    _, receipt, _ = verified
    assert json.loads(receipt.read_text())["gates"]["timing"]["method"]["looks"]  # every look is in the receipt
    result = _edited(receipt, tmp_path, lambda d: d["gates"]["timing"]["method"].update(
        interval_method="kgate.cs.future.v9"), True)
    assert result["status"] == "UNVERIFIABLE" and result["exit_code"] == 2
    assert result["findings"][0].startswith("cannot re-derive here: ") and "kgate.cs.future.v9" in result["findings"][0]


def test_a_receipt_re_derives_under_a_numpy_with_another_stream_and_an_unknown_bootstrap_is_unverifiable(
        verified, tmp_path, monkeypatch):
    import numpy as np

    from kgate.gates import stats
    from kgate.verify import check_receipt

    _, receipt, _ = verified
    data = json.loads(receipt.read_text())
    ordering = data["gates"]["timing"]["ordering"]  # the ordering check's intervals, by the generator's id
    assert ordering["bootstrap"] == stats.BOOTSTRAP_METHOD and data["environment"]["numpy"] == np.__version__
    # numpy's default generator swapped for another stream (as another numpy build may give)
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: np.random.Generator(np.random.MT19937(seed)))
    assert check_receipt.check_data(data, receipt, regenerate=False).status == "OK"
    # the same receipt, had its bootstrap drawn from numpy's stream, would not re-derive here
    legacy = json.loads(receipt.read_text())
    legacy["gates"]["timing"]["ordering"]["bootstrap"] = stats.LEGACY_BOOTSTRAP
    assert check_receipt.check_data(receipts.seal(legacy), receipt, regenerate=False).status == "TAMPERED"
    monkeypatch.undo()
    result = _edited(receipt, tmp_path, lambda d: d["gates"]["timing"]["ordering"].update(
        bootstrap="kgate.bootstrap.future.v9"), True)
    assert result["status"] == "UNVERIFIABLE" and result["findings"][0].startswith("cannot re-derive here: ")
    assert "kgate.bootstrap.future.v9" in result["findings"][0]


@pytest.mark.parametrize("edit", ["interval", "status", "dropped", "dropped-and-skipped", "level", "legacy",
                                  "downgraded", "unknown-and-faster"])
def test_an_edited_ordering_check_is_tampering(verified, tmp_path, edit):
    _, receipt, _ = verified

    def check(d):
        (c,) = [c for c in d["gates"]["integrity"]["checks"] if c["name"] == "measure.ordering_independent"]
        return c

    def change(d):
        ordering = d["gates"]["timing"]["ordering"]
        if edit == "interval":
            ordering["both_first"]["low"] *= 0.5
        elif edit == "status":
            check(d)["status"] = "FAIL" if check(d)["status"] == "PASS" else "PASS"
        elif edit.startswith("dropped"):
            del d["gates"]["timing"]["ordering"]
            if edit == "dropped-and-skipped":
                check(d)["status"] = "SKIPPED"
        elif edit == "level":  # a level at which any two intervals overlap
            ordering["level"] = 0.999999999
        elif edit == "legacy":  # numpy's own stream, on a receipt of a kgate that never draws from it
            ordering["bootstrap"] = "numpy.default_rng"
        elif edit == "downgraded":  # an older kgate claimed, the ordering record and check cut out
            d["kgate"]["version"] = "0.2.9"
            del d["gates"]["timing"]["ordering"]
            d["gates"]["integrity"]["checks"].remove(check(d))
        else:  # a generator this kgate does not know hides nothing else: the edited speedup is still found
            ordering["bootstrap"] = "kgate.bootstrap.future.v9"
            d["gates"]["timing"]["speedup"]["estimate"] *= 2

    result = _edited(receipt, tmp_path, change, True)
    assert result["status"] == "TAMPERED", result


@pytest.fixture(scope="module")
def slower(verified):
    """The same problem's slow candidate (128 extra passes over the input: about 12x the fast
    one here, 4.6x with 32, which a noisy hour's interval once spanned), verified alike."""
    folder = verified[0]
    shutil.copy(RMS / "slow_extra_work.py", folder / "slow_extra_work.py")
    receipt = folder / "slow.json"
    proc = kgate("verify", "-r", folder / "reference.py", "-c", folder / "slow_extra_work.py", "--class", "xla-rewrite",
                 "--set", "seq_len=16", "--kwarg", "passes=128", "--budget", "2", "--lock-dir", folder, "-o", receipt,
                 "--json")
    assert receipt.is_file(), proc.stderr
    return receipt


@pytest.mark.timing
def test_compare_says_which_candidate_is_faster_with_an_interval(verified, slower):
    folder, receipt, _ = verified
    proc = kgate("compare", receipt, slower, "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == result["exit_code"] in (0, 1), proc.stderr
    assert result["faster"] == "A" and result["ratio"]["low"] > 1.0, result["verdict"]
    a, b = result["a"]["speedup"]["estimate"], result["b"]["speedup"]["estimate"]
    assert result["ratio"]["low"] <= a / b <= result["ratio"]["high"]  # the ratio of the runs' own estimates
    assert result["a"]["reference_p50_ms"]["low"] <= result["a"]["reference_p50_ms"]["estimate"]
    text = kgate("compare", slower, folder / "report.json", "--advisories-ok")  # a report: followed to its receipt
    assert text.returncode == 0 and "B's candidate is faster than A's: B's speedup / A's = " in text.stdout, text.stderr
    assert f"the receipt of the report {folder / 'report.json'}" in text.stdout
    same = json.loads(kgate("compare", receipt, receipt, "--json").stdout)
    assert same["faster"] is None and same["verdict"].startswith("not distinguishable")


@pytest.mark.full
@pytest.mark.parametrize("edit,reseal,message", [
    (lambda d: d["modules"]["reference"].update(sha256="0" * 64), True, "receipts of different problems"),
    (lambda d: d["op_point"]["values"].update(seq_len=32), True, "the op-point differs"),
    (lambda d: d.update(timed_inputs="0" * 64, inputs={**d["inputs"], "42": "0" * 64}), True, "the inputs differ"),
    (lambda d: d["device"].update(kind="TPU v5 lite"), True, "the device differs"),
    (lambda d: d["gates"]["timing"]["speedup"].update(estimate=9.0), False, "is TAMPERED"),
    (lambda d: (next(c for c in d["gates"]["integrity"]["checks"] if c["name"] == "measure.inputs_unchanged").update(
        status="FAIL"), d["gates"]["integrity"].update(status="FAIL"), d.update(status="ANOMALY")), True,
     "integrity FAILed (measure.inputs_unchanged)"),
], ids=["problem", "op-point", "inputs", "device", "tampered", "integrity"])
def test_compare_refuses_what_was_not_measured_alike(verified, slower, tmp_path, edit, reseal, message):
    data = json.loads(slower.read_text())
    edit(data)
    edited = tmp_path / "b.json"
    edited.write_text(json.dumps(receipts.seal(data) if reseal else data))
    proc = kgate("compare", verified[1], edited)
    assert proc.returncode == 2 and message in proc.stderr and "fix:" in proc.stderr, proc.stderr
    assert proc.stdout == ""
    as_json = json.loads(kgate("compare", verified[1], edited, "--json").stdout)
    assert as_json["status"] == "ERROR" and message in as_json["error"]["problem"]


def test_compare_decides_nothing_from_runs_without_spread():
    import math

    import numpy as np

    from kgate.gates.stats import welch_ratio

    flat = welch_ratio(np.log([1.1, 1.1]), np.log([1.05, 1.05]))  # a clock too coarse to show any spread
    assert flat.low == 0.0 and math.isinf(flat.high)
    a, b = np.log([1.1, 1.2, 1.15]), np.log([1.0, 1.05, 0.98])
    spread = welch_ratio(a, b)  # the ratio of the runs' geometric-mean speedups, inside its interval
    assert spread.low < spread.estimate < spread.high and spread.estimate == pytest.approx(math.exp(a.mean() - b.mean()))


def test_compare_refuses_a_run_that_timed_nothing(verified, not_timed):
    proc = kgate("compare", verified[1], not_timed[0])
    assert proc.returncode == 2 and "holds no timings to compare" in proc.stderr


@pytest.mark.parametrize("reseal", [False, True], ids=["edited", "edited-and-rehashed"])
def test_editing_a_parity_number_is_tampering(verified, tmp_path, reseal):
    _, receipt, _ = verified

    def worse(d):
        d["gates"]["parity"]["probes"][0]["outputs"][0]["candidate"]["max_abs"] = 1.0

    result = _edited(receipt, tmp_path, worse, reseal)
    assert result["status"] == "TAMPERED"


def test_a_truncated_receipt_is_incomplete(verified, tmp_path):
    _, receipt, _ = verified
    result = _edited(receipt, tmp_path, lambda d: d.pop("gates"), False)
    assert result["status"] == "INCOMPLETE"


@pytest.mark.full
def test_a_changed_reference_is_a_mismatch(verified, tmp_path):
    folder, receipt, _ = verified
    moved = tmp_path / "p"
    shutil.copytree(folder, moved)
    data = json.loads(receipt.read_text())
    data["modules"]["reference"]["path"] = str(moved / "reference.py")
    data["modules"]["candidate"]["path"] = str(moved / "xla_rewrite.py")
    (moved / "receipt.json").write_text(json.dumps(receipts.seal(data)))
    assert json.loads(kgate("verify-receipt", moved / "receipt.json", "--json").stdout)["status"] == "OK"
    ref = moved / "reference.py"
    ref.write_text(ref.read_text().replace("jax.random.normal(kx,", "2.0 * jax.random.normal(kx,"))
    result = json.loads(kgate("verify-receipt", moved / "receipt.json", "--json").stdout)
    assert result["status"] == "MISMATCH" and "reference module" in result["findings"][0]


def test_two_locked_commands_on_one_chip_run_one_after_the_other(tmp_path):
    cmd = [sys.executable, "-m", "kgate", "lock", "0", "--lock-dir", str(tmp_path), "--", "sleep", "2"]
    lock = tmp_path / "kgate-chip-0.lock"
    first = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (lock.is_file() and lock.read_text().startswith("pid")):  # the first holds the lock
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.02)
    started = time.monotonic()
    second = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    errs = [p.communicate()[1] for p in (first, second)]
    elapsed = time.monotonic() - started
    assert first.returncode == 0 and second.returncode == 0
    assert elapsed >= 3.5, elapsed  # serialized: the rest of the first sleep, then the second (~4 s, not ~2 s)
    assert "waiting for" in errs[1] and "held by pid" in errs[1], errs


def test_lock_is_compatible_with_the_flock_command(tmp_path):
    if shutil.which("flock") is None:
        pytest.skip("the flock command is not installed")
    holder = subprocess.Popen(["flock", str(tmp_path / "kgate-chip-3.lock"), "sleep", "1"])
    time.sleep(0.2)
    started = time.monotonic()
    proc = kgate("lock", "3", "--lock-dir", tmp_path, "--", "true")
    holder.wait()
    assert proc.returncode == 0 and time.monotonic() - started >= 0.6


@pytest.mark.full
def test_interrupting_verify_leaves_no_receipt(tmp_path):
    for name in ("reference.py", "xla_rewrite.py"):
        shutil.copy(RMS / name, tmp_path / name)
    receipt = tmp_path / "receipt.json"
    # As from a terminal: a suite started in the background of a non-interactive shell
    # inherits SIGINT ignored, and an ignored Ctrl-C would let verify finish its receipt. A
    # small launcher restores it and execs kgate (no preexec_fn: this process runs threads).
    launcher = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.executable, sys.argv[1:])"
    proc = subprocess.Popen(
        [sys.executable, "-c", launcher, sys.executable, "-m", "kgate", "verify", "-r", str(tmp_path / "reference.py"),
         "-c", str(tmp_path / "xla_rewrite.py"), "--class", "xla-rewrite", "--budget", "60", "--lock-dir", str(tmp_path),
         "--receipt", str(receipt)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    time.sleep(6)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C does: the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert not receipt.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".receipt.json")]


def test_a_receipt_path_that_is_a_folder_is_bad_input_before_anything_runs(tmp_path):
    proc = kgate("verify", "-r", RMS / "reference.py", "-c", RMS / "pallas.py", "-o", tmp_path, "--json")
    assert proc.returncode == 2 and "is a folder" in json.loads(proc.stdout)["error"]["problem"]


def test_verify_receipt_on_a_report_says_it_is_a_report_and_names_the_receipt(verified):
    folder, receipt, _ = verified
    proc = kgate("verify-receipt", folder / "report.json", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 2 and result["status"] == "INCOMPLETE"
    assert "`kgate verify`'s JSON report, not a receipt" in result["findings"][0]
    assert f"run `kgate verify-receipt {receipt}`" in result["findings"][1]


def test_published_schema_requires_what_verify_receipt_requires(verified):
    from kgate.jsonio import schema_errors

    schema = json.loads((EXAMPLES.parent / "schemas" / "receipt-v1.schema.json").read_text())
    assert set(schema["required"]) == set(receipts.REQUIRED)
    folder, receipt, proc = verified
    data = json.loads(receipt.read_text())
    assert schema_errors(data, "receipt") == []
    assert schema_errors(json.loads(proc.stdout), "report") == []
    no_speedup = json.loads(receipt.read_text())
    del no_speedup["gates"]["timing"]["speedup"]
    assert any("speedup" in e for e in schema_errors(no_speedup, "receipt"))
    crashed_leg = json.loads(receipt.read_text())  # a leg that crashed leaves its gate under the leg's name
    crashed_leg["gates"]["measure"] = {"status": "FAIL", "checks": [{"name": "measure_ran", "status": "FAIL", "detail": "x"}]}
    del crashed_leg["gates"]["timing"]
    crashed_leg["status"] = "FAIL"
    assert schema_errors(crashed_leg, "receipt") == []
    passing_with_a_failed_gate = json.loads(receipt.read_text())
    passing_with_a_failed_gate["gates"]["parity"]["status"] = "FAIL"
    assert schema_errors(passing_with_a_failed_gate, "receipt")


@pytest.mark.full
def test_full_mode_names_skipped_rows_checks_the_claim_and_captures(tmp_path):
    for name in ("reference.py", "pallas.py", "bad_partial.py"):
        shutil.copy(RMS / name, tmp_path / name)
    receipt = tmp_path / "full.json"
    proc = kgate(
        "verify", "--mode", "full", "-r", tmp_path / "reference.py", "-c", tmp_path / "bad_partial.py",
        "--set", "seq_len=16", "--budget", "1", "--spec", "0:0->0:0", "--author-claim-p50", "0.001",
        "--time-interpreted", "--lock-dir", tmp_path, "--receipt", receipt, "--json",
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 2
    coverage = report["gates"]["coverage"]["checks"][0]
    assert coverage["status"] == "FAIL" and "slices [2, 3] do not move" in coverage["detail"]
    checks = {c["name"]: c for c in report["gates"]["integrity"]["checks"]}
    assert checks["full.reproduction"]["status"] == "FAIL" and "more than 2x" in checks["full.reproduction"]["detail"]
    assert "full.cold_orderings" in checks
    capture = report["gates"]["capture"]  # jaxlib's profiler is here: it must have run (a missing one never blocks)
    assert capture["status"] == "PASS", capture
    perfetto = Path(capture["perfetto"]["path"])  # a trace people can open, named by path and sha256
    assert perfetto.name == "perfetto_trace.json.gz" and perfetto.is_file()
    assert hashlib.sha256(perfetto.read_bytes()).hexdigest() == capture["perfetto"]["sha256"]
    with gzip.open(perfetto, "rt") as handle:
        assert json.load(handle)["traceEvents"]
    assert all(len(f["sha256"]) == 64 and "content" not in f for f in capture["files"])
    data = json.loads(receipt.read_text())
    assert data["gates"]["capture"]["perfetto"] == capture["perfetto"]
    assert data["mode"] == "full" and data["coverage_spec"] == "0:0->0:0"
    assert json.loads(kgate("verify-receipt", receipt, "--json", "--no-regenerate").stdout)["status"] == "OK"


def test_full_mode_options_in_screen_mode_are_bad_input(tmp_path):
    proc = kgate("verify", "-r", RMS / "reference.py", "-c", RMS / "pallas.py", "--spec", "0:0->0:0", "--lock-dir", tmp_path)
    assert proc.returncode == 2 and "only in --mode full" in proc.stderr
    proc = kgate("verify", "--mode", "full", "-r", RMS / "reference.py", "-c", RMS / "pallas.py", "--spec", "rows", "--lock-dir", tmp_path)
    assert proc.returncode == 2 and "coverage spec 'rows' is not understood" in proc.stderr


def test_at_most_two_compile_slots_per_host(tmp_path):
    # Ordered by events, not by wall time (a loaded machine stretches every start-up):
    # while this test holds two slots a third compile waits and says so; it enters once one is freed.
    code = (
        "import sys, pathlib; from kgate.verify.lock import compile_slot\n"
        "with compile_slot(sys.argv[1], say=lambda m: print(m, file=sys.stderr, flush=True)):\n"
        "    pathlib.Path(sys.argv[2]).write_text('inside')\n"
    )
    inside = tmp_path / "inside"

    def wait_for(predicate, what, limit=120.0):
        deadline = time.monotonic() + limit
        while not predicate():
            assert time.monotonic() < deadline, what
            time.sleep(0.05)

    with compile_slot(tmp_path):
        with compile_slot(tmp_path):
            third = subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(inside)], stderr=subprocess.PIPE, text=True)
            first_line = third.stderr.readline()  # blocks until it has tried every slot
            assert "waiting for a compile slot (2 compiles already running" in first_line, first_line
            time.sleep(0.5)
            assert not inside.exists() and third.poll() is None  # still waiting while both are held
        wait_for(lambda: inside.exists(), "the waiting compile never entered the freed slot")
        assert third.wait(timeout=120) == 0
        inside.unlink()
        fourth = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(inside)], capture_output=True, text=True, timeout=120)
        assert fourth.returncode == 0 and inside.exists() and "waiting" not in fourth.stderr  # one slot held: no wait


def test_the_number_of_compile_slots_is_configurable_and_bad_values_are_named(tmp_path, monkeypatch):
    code = (
        "import sys; from kgate.verify.lock import compile_slot\n"
        "with compile_slot(sys.argv[1], say=lambda m: print(m, file=sys.stderr, flush=True)):\n"
        "    print('inside', flush=True)\n"
    )
    monkeypatch.setenv("KGATE_COMPILE_SLOTS", "3")
    with compile_slot(tmp_path), compile_slot(tmp_path):
        third = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
        assert third.stdout.strip() == "inside" and "waiting" not in third.stderr  # a third slot was free
        with compile_slot(tmp_path):
            fourth = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stderr=subprocess.PIPE, text=True)
            assert "waiting for a compile slot (3 compiles already running" in fourth.stderr.readline()
    assert fourth.wait(timeout=120) == 0
    from kgate.errors import KgateError

    for bad in ("0", "two", "100"):
        monkeypatch.setenv("KGATE_COMPILE_SLOTS", bad)
        with pytest.raises(KgateError, match="KGATE_COMPILE_SLOTS=.* is not a whole number of compile slots"):
            with compile_slot(tmp_path):
                pass


def test_lock_files_are_shared_with_the_other_users_of_the_machine():
    """Made under a strict umask, a lock can still be waited on by another user (here `nobody`,
    in a real process of its own), who waits while it is held and takes it once freed."""
    import stat
    import tempfile

    from kgate.verify.lock import hold, lock_path

    folder = Path(tempfile.mkdtemp(prefix="kgate-shared-locks-", dir="/tmp"))
    try:
        folder.chmod(0o777)
        old = os.umask(0o077)
        try:
            with hold(lock_path(0, folder)), compile_slot(folder):
                pass
        finally:
            os.umask(old)
        for name in ("kgate-chip-0.lock", "kgate-compile-0.lock", "kgate-compile-1.lock"):
            assert stat.S_IMODE((folder / name).stat().st_mode) == 0o666, name
        (folder / "kgate-chip-1.lock").symlink_to(folder / "victim")  # a symlink planted at a lock's path
        (folder / "kgate-chip-2.lock").symlink_to(folder / "kgate-chip-0.lock")
        from kgate.errors import KgateError

        for chip in (1, 2):  # never followed (a dangling one never spins), named with the fix
            with pytest.raises(KgateError, match=f"kgate-chip-{chip}.lock"):
                with hold(lock_path(chip, folder)):
                    pass
        assert not (folder / "victim").exists()
        if os.geteuid() != 0:
            pytest.skip("another user's process needs root to start here")
        code = (
            "import sys; from pathlib import Path; from kgate.verify.lock import hold, lock_path\n"
            "with hold(lock_path(0, sys.argv[1]), say=lambda m: print(m, file=sys.stderr, flush=True)):\n"
            "    print('held', flush=True)\n"
        )

        # `nobody` cannot reach this venv's interpreter (under root's home): the system Python runs
        # kgate's own lock module (it needs only the standard library), copied where nobody can read it
        system_python = shutil.which("python3", path="/usr/bin:/bin")
        if system_python is None:
            pytest.skip("no system python3 for another user to run")
        src = Path(__file__).resolve().parent.parent / "src" / "kgate"
        pkg = folder / "pkg" / "kgate"
        (pkg / "verify").mkdir(parents=True)
        for name in ("__init__.py", "verify/__init__.py"):
            (pkg / name).write_text("")
        for name in ("errors.py", "verify/lock.py"):
            shutil.copy(src / name, pkg / name)
        for path in [folder / "pkg", *(folder / "pkg").rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(folder / "pkg"), "HOME": str(folder)}
        with hold(lock_path(0, folder)):
            other = subprocess.Popen([system_python, "-c", code, str(folder)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, user=65534, group=65534, extra_groups=[],
                                     env=env, cwd=folder)  # another user; no Python runs between fork and exec
            line = other.stderr.readline()
            assert line.startswith("waiting for") and "kgate-chip-0.lock" in line, line + other.stderr.read()
        out, err = other.communicate(timeout=120)
        assert other.returncode == 0 and out.strip() == "held", err
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.full
@pytest.mark.parametrize(
    "candidate,klass,gate,check",
    [
        ("bad_ghost.py", "kernel-authored", "firing", "kernel_reaches_output"),
        ("bad_replay.py", "kernel-authored", "parity", "seed43.error"),
        ("bad_patches_reference.py", "kernel-authored", "integrity", "checks.reference_untouched"),
        ("bad_timer_patch.py", "kernel-authored", "integrity", "measure.timer_untouched"),
    ],
)
def test_screen_verify_fails_known_bad_candidates_in_the_gate_that_names_them(tmp_path, candidate, klass, gate, check):
    proc = kgate(
        "verify", "-r", RMS / "reference.py", "-c", RMS / candidate, "--class", klass, "--set", "seq_len=16",
        "--budget", "1", "--sessions", "2", "--lock-dir", tmp_path, "--receipt", tmp_path / "r.json", "--json",
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 2 and report["status"] in {"FAIL", "ANOMALY"}
    failed = {c["name"] for c in report["gates"][gate]["checks"] if c["status"] == "FAIL"}
    assert check in failed, report["gates"][gate]
    assert (tmp_path / "r.json").exists()  # a failing verification still leaves its receipt


@pytest.mark.full
def test_screen_verify_fails_a_kernel_right_only_at_the_op_point_it_verifies_and_its_receipt_holds(tmp_path):
    soft = EXAMPLES / "softmax"
    receipt = tmp_path / "r.json"
    proc = kgate(
        "verify", "-r", soft / "reference.py", "-c", soft / "bad_right_only_at_its_op_point.py", "--class", "xla-rewrite",
        "--set", "rows=32", "--set", "cols=512", "--budget", "1", "--sessions", "2", "--lock-dir", tmp_path,
        "--receipt", receipt, "--json",
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 2 and report["status"] == "FAIL", proc.stderr[-2000:]
    failed = {c["name"] for c in report["gates"]["parity"]["checks"] if c["status"] == "FAIL"}
    assert failed and all(name.startswith(("odd-shape.", "drawn-shape", "past-op-point.", "rows-at-a-shape.")) for name in failed), failed
    assert report["gates"]["firing"]["status"] == "PASS"  # a real rewrite at the op-point, right there
    shapes = [report["odd_op_point"], *report["drawn_op_points"]]
    assert len(shapes) == 3 and all(s["rows"] <= 64 and s["cols"] <= 1024 for s in shapes), shapes  # from TINY
    again = kgate("verify-receipt", receipt, "--json", "--no-regenerate")
    assert again.returncode == 0 and json.loads(again.stdout)["status"] == "OK", again.stdout  # a FAIL, re-derived


def _tolerance_gate(spec, status, max_abs, violations=None, expected=1.0):
    out = {"path": "out", "candidate": {"max_abs": max_abs, "mean_abs": max_abs / 10, "max_rel": 0.0, "expected": expected}}
    if violations is not None:
        out["violations"] = violations
    return {"status": status, "spec": spec, "probes": [{"seed": 42, "outputs": [out]}],
            "checks": [{"name": "seed42.error", "status": status, "detail": ""}]}


def test_parity_statuses_are_rederived_for_tolerance_and_bitexact_specs():
    # consistent records
    assert receipts.rederive_parity(_tolerance_gate("atol=0.01,rtol=0.01", "PASS", 0.015, violations=0)) == []
    assert receipts.rederive_parity(_tolerance_gate("atol=0.01,rtol=0.01", "FAIL", 0.5, violations=7)) == []
    assert receipts.rederive_parity(_tolerance_gate("bitexact", "PASS", 0.0)) == []
    assert receipts.rederive_parity(_tolerance_gate("bitexact", "FAIL", 0.25)) == []
    # a status flipped to PASS, a violation count zeroed, a non-zero error passed as bit-exact
    flipped = receipts.rederive_parity(_tolerance_gate("atol=0.01,rtol=0.01", "PASS", 0.5, violations=7))
    assert any("recorded PASS but the numbers say FAIL" in p for p in flipped)
    zeroed = receipts.rederive_parity(_tolerance_gate("atol=0.01,rtol=0.01", "PASS", 0.5, violations=0))
    assert any("exceeds atol + rtol*|expected|" in p for p in zeroed)
    assert receipts.rederive_parity(_tolerance_gate("bitexact", "PASS", 0.25))


def test_cold_processes_that_disagree_are_an_anomaly_unless_the_timings_were_interpreted():
    from kgate.verify.screen import VerifyRequest, _full_checks

    def leg(low, high, interpreted):
        return {"interpreted": interpreted, "gates": {"timing": {"speedup": {"estimate": (low + high) / 2, "low": low, "high": high}}}}

    request = VerifyRequest(reference=EXAMPLES / "rmsnorm" / "reference.py", candidate=EXAMPLES / "rmsnorm" / "pallas.py")
    compiled = {c.name: c for c in _full_checks(request, leg(2.1, 2.3, False), leg(1.5, 1.65, False))}
    assert compiled["full.cold_orderings"].status == "FAIL"  # 2.1 / 1.65 = 1.27x apart: beyond process variance
    # seen in this suite on a busy 2-core CPU: 1.12x apart, two processes minutes apart, no order dependence
    busy = {c.name: c for c in _full_checks(request, leg(2.3676, 2.5383, False), leg(2.8366, 3.0204, False))}
    assert busy["full.cold_orderings"].status == "ADVISORY" and "1.118x apart" in busy["full.cold_orderings"].detail
    interpreted = {c.name: c for c in _full_checks(request, leg(0.057, 0.083, True), leg(0.048, 0.056, True))}
    assert interpreted["full.cold_orderings"].status == "ADVISORY"
    agreeing = {c.name: c for c in _full_checks(request, leg(2.1, 2.3, False), leg(2.2, 2.4, False))}
    assert agreeing["full.cold_orderings"].status == "PASS"


def test_a_leg_started_ahead_runs_nothing_until_released_and_one_not_needed_is_ended(tmp_path):
    held = spawn.start("inputs", None, tmp_path / "a", beats=True, held=True)
    assert held.wait_beat("phase " + spawn.HELD, timeout_s=120)
    time.sleep(1.0)
    assert held.overrun(0.5) is None  # held: no phase budget runs while it waits for its request
    assert held.proc.poll() is None and not (tmp_path / "a" / "inputs-request.json").exists()
    held.release({"reference": str(RMS / "reference.py"), "overrides": {"seq_len": 16}, "seeds": [42], "dtype": None})
    result = held.wait_phased(60)
    assert result["status"] == "PASS" and result["inputs"]["42"], result
    phases = [line[6:] for _, line in result["parent_clock"]["beats"] if line.startswith("phase ")]
    assert phases[:2] == [spawn.HELD, spawn.RELEASED]
    assert not (tmp_path / "a" / "inputs-request.json").exists()  # the request came on its stdin, never a file
    unneeded = spawn.start("inputs", None, tmp_path / "b", held=True)
    unneeded.discard()  # the run stopped before it was needed: ended and reaped, no result
    assert unneeded.proc.returncode is not None and not (tmp_path / "b" / "inputs-result.json").exists()


def test_a_thread_scheduled_after_the_candidates_import_as_none_was_before_fails_the_parents_look():
    from kgate.verify import census
    from kgate.verify.screen import scheduling_check

    normal, fifo = ["0,1", 0, 0, 0], ["0,1", 1, 1, 0]
    leg = {"parent_clock": {"scheduling": {"before_import": [normal], "after_import": [normal, fifo]}}}
    check = scheduling_check("measure", leg)
    assert check.status == "FAIL" and "SCHED_FIFO" in check.detail, check
    leg["parent_clock"]["scheduling"]["after_import"] = [normal]
    assert scheduling_check("measure", leg).status == "PASS"
    leg["parent_clock"]["scheduling"]["after_import"] = []  # no look after the import: nothing to say
    assert scheduling_check("measure", leg).status == "SKIPPED"
    assert scheduling_check("measure", {"parent_clock": {"scheduling": None}}).status == "SKIPPED"
    if census.processes_available():  # this process's own threads, read as the parent reads a leg's
        own = census.scheduling(os.getpid())
        assert own and all(policy == os.sched_getscheduler(0) for _, policy, _, _ in own), own


@pytest.mark.full
def test_real_time_scheduling_inside_the_candidates_own_calls_is_seen_from_outside_the_timed_leg(tmp_path):
    soft = EXAMPLES / "model_torch"
    proc = kgate("verify", "-r", soft / "softmax_reference.py", "-c", soft / "softmax_bad_realtime_inside_its_call.py",
                 "--class", "rewrite", "--set", "batch_size=4096", "--budget", "4", "-o", tmp_path / "receipt.json",
                 "--json")  # calls long enough that the parent's looks (every 0.1 s) fall inside them
    report = json.loads(proc.stdout)
    assert proc.returncode == 2 and report["status"] == "ANOMALY", proc.stdout[-2000:]
    checks = {c["name"]: c["status"] for c in report["gates"]["integrity"]["checks"]}
    assert checks["measure.parent_scheduling"] == "FAIL", checks
    checked = kgate("verify-receipt", tmp_path / "receipt.json")
    assert checked.returncode == 2 and "ANOMALY" in checked.stdout
