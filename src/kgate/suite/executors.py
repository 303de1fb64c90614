"""Where a suite's rows run. Every executor runs a row the same way (`run_row`: the gate, then
verify, each leg in processes of its own) and hands back the row and its receipt; only the
process that called `run_suite` writes the results folder, so receipts are the same whatever ran
them.

- `InProcess`: one row at a time, in this process (the grading parent: it never imports
  candidate code; the legs do).
- `Pool`: up to N rows at once, each in a worker process of its own (`python -m
  kgate.suite.worker`); a worker that dies is that row's unfinished ERROR, never kept.
- `RayExecutor`: each row's gate as one Ray task (CPU only) and its verify as another (one
  chip, when the cluster has chips), each in a fresh worker process (`max_calls=1`); Ray
  retries a task whose worker was lost, never one that returned (a FAIL is a result).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.suite.run import (
    _done,
    Job,
    Outcome,
    SuiteRequest,
    entry_from_json,
    entry_to_json,
    gate_step,
    request_from_json,
    request_to_json,
    run_row,
    verify_step,
)
from kgate.suite.summary import ERROR
from kgate.verify.forkserver import SAFE_PATH
from kgate.verify.lock import VISIBLE_ENVS, pinned_env, visible

OUTCOME_MARK = "kgate-suite-outcome "  # the line a pool's worker ends with; anything else it prints is progress
EXECUTORS = ("local", "ray")


def host_chips(env: Mapping[str, str] | None = None, dev: Path = Path("/dev")) -> list[str]:
    """The accelerator chips this host gives this process, by physical id, without importing a
    framework: what a scheduler's variable lists (`CUDA_VISIBLE_DEVICES`, `TPU_VISIBLE_CHIPS`),
    else the device files (`/dev/nvidiaN`, a TPU VM's `/dev/accelN`); [] on a CPU-only host."""
    listed = visible(env)
    if listed:
        return next(iter(listed.values()))
    found: list[str] = []
    for prefix in ("nvidia", "accel"):
        try:
            found += sorted((p.name[len(prefix):] for p in dev.iterdir()
                             if p.name.startswith(prefix) and p.name[len(prefix):].isdigit()), key=int)
        except OSError:
            pass
        if found:
            return found
    return found


def default_jobs(chips: Sequence[str] | None = None) -> int:
    """Rows at once on this host: one per chip where there are chips (each worker's rows time on
    a chip of their own); on a CPU-only host, where each row's gate runs two processes
    (reference and candidate), half the cores (at least one)."""
    chips = host_chips() if chips is None else chips
    return len(chips) if chips else max(1, (os.cpu_count() or 2) // 2)


def worker_env(slot: int, chips: Sequence[str]) -> dict[str, str]:
    """What the worker in pool slot `slot` sees: one chip, the slot's (round robin), by its
    physical id, so that its legs' locks and theirs never collide with another slot's chip;
    nothing changed on a CPU-only host."""
    return pinned_env(chips[slot % len(chips)]) if chips else {}


def local(jobs: int | None, timeout_s: float | None = None) -> InProcess | Pool:
    """The local executor: rows one at a time here, or a pool of worker processes (by default
    one per chip, `default_jobs`); with a per-row `timeout_s`, always workers (a row past it is
    stopped with its process group)."""
    chips = host_chips()
    jobs = default_jobs(chips) if jobs is None else jobs
    if jobs < 1:
        raise KgateError(f"--jobs {jobs} is not a number of rows to run at once.", "use --jobs 1 or more.")
    check_timeout(timeout_s)
    return InProcess() if jobs == 1 and timeout_s is None else Pool(jobs, timeout_s, chips)


def check_timeout(timeout_s: float | None) -> None:
    if timeout_s is not None and not timeout_s > 0:
        raise KgateError(f"--timeout {timeout_s:g} is not a positive number of seconds.",
                         "give e.g. --timeout 600 (a row's gate and verify together), or leave it out.")


def timed_out(job: Job, timeout_s: float, queued: bool = False) -> Outcome:
    """The row of a job stopped past --timeout: an ERROR that says so, never written (a re-run,
    perhaps with a longer --timeout, runs it again). `queued`: on Ray, whose clock starts when the
    row's gate task is submitted, and whose cancelled task takes its worker process with it."""
    if queued:
        return lost(job, f"did not finish within --timeout {timeout_s:g} s of its gate task's submission (time "
                    "queued for a worker or a chip included) and its Ray task was cancelled; a re-run runs this "
                    "row again")
    return lost(job, f"ran past --timeout {timeout_s:g} s (its gate and verify together) and was stopped with every "
                "process it started; a re-run runs this row again")


class InProcess:
    """One row at a time, in this process."""

    def run(self, jobs: Sequence[Job], request: SuiteRequest,
            say: Callable[[str], None]) -> Iterator[tuple[Job, Outcome]]:
        for job in jobs:
            say(f"{job.label}: gating")
            yield job, run_row(job.entry, job.key, request, lambda line, job=job: say(f"{job.label}: {line}"))


def lost(job: Job, why: str) -> Outcome:
    """The row of a job whose process was lost: shown as an ERROR, never written (a re-run runs it)."""
    shown = _done(job.entry, job.key, None, ERROR, why, unfinished=True)
    return Outcome(shown.row, None, keep=False)


class Pool:
    """Up to `jobs` rows at once, each in a worker process of its own session (so that stopping
    the suite stops a worker's legs with it)."""

    def __init__(self, jobs: int, timeout_s: float | None = None, chips: Sequence[str] | None = None) -> None:
        self.jobs, self.timeout_s = jobs, timeout_s
        self.chips = list(host_chips() if chips is None else chips)  # each slot's worker pinned to one

    def run(self, jobs: Sequence[Job], request: SuiteRequest,
            say: Callable[[str], None]) -> Iterator[tuple[Job, Outcome]]:
        done: queue.Queue[tuple[Job, Outcome]] = queue.Queue()
        live: dict[int, subprocess.Popen[str]] = {}
        slots: dict[int, int] = {}  # a live job's index -> its pool slot (and so its chip)
        started: dict[int, float] = {}
        expired: set[int] = set()
        todo = list(jobs)
        said = threading.Lock()

        def tell(line: str) -> None:
            with said:
                say(line)

        try:
            while todo or live:
                while todo and len(live) < self.jobs:
                    job = todo.pop(0)
                    slot = slots[job.index] = min(set(range(self.jobs)) - set(slots.values()))
                    env = worker_env(slot, self.chips)
                    on = f", chip {env['CUDA_VISIBLE_DEVICES']}" if env else ""
                    tell(f"{job.label}: gating (worker {slot + 1} of {self.jobs}{on})")
                    live[job.index] = proc = _start_worker(job, request, env)
                    started[job.index] = time.monotonic()
                    threading.Thread(target=_watch, args=(job, proc, done, tell), daemon=True).start()
                if self.timeout_s is not None:  # looked at every turn, however often rows finish
                    for index, proc in live.items():
                        if index not in expired and time.monotonic() - started[index] > self.timeout_s:
                            expired.add(index)  # its watcher reports the killed worker; said as a timeout below
                            _stop(proc)
                try:
                    job, outcome = done.get(timeout=0.5)
                except queue.Empty:
                    continue
                live.pop(job.index, None)
                slots.pop(job.index, None)
                if job.index in expired:  # only ever filled under a timeout
                    outcome = timed_out(job, float(self.timeout_s or 0))
                yield job, outcome
        finally:  # interrupted, or the caller stopped: no worker (nor its legs) is left running
            for proc in live.values():
                _stop(proc)


def _start_worker(job: Job, request: SuiteRequest, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, *SAFE_PATH, "-m", "kgate.suite.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, **(env or {})})
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"entry": entry_to_json(job.entry), "key": job.key,
                                 "request": request_to_json(request)}))
    proc.stdin.close()
    return proc


