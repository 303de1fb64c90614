"""Where a suite's rows run: chips named by the physical device a scheduler gave; a local pool of
worker processes; a real Ray cluster started in the test (fake TPU chips), with a worker killed
mid-leg and retried, and a FAIL never retried. The rows are the same whatever ran them."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, kgate
from kgate.errors import KgateError
from kgate.suite import discover
from kgate.suite.executors import Pool, RayExecutor, chip_request, local
from kgate.suite.run import SuiteRequest, gate_step, key_of, run_suite
from kgate.suite.summary import ERROR, GATE_FAIL, PASS
from kgate.verify import lock
from kgate.verify.check_receipt import check_data

# -- chips, as a scheduler gave them ------------------------------------------------------------


def test_chip_n_is_the_n_th_chip_a_scheduler_made_visible_and_its_lock_is_named_by_it(monkeypatch, tmp_path):
    for name in lock.VISIBLE_ENVS:
        monkeypatch.delenv(name, raising=False)
    assert lock.lock_path(1, tmp_path).name == "kgate-chip-1.lock" and lock.visibility_env(1)["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,GPU-5a:e1")  # Ray, Slurm or Kubernetes gave this process two
    assert lock.lock_path(0, tmp_path).name == "kgate-chip-3.lock"
    assert lock.visibility_env(0)["CUDA_VISIBLE_DEVICES"] == "3"  # kept, never overwritten with "0"
    assert lock.lock_path(1, tmp_path).name == "kgate-chip-GPU-5a_e1.lock"
    with pytest.raises(KgateError, match=r"chip 2 is not visible here: CUDA_VISIBLE_DEVICES=3,GPU-5a:e1 shows 2 chips"):
        lock.lock_path(2, tmp_path)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("TPU_VISIBLE_CHIPS", "2")
    assert lock.lock_path(0, tmp_path).name == "kgate-chip-2.lock" and lock.visibility_env(0)["TPU_VISIBLE_CHIPS"] == "2"
    # two processes given different chips never wait on each other; given the same, they do
    monkeypatch.setenv("TPU_VISIBLE_CHIPS", "5")
    assert lock.lock_path(0, tmp_path).name == "kgate-chip-5.lock"


def test_a_verify_task_asks_ray_for_the_chip_kind_the_cluster_has():
    assert chip_request({"CPU": 8, "GPU": 4}) == {"num_gpus": 1}
    assert chip_request({"CPU": 8, "TPU": 4}) == {"resources": {"TPU": 1}}
    assert chip_request({"CPU": 8}) == {}


# -- the suites ---------------------------------------------------------------------------------


def _tree(root: Path, *, slow: str | None = None) -> Path:
    """The bundled cumsum problem with a correct rewrite, a wrong one, and one that does not
    import; `slow`, a file that a wrong candidate's every import writes its pid into, slowly."""
    folder = root / "suite" / "cumsum"
    folder.mkdir(parents=True)
    for name in ("reference.py", "xla_rewrite.py", "bad_exclusive.py"):
        shutil.copy(EXAMPLES / "cumsum" / name, folder / name)
    (folder / "crashes_at_import.py").write_text("raise RuntimeError('this candidate does not import')\n")
    if slow is not None:
        (folder / "slow_wrong.py").write_text(
            f"import os, time\nwith open({slow!r}, 'a') as f:\n    f.write(f'{{os.getpid()}}\\n')\ntime.sleep(4)\n"
            + (EXAMPLES / "cumsum" / "bad_exclusive.py").read_text())
    return root / "suite"


def _request(suite: Path, results: Path) -> SuiteRequest:
    return SuiteRequest(tuple(discover(suite, klass="xla-rewrite")), results, budget_s=2.0, phase_budget_s=60.0)


def _statuses(rows):
    return {r.candidate: r.status for r in rows}


EXPECTED = {"bad_exclusive.py": GATE_FAIL, "crashes_at_import.py": ERROR, "xla_rewrite.py": PASS}