def _watch(job: Job, proc: subprocess.Popen[str], done: queue.Queue[tuple[Job, Outcome]],
           say: Callable[[str], None]) -> None:
    assert proc.stdout is not None and proc.stderr is not None
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout else ""), daemon=True)
    reader.start()
    last = ""
    for line in proc.stderr:
        last = line.rstrip("\n") or last
        say(f"{job.label}: {last}")
    code = proc.wait()
    reader.join()
    marked = [line[len(OUTCOME_MARK):] for line in "".join(out).splitlines() if line.startswith(OUTCOME_MARK)]
    try:
        if code != 0 or len(marked) != 1:
            raise ValueError
        outcome = Outcome.from_json(json.loads(marked[0]))
    except ValueError:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        outcome = lost(job, f"the worker process running this row {how} before it finished"
                       + (f" (it last said: {last})" if last else "") + "; a re-run runs this row again")
    done.put((job, outcome))


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill a worker's session, and every process below it wherever it went (a candidate's leg runs
    in a session of its own, so its group is not the worker's): the tree is walked first, each
    process stopped (SIGSTOP) as it is found so that none starts another behind the walk, then
    killed deepest first, the worker's own group last, and the worker is reaped."""
    from kgate.verify import census

    if proc.poll() is not None:  # it ended (and was reaped) already: its pid may be another process's now
        return
    tree, look = [], [proc.pid]
    while look:  # the whole tree, each process frozen as it is found: none can start another behind the walk
        pid = look.pop()
        try:
            os.kill(pid, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            continue
        tree.append(pid)
        look += census.children(pid)
    for pid in reversed(tree[1:]):  # the deepest first: a parent reaps (and frees the pid of) nothing still listed
        for kill in (lambda: os.killpg(os.getpgid(pid), signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError, OSError):
                pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


# -- Ray ---------------------------------------------------------------------------------------

def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise KgateError("--executor ray needs Ray, which is not installed here.",
                         "pip install 'kgate[ray]' (or pip install ray), or run with --executor local.") from exc
    return ray


def chip_request(resources: Mapping[str, float]) -> dict[str, Any]:
    """What a verify task asks of Ray: one GPU, or one TPU, where the cluster has them; else
    nothing beyond its CPU (a CPU-only cluster times on CPUs)."""
    if resources.get("GPU", 0) >= 1:
        return {"num_gpus": 1}
    if resources.get("TPU", 0) >= 1:
        return {"resources": {"TPU": 1}}
    return {}


class RayExecutor:
    """Each row's gate, then its verify, as Ray tasks on a cluster: the one this process is
    already connected to, the one at `address`, or a local one started here (and stopped after)."""

    def __init__(self, address: str | None = None, retries: int = 2, timeout_s: float | None = None) -> None:
        if retries < 0:
            raise KgateError(f"--retries {retries} is not a number of retries.", "use --retries 0 or more.")
        check_timeout(timeout_s)
        self.address, self.retries, self.timeout_s = address, retries, timeout_s
        self.ray = import_ray()

    def run(self, jobs: Sequence[Job], request: SuiteRequest,
            say: Callable[[str], None]) -> Iterator[tuple[Job, Outcome]]:
        ray = self.ray
        started = not ray.is_initialized()
        if started:
            try:
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise KgateError(f"cannot reach the Ray cluster at {self.address or 'a new local cluster'}: {exc}",
                                 "start one (`ray start --head`) and pass its address with --address, or run with "
                                 "--executor local.") from exc
        chip = chip_request(ray.cluster_resources())
        options = {"max_calls": 1, "max_retries": self.retries, "retry_exceptions": False, "num_cpus": 1}
        gate = ray.remote(**options)(_gate_task)
        verify = ray.remote(**options, **chip)(_verify_task)
        terms = request_to_json(request)
        pending: dict[Any, tuple[Job, str]] = {}
        began: dict[int, float] = {}  # a row's clock starts when its gate is submitted (queueing counts too)
        for job in jobs:
            say(f"{job.label}: gating (a Ray task)")
            pending[gate.remote(entry_to_json(job.entry), job.key, terms)] = (job, "gate")
            began[job.index] = time.monotonic()
        try:
            while pending:
                if self.timeout_s is not None:  # looked at every turn, however often tasks finish
                    for ref, (job, _step) in list(pending.items()):
                        if time.monotonic() - began[job.index] > self.timeout_s:
                            pending.pop(ref)
                            ray.cancel(ref, force=True)
                            yield job, timed_out(job, self.timeout_s, queued=True)
                    if not pending:
                        break
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5 if self.timeout_s is not None else None)
                if not ready:
                    continue
                (ref,) = ready
                job, step = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # kgate itself raised there: never retried
                    yield job, lost(job, f"the Ray task of this row's {step} raised {exc.cause!r} (a kgate bug: "
                                    "please report it); a re-run runs this row again")
                    continue
                except ray.exceptions.RayError as exc:  # its worker lost past the retries, or the task cancelled
                    yield job, lost(job, f"the Ray task of this row's {step} did not finish: {type(exc).__name__} "
                                    f"after {self.retries} retries; a re-run runs this row again")
                    continue
                if step == "gate" and result is None:
                    say(f"{job.label}: gate PASS, verifying (a Ray task{' on one chip' if chip else ''})")
                    pending[verify.remote(entry_to_json(job.entry), job.key, terms)] = (job, "verify")
                    continue
                yield job, Outcome.from_json(result)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
            if started:
                ray.shutdown()


def _where() -> dict[str, Any]:
    """Where a Ray task runs: its node, and the chips Ray made visible to it."""
    import ray

    return {"executor": "ray", "node": ray.get_runtime_context().get_node_id(),
            "chips": {name: os.environ[name] for name in VISIBLE_ENVS if os.environ.get(name, "").strip()}}


def _gate_task(entry: Mapping[str, Any], key: str, terms: Mapping[str, Any]) -> dict[str, Any] | None:
    failed = gate_step(entry_from_json(entry), key, request_from_json(terms), _where())
    return None if failed is None else failed.to_json()


def _verify_task(entry: Mapping[str, Any], key: str, terms: Mapping[str, Any]) -> dict[str, Any]:
    return verify_step(entry_from_json(entry), key, request_from_json(terms), lambda _: None, _where()).to_json()