def _ancestor(pid: int, says: str) -> int | None:
    """The nearest ancestor of `pid` whose command line contains `says`."""
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if says in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                return pid
        except (OSError, ValueError, IndexError):
            return None
    return None


def _kill_the_worker_of(marks: Path, says: str, killed: list[int]) -> None:
    """Wait until a candidate's import writes its pid, then SIGKILL the worker that runs its row."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pids = [int(p) for p in marks.read_text().split()] if marks.exists() else []
        worker = _ancestor(pids[0], says) if pids else None
        if worker is not None:
            os.kill(worker, signal.SIGKILL)
            killed.append(worker)
            return
        time.sleep(0.1)


@pytest.mark.full
def test_a_local_pool_runs_rows_in_workers_and_a_lost_worker_s_row_is_never_kept(tmp_path):
    marks = tmp_path / "imports"
    suite, results = _tree(tmp_path, slow=str(marks)), tmp_path / "results"
    killed: list[int] = []
    killer = threading.Thread(target=_kill_the_worker_of, args=(marks, "kgate.suite.worker", killed))
    killer.start()
    rows = run_suite(_request(suite, results), executor=Pool(2))
    killer.join()
    assert killed and _statuses(rows) == {**EXPECTED, "slow_wrong.py": ERROR}
    (lost,) = [r for r in rows if r.candidate == "slow_wrong.py"]
    assert "was killed by signal 9" in lost.reason and lost.extra["unfinished"] is True
    assert not (results / f"{lost.key}.json").exists()  # not kept: a re-run runs it
    passed = next(r for r in rows if r.status == PASS)
    assert check_data(json.loads(Path(passed.extra["receipt"]).read_text()), Path(passed.extra["receipt"])).status == "OK"
    again = run_suite(_request(suite, results), executor=Pool(2))  # only the lost row runs again
    assert _statuses(again) == {**EXPECTED, "slow_wrong.py": GATE_FAIL}
    assert [r for r in again if r.candidate != "slow_wrong.py"] == [r for r in rows if r.candidate != "slow_wrong.py"]


@pytest.mark.full
def test_a_row_past_its_timeout_is_stopped_with_every_process_it_started_and_never_kept(tmp_path):
    """--timeout bounds a row's gate and verify together: a candidate that hangs where no phase
    budget reaches it (here at import, past the short phase budget's floor for starting) is
    stopped, its row an ERROR that says so, not kept; the other rows are untouched."""
    marks = tmp_path / "imports"
    folder = tmp_path / "suite" / "cumsum"
    folder.mkdir(parents=True)
    for name in ("reference.py", "bad_exclusive.py"):
        shutil.copy(EXAMPLES / "cumsum" / name, folder / name)
    (folder / "hangs.py").write_text(f"import os, time\nwith open({str(marks)!r}, 'a') as f:\n"
                                     "    f.write(f'{os.getpid()}\\n')\ntime.sleep(3600)\n")
    request = SuiteRequest(tuple(discover(tmp_path / "suite", klass="xla-rewrite")), tmp_path / "results",
                           budget_s=2.0, phase_budget_s=600.0)
    began = time.monotonic()
    rows = run_suite(request, executor=local(1, timeout_s=30.0))
    assert time.monotonic() - began < 120
    assert _statuses(rows) == {"bad_exclusive.py": GATE_FAIL, "hangs.py": ERROR}
    (hung,) = [r for r in rows if r.candidate == "hangs.py"]
    assert "ran past --timeout 15 s" in hung.reason and hung.extra["unfinished"] is True
    assert not (request.results / f"{hung.key}.json").exists()  # a re-run runs it again
    def gone(pid: int) -> bool:  # a killed process is a zombie, or reaped, once the kernel has ended it
        try:
            return "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]
        except OSError:
            return True

    for pid in (int(p) for p in marks.read_text().split()):  # the candidate's process went with its row
        deadline = time.monotonic() + 5  # SIGKILL is delivered at once; the exit itself can take a moment
        while not gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(pid), pid


def test_the_local_pool_is_sized_to_the_hosts_chips_and_pins_each_slot_to_one(monkeypatch, tmp_path):
    from kgate.suite.executors import default_jobs, host_chips, worker_env

    for name in lock.VISIBLE_ENVS:
        monkeypatch.delenv(name, raising=False)
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia1", "nvidia0", "nvidiactl", "nvidia-uvm", "nvidia10", "null"):
        (dev / name).touch()
    assert host_chips(dev=dev) == ["0", "1", "10"]  # the device files, numbered; never the control files
    assert host_chips({"TPU_VISIBLE_CHIPS": "2,3"}, dev=dev) == ["2", "3"]  # a scheduler's choice wins
    assert host_chips(dev=tmp_path / "none") == []  # a CPU-only host
    assert default_jobs(["0", "1", "10"]) == 3 and default_jobs([]) == max(1, (os.cpu_count() or 2) // 2)
    pinned = [worker_env(slot, ["4", "7"]) for slot in range(3)]
    assert [env["CUDA_VISIBLE_DEVICES"] for env in pinned] == ["4", "7", "4"]  # round robin, by physical id
    assert all(env["TPU_VISIBLE_CHIPS"] == env["CUDA_VISIBLE_DEVICES"] for env in pinned)
    assert worker_env(0, []) == {}  # nothing changed on a CPU-only host
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", pinned[1]["CUDA_VISIBLE_DEVICES"])  # in that worker: its chip 0
    assert lock.lock_path(0, tmp_path).name == "kgate-chip-7.lock"


def test_the_verify_mode_of_a_suite_is_part_of_each_rows_key_and_crosses_to_its_workers(tmp_path):
    from kgate.suite.run import request_from_json, request_to_json

    suite = _tree(tmp_path)
    screen = _request(suite, tmp_path / "results")
    full = SuiteRequest(screen.entries, screen.results, budget_s=2.0, phase_budget_s=60.0, mode="full")
    entry = screen.entries[0]
    assert key_of(entry, screen) != key_of(entry, full)  # a screen row is never taken for a full one
    assert request_from_json(request_to_json(full)).mode == "full"
    with pytest.raises(KgateError, match="--mode 'quick' is not a verify mode"):
        SuiteRequest(screen.entries, screen.results, mode="quick")
    refused = kgate(tmp_path, "suite", suite, "--results", tmp_path / "r", "--mode", "quick", "--json")
    assert refused.returncode == 2 and "is not a verify mode" in json.loads(refused.stdout)["error"]["problem"]
    assert not (tmp_path / "r").exists()  # refused before anything ran


@pytest.mark.full
def test_a_suite_in_full_mode_verifies_its_passing_rows_in_full_mode(tmp_path):
    suite, results = _tree(tmp_path), tmp_path / "results"
    request = SuiteRequest(tuple(discover(suite, klass="xla-rewrite")), results, budget_s=2.0, phase_budget_s=60.0,
                           mode="full")
    rows = run_suite(request)
    assert _statuses(rows) == EXPECTED
    passed = next(r for r in rows if r.status == PASS)
    receipt = json.loads(Path(passed.extra["receipt"]).read_text())
    assert receipt["mode"] == "full" and "capture" in receipt["gates"]
    assert (results / f"{passed.key}.artifacts").is_dir()  # the profiler capture, beside the row's receipt


@pytest.mark.full
def test_a_pool_on_a_host_with_chips_runs_each_row_on_its_slots_chip(tmp_path):
    suite, results = _tree(tmp_path), tmp_path / "results"
    rows = run_suite(_request(suite, results), executor=Pool(2, chips=["3", "5"]))
    assert _statuses(rows) == EXPECTED
    assert {r.extra["ran_on"]["chips"]["CUDA_VISIBLE_DEVICES"] for r in rows} <= {"3", "5"}
    assert all(r.extra["ran_on"]["executor"] == "local" for r in rows)


@pytest.mark.full
def test_the_local_executor_options_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(KgateError, match="--jobs 0"):
        local(0)
    with pytest.raises(KgateError, match="--timeout 0 is not a positive number"):
        local(1, timeout_s=0.0)
    assert isinstance(local(1, timeout_s=5.0), Pool)  # a row past its timeout needs a process to stop
    suite = _tree(tmp_path)
    for args, says in ((["--address", "auto"], "--address names a Ray cluster"),
                       (["--executor", "ray", "--jobs", "2"], "--jobs sizes the local pool"),
                       (["--executor", "dask"], "is not an executor"),
                       (["--compile-slots", "0"], "--compile-slots 0"),
                       (["--timeout", "-1"], "--timeout -1 is not a positive number")):
        proc = kgate(tmp_path, "suite", suite, "--results", tmp_path / "r", *args, "--json")
        assert proc.returncode == 2 and says in proc.stdout, proc.stdout + proc.stderr[-2000:]
        assert json.loads(proc.stdout)["status"] == "ERROR"
    assert not (tmp_path / "r").exists()


def test_without_ray_the_ray_executor_says_how_to_get_it(tmp_path):
    hide = "import sys; sys.modules['ray'] = None; sys.argv[0] = 'kgate'; from kgate.cli import main; main()"
    proc = subprocess.run([sys.executable, "-c", hide, "suite", str(_tree(tmp_path)), "--executor", "ray"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2 and "needs Ray, which is not installed here" in proc.stderr
    assert "pip install 'kgate[ray]'" in proc.stderr


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, resources={"TPU": 2}, include_dashboard=False, log_to_driver=False,
             configure_logging=False, object_store_memory=80 * 1024**2)
    yield ray
    ray.shutdown()


@pytest.mark.full
def test_a_suite_on_ray_gives_the_local_rows_retries_a_lost_worker_and_never_a_fail(ray_cluster, tmp_path):
    marks = tmp_path / "imports"
    suite, results = _tree(tmp_path, slow=str(marks)), tmp_path / "results"
    killed: list[int] = []
    killer = threading.Thread(target=_kill_the_worker_of, args=(marks, "ray::", killed))
    killer.start()
    rows = run_suite(_request(suite, results), executor=RayExecutor())
    killer.join()
    assert killed and _statuses(rows) == {**EXPECTED, "slow_wrong.py": GATE_FAIL}  # retried, and finished
    in_suite = len(marks.read_text().split())
    # a FAIL is a result, never retried: in the suite, the killed task's one import and then one gate's
    request = _request(suite, results)
    (slow,) = [e for e in request.entries if e.candidate.name == "slow_wrong.py"]
    assert gate_step(slow, key_of(slow, request), request) is not None
    one_gate = len(marks.read_text().split()) - in_suite
    assert one_gate >= 1 and in_suite == 1 + one_gate
    # the verify task held one of the cluster's (fake) chips; gate tasks none
    (passed,) = [r for r in rows if r.status == PASS]
    assert passed.extra["ran_on"]["executor"] == "ray"
    assert passed.extra["ran_on"]["chips"].get("TPU_VISIBLE_CHIPS") in ("0", "1")
    assert check_data(json.loads(Path(passed.extra["receipt"]).read_text()), Path(passed.extra["receipt"])).status == "OK"
    # the same suite locally: the same rows, but for where they ran and the speedup measured
    local_rows = run_suite(_request(suite, tmp_path / "local"))
    assert _statuses(local_rows) == _statuses(rows)
    # the same first failure (how many checks FAIL can differ by one: each run draws its own edges)
    assert {r.candidate: _first_failure(r.reason) for r in local_rows if r.status != PASS} == \
        {r.candidate: _first_failure(r.reason) for r in rows if r.status != PASS}


def _first_failure(reason: str) -> str:
    """A row's reason without the count of checks that FAIL (`FAIL: parity (65 checks FAIL): seed42.error: ...`)."""
    return re.sub(r" \(\d+ checks? FAIL\)", "", reason)
