"""Start a leg (`python -m kgate.verify.leg KIND -`, its request on its stdin) in a fresh
process and read its result. No framework import here.

A leg writes its result to a file the parent named, never to stdout: whatever the modules
print (a candidate's `print()`, a library's warning) goes to the leg's stderr, which the
parent keeps aside and shows only when the leg fails. The parent stamps its own clock on
the leg's start and end, and on each line the leg writes to its beat channel (a pipe named in KGATE_BEAT_FD).

A timed round is bounded on the parent's clock from both sides, and only by events whose
real time the parent knows: the leg asks (`r I`), the parent sends a tick (`g I`, on the
pipe named in KGATE_TICK_FD) and stamps the moment it sent it, the leg starts the round only
once the tick arrived, and the round ends before the parent reads `e I`. A late read only
widens the window, so a busy machine can never make an honest round look too long; the tick
for round I goes out only after `e I-1` was read, so the windows never overlap.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kgate.gates.integrity import round_line
from kgate.verify import census, forkserver
from kgate.verify.forkserver import SAFE_PATH

@dataclass(eq=False)  # one leg is one process: kept in sets by identity
class LegProcess:
    kind: str
    proc: subprocess.Popen[bytes] | forkserver.ForkedLeg
    result_path: Path
    stderr_path: Path
    started_ns: int
    stdin: IO[bytes] | None
    beats: list[tuple[int, str]] = field(default_factory=list)  # (parent clock ns, line the leg wrote)
    ticks: list[tuple[int, int]] = field(default_factory=list)  # (parent clock ns when sent, round)
    data: bytearray = field(default_factory=bytearray)  # what the leg sent on its data pipe
    went_ns: int | None = None  # when go() was sent: from then on, "waiting" is a phase like any other
    held: bool = False  # started ahead: no budget runs until release()
    beating: bool = False  # it has a beat channel: its result file must hash to the digest it beats last
    released_ns: int | None = None  # when release() handed it its request (this process's own stamp)
    own_session: bool = False  # it runs candidate code, in a session of its own
    # a measure leg's timed rounds answer to its --budget, not to the phase budget; past this
    # (time.monotonic(): the budget's end plus one phase budget) a round that never ends is stopped
    timing_until: float | None = None
    before: frozenset[int] = frozenset()  # this process's children when the leg started: none of them is its
    processes: dict[int, dict[str, Any]] = field(default_factory=dict)  # what ran below it or came here from it
    # how the OS scheduled the leg's threads, seen from here: before the candidate was imported (and this
    # process's own, which a leg starts with), and after (`census.scheduling`)
    scheduled_before: set[tuple[str, int, int, int]] = field(default_factory=set)
    scheduled_after: set[tuple[str, int, int, int]] = field(default_factory=set)
    _imported: bool = False  # a beat or a tick has said the candidate is imported
    _readers: list[threading.Thread] = field(default_factory=list)
    _watching: threading.Event = field(default_factory=threading.Event)  # set: the process watch stops
    _watcher: threading.Thread | None = None

    def go(self) -> None:
        """Tell a waiting leg to proceed (one line on its stdin, then close it)."""
        if self.stdin is None:
            return
        self.went_ns = time.monotonic_ns()
        try:
            self.stdin.write(b"go\n")
            self.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the leg is gone; wait() reports it
        self.stdin = None

    def release(self, payload: Mapping[str, Any]) -> None:
        """Hand a leg started with `held=True` its request, as one line on its stdin (never a
        file another process could plant first), and let it go on: it has loaded the array
        library meanwhile and run nothing of the problem's. Its held time stays its own phase;
        the phase budget counts from here, with the release stamped by this process."""
        self.wait_beat("phase " + HELD, timeout_s=STARTING_FLOOR_S)  # its phases in order (it may have died: wait says)
        line = json.dumps({**with_backend(payload), "result": str(self.result_path)}).encode() + b"\n"
        self.released_ns = self.went_ns = time.monotonic_ns()
        self.beats.append((self.released_ns, "phase " + RELEASED))
        if self.stdin is not None:
            try:
                self.stdin.write(line)
                self.stdin.close()
            except (BrokenPipeError, OSError):
                pass  # the leg is gone; wait() reports it
            self.stdin = None

    def discard(self) -> None:
        """End a held leg that will not be needed (the run stopped before timing), and whatever it
        started."""
        self._stop()

    def _stop(self) -> None:
        """Stop the leg and its process group, having looked once more at what runs below it (a
        process in a session of its own escapes the group: it is found again as an orphan), then
        whatever it started, at once: nothing of it runs on beside the next leg."""
        if self.proc.poll() is None:
            self.look()
            self.kill_group()
            self.proc.kill()
        self.proc.wait()
        if self.stdin is not None:
            self.stdin.close()
            self.stdin = None
        self._join()
        self.left_behind(linger_s=0.0)

    def wait_beat(self, text: str, timeout_s: float = 600.0, budget_s: float | None = None) -> bool:
        """Block until the leg writes `text` on its beat channel; False if it exited first, or
        one of its phases ran past `budget_s` (the next wait says which)."""
        return self.wait_until(lambda line: line == text, budget_s, timeout_s)

    def wait_until(self, wanted: Callable[[str], bool], budget_s: float | None = None,
                   timeout_s: float = 3600.0) -> bool:
        """Block until the leg writes a line `wanted` accepts on its beat channel; False as `wait_beat`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if budget_s and self.overrun(budget_s):
                return False
            if any(wanted(line) for _, line in list(self.beats)):
                return True
            if self.proc.poll() is not None:
                self._join()
                return any(wanted(line) for _, line in list(self.beats))
            time.sleep(0.005)
        return False

    def overrun(self, budget_s: float) -> tuple[str, float] | None:
        """(phase, seconds in it) when the leg has been in its current phase (its last `phase
        NAME` beat) for longer than `budget_s`; waiting for the parent's go does not count."""
        if self.held and self.released_ns is None:
            return None  # held until its request comes: nothing of the problem's runs
        stamp, name, beaten = self.started_ns, "starting", False
        for ns, line in list(self.beats):
            if line.startswith("phase "):
                stamp, name, beaten = ns, line[6:], True
        if name.startswith("timing") and self.kind == "measure":
            # the timed rounds answer to --budget, and each round to its tick; one that never ends, to
            # the budget's end plus a phase budget
            if self.timing_until is None or time.monotonic() <= self.timing_until:
                return None
            return name, (time.monotonic_ns() - stamp) / 1e9
        if not beaten or (stamp == self.released_ns and name == RELEASED):
            # kgate's own start (the interpreter, kgate, the array library, the device), as this
            # process saw it: a leg that names a phase "starting" itself gets no floor
            budget_s = max(budget_s, STARTING_FLOOR_S)
        if name == "waiting":
            if self.went_ns is None:
                return None
            stamp = max(stamp, self.went_ns)
        elapsed = (time.monotonic_ns() - stamp) / 1e9
        return (name, elapsed) if elapsed > budget_s else None

    def stop_if_overrun(self, budget_s: float | None) -> dict[str, Any] | None:
        """Stop a leg past its phase budget: the CRASHED result that says which phase, for how
        long, and the likely cause; None while it is within budget."""
        over = self.overrun(budget_s) if budget_s else None
        if over is None:
            return None
        self._stop()
        phase, elapsed = over
        cause = next((text for prefix, text in PHASE_CAUSES.items() if phase.startswith(prefix)), "unknown")
        return {"status": "CRASHED", "returncode": self.proc.returncode, "error": {
            "problem": f"the {self.kind} leg spent {elapsed:.0f} s in the phase '{phase}' (the budget is "
                       f"{budget_s:g} s per phase) and was stopped. Likely cause: {cause}",
            "fix": "remove the cause, or give a larger --phase-budget SECONDS."}}

    def phase(self) -> str:
        """The phase the leg last named (`phase NAME` beats), "" before its first."""
        return next((line[6:] for _, line in reversed(list(self.beats)) if line.startswith("phase ")), "")

    def wait_phased(self, budget_s: float | None, on_phase: Callable[[str], None] | None = None) -> dict[str, Any]:
        """`wait()`, stopping the leg when one of its phases runs past `budget_s`; `on_phase` is
        told the phase the leg is in (as it names it: a line for a person, nothing more) every
        time it looks, and decides itself when to say it (see `screen.phase_lines`)."""
        while self.proc.poll() is None:
            stopped = self.stop_if_overrun(budget_s)
            if stopped is not None:
                return stopped
            if on_phase is not None:
                on_phase(self.phase())
            time.sleep(0.05)
        return self.wait()

    def wait(self, timeout_s: float | None = None) -> dict[str, Any]:
        """The leg's result; a crash or a missing result becomes {"status": "CRASHED", ...}."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._stop()
            return self._crashed(f"the {self.kind} leg ran past {timeout_s:.0f} s and was stopped")
        finally:
            if self.stdin is not None:
                self.stdin.close()
                self.stdin = None
        ended = time.monotonic_ns()
        self._join()
        left = self.left_behind()
        if left:
            self.kill_group()
            return self._crashed(f"{_processes_text(left)} started during the {self.kind} leg still ran "
                                 f"{LINGER_S:g} s after the leg exited, and kgate stopped it: work outside the leg "
                                 "(a process that outlives it can disturb what runs next, or speak for it); its "
                                 "result is not used")
        if any(reader.is_alive() for reader in self._readers):
            # the leg exited and its channels are still open: a process it started holds them, and
            # could speak for it (a digest, a result); nothing it wrote is used
            self.kill_group()
            return self._crashed("a process the leg started outlived it and holds kgate's channel to the leg open "
                                 "(it could write the leg's result for it); its result is not used")
        if getattr(self.proc, "lost", ""):
            return self._crashed(f"{self.proc.lost}; its result is not used")  # type: ignore[union-attr]
        try:
            raw = self.result_path.read_bytes()
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except (OSError, ValueError):
            tail = self.stderr_tail()
            return self._crashed(f"{ended_how(self.proc.returncode)}, without a result: {tail or 'no output'}")
        told = [line[len(RESULT_BEAT):] for _, line in list(self.beats) if line.startswith(RESULT_BEAT)]
        if self.beating and len(told) > 1:
            # the leg beats one digest, once, last: another process wrote on its channel
            return self._crashed(f"{len(told)} result digests came on the leg's channel, where the leg sends one: "
                                 "another process spoke for it; its result is not used")
        if self.beating and told != [hashlib.sha256(raw).hexdigest()]:
            # a process that outlived the leg (or ran beside it) rewrote the file after the leg wrote it
            return self._crashed("its result file is not the one it wrote (its digest, sent on the beat channel, "
                                 "differs): another process rewrote it; its result is not used")
        data["parent_clock"] = {
            "processes": [dict(record) for record in self.processes.values()] if census.processes_available() else None,
            "scheduling": {"before_import": sorted(map(list, self.scheduled_before | census.scheduling(os.getpid()))),
                           "after_import": sorted(map(list, self.scheduled_after))}
            if census.processes_available() else None,
            "wall_ns": ended - self.started_ns,
            "beats": [[ns - self.started_ns, line] for ns, line in list(self.beats)],
            "ticks": [[ns - self.started_ns, index] for ns, index in list(self.ticks)],
        }
        return data

    def _join(self) -> None:
        for reader in self._readers:
            reader.join(timeout=5)
        _LIVE.discard(self)
        self._watching.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
            self._watcher = None

    def look(self, tree: bool = True) -> None:
        """One look at the processes below the leg (`tree`) and at the orphans that came to this
        process since it started (a process the leg forked twice, or whose parent ended):
        each one's name, when it was first and last seen, its CPU time, and whether it was seen
        while the leg's timed rounds ran (from the first tick on)."""
        now = time.monotonic_ns()
        found = self._strays()
        if tree and self.proc.poll() is None:
            found.update(census.descendants(self.proc.pid))
        timing = bool(self.ticks) and self.proc.poll() is None
        if self.proc.poll() is None:  # at every look: a change inside the candidate's calls lasts only as long
            # before the candidate is imported: what the leg and its framework set; from then on, any new
            # setting is the candidate's (its untimed calls included: one made there would pass for a baseline)
            # (the beats only grow: once seen, the import stays seen)
            self._imported = self._imported or bool(self.ticks) or any(
                CANDIDATE_IMPORT in line for _, line in list(self.beats))
            (self.scheduled_after if self._imported else self.scheduled_before).update(census.scheduling(self.proc.pid))
        for pid, sample in found.items():
            record = self.processes.setdefault(pid, {
                "pid": pid, "name": sample.name, "first_ns": now - self.started_ns, "cpu_s": sample.cpu_s,
                "cpu_in_rounds_s": 0.0})
            if timing:
                base = record.setdefault("cpu_at_rounds_s", sample.cpu_s)
                record["cpu_in_rounds_s"] = round(max(sample.cpu_s - base, 0.0), 3)
            record.update(last_ns=now - self.started_ns, cpu_s=sample.cpu_s, state=sample.state)

    def _strays(self) -> dict[int, census.ProcessSample]:
        """Orphans here that are not another live leg's (by its session: a leg that runs candidate
        code leads one); those of a finished leg, or of none, count for every leg."""
        found = census.strays(self.before)
        # a copy taken at once (the GIL holds through it): the legs' watcher threads read _LIVE while the
        # thread that ends a leg takes it out, and a set changed mid-iteration would end the watcher
        others = {leg.proc.pid for leg in list(_LIVE)
                  if leg is not self and leg.own_session and leg.proc.poll() is None}
        return {pid: s for pid, s in found.items() if s.session not in others}

    def left_behind(self, linger_s: float | None = None) -> list[dict[str, Any]]:
        """After the leg exited: what it started (below it, or come here as an orphan) that is still
        running `linger_s` (default LINGER_S) later, stopped (SIGKILL) and reaped; a zombie is reaped
        and not counted. A leg kgate stopped itself (past its budget, or not needed) gets no grace: 0."""
        if not census.processes_available():
            return []
        deadline = time.monotonic() + (LINGER_S if linger_s is None else linger_s)
        while True:
            self.look(tree=False)
            alive = {pid: r for pid, r in self.processes.items()
                     if (sample := census.process(pid)) is not None and sample.state != "Z"}
            if not alive or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        census.stop(alive)
        _reap(set(self.processes))
        for pid, record in alive.items():
            record["outlived"] = True
        return list(alive.values())

    def kill_group(self) -> None:
        """End the leg's whole process group (a leg started with `own_session`): whatever its
        modules started (a child, a forked helper) goes with it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def stderr_tail(self, lines: int = 3) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(line.strip() for line in text[-lines:])[:600]

    def _crashed(self, problem: str) -> dict[str, Any]:
        return {"status": "CRASHED", "returncode": self.proc.returncode, "error": {"problem": problem}}


def start(
    kind: str,
    payload: Mapping[str, Any] | None,
    workdir: Path,
    *,
    env: Mapping[str, str] | None = None,
    waits: bool = False,
    beats: bool = False,
    data: bool = False,
    own_session: bool = False,
    held: bool = False,
    held_backend: str = "jax",
) -> LegProcess:
    """Start one leg; `waits`: it blocks until `go()`; `beats`: the parent timestamps its beat
    lines and answers round requests with ticks (see the module's docstring); `data`: it sends bytes on a pipe (KGATE_DATA_FD) that only this process reads, so
    they never touch the disk. `held` (payload None): started ahead, it loads the array library
    (`held_backend`'s: the problem's, named by the caller) and waits, running nothing of the
    problem's, until `release(payload)`."""
    workdir.mkdir(parents=True, exist_ok=True)
    result_path = workdir / f"{kind}-result.json"
    stderr_path = workdir / f"{kind}-stderr.txt"
    result_path.unlink(missing_ok=True)
    # A leg's request (its seeds, the drawn one included) comes as the first line on its stdin,
    # never in a file: a candidate's process running beside it could read a file, or plant one first.
    line = b""
    if held:  # its request comes on stdin at release()
        if held_backend not in forkserver.BACKENDS:
            raise ValueError(f"no backend {held_backend!r}")
        backend = held_backend  # a held leg imports its backend's library before it knows its problem
        waits, env = True, {**(env or {}), HELD_ENV: backend}
    else:
        request = with_backend(payload or {})
        backend = str(request.get("backend", "jax"))
        line = json.dumps({**request, "result": str(result_path)}).encode() + b"\n"
    pipes: dict[str, tuple[int, int]] = {}
    for name, wanted in (("KGATE_BEAT_FD", beats), ("KGATE_DATA_FD", data)):
        if wanted:
            pipes[name] = os.pipe()
    tick_r, tick_w = os.pipe() if beats else (-1, -1)
    if beats:
        os.set_blocking(tick_w, False)  # a leg that never reads its ticks cannot stall the reader
    full_env = {k: v for k, v in os.environ.items() if k not in _CHANNELS}  # only the channels this leg asked for
    for name in CACHE_DIRS:  # no process reads what another (one that ran candidate code) could have written
        full_env.pop(name, None)
    full_env.update({**(env or {}), "PYTHONUNBUFFERED": "1", **CACHES_OFF})
    for name, value in SHARED_DEVICE.items():  # the user's own setting wins
        full_env.setdefault(name, value)
    full_env.update({name: str(w) for name, (_, w) in pipes.items()})
    if beats:
        full_env["KGATE_TICK_FD"] = str(tick_r)
    channels = {name: w for name, (_, w) in pipes.items()} | ({"KGATE_TICK_FD": tick_r} if beats else {})
    _become_subreaper()
    before = frozenset(census.children(os.getpid()))
    started_ns = time.monotonic_ns()
    with open(stderr_path, "wb") as err:
        forked = _forked(kind, full_env, channels, err.fileno(), own_session, backend)
        proc = forked or subprocess.Popen(
            [sys.executable, *SAFE_PATH, "-m", "kgate.verify.leg", kind, REQUEST_ON_STDIN],
            stdin=subprocess.PIPE,
            stdout=err,
            stderr=err,
            env=full_env,
            pass_fds=tuple(channels.values()),
            start_new_session=own_session,
        )
    if not forked:
        census.own(proc.pid)
    stdin = proc.stdin
    if line and stdin is not None:
        try:
            stdin.write(line)
            stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the leg is gone; wait() reports it
    if not waits and stdin is not None:
        stdin.close()
        stdin = None
    leg = LegProcess(kind, proc, result_path, stderr_path, started_ns, stdin, held=held, beating=beats,
                     own_session=own_session, before=before)
    _LIVE.add(leg)
    if census.processes_available():
        leg._watcher = threading.Thread(target=_watch_processes, args=(leg,), daemon=True)
        leg._watcher.start()
    if beats:
        os.close(tick_r)
    for name, (r, w) in pipes.items():
        os.close(w)
        args: tuple[Any, ...] = (r, leg.beats, leg.ticks, tick_w) if name == "KGATE_BEAT_FD" else (r, leg.data)
        target: Any = _read_beats if name == "KGATE_BEAT_FD" else _read_data
        reader = threading.Thread(target=target, args=args, daemon=True)
        reader.start()
        leg._readers.append(reader)
    return leg


def ended_how(returncode: int | None) -> str:
    """How a process ended, in words: its exit code, or the signal that killed it."""
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit code {returncode}"


def _watch_processes(leg: LegProcess) -> None:
    """While the leg runs: the orphans here every WATCH_EVERY_S, the leg's own tree every
    TREE_EVERY-th look (the leg reads its own at every timed round; this is the look it cannot
    answer for)."""
    looks = 0
    while not leg._watching.wait(WATCH_EVERY_S):
        try:
            leg.look(tree=looks % TREE_EVERY == 0)
        except (OSError, ValueError, IndexError):  # /proc read mid-change: the next look sees it
            pass
        looks += 1


_SUBREAPER: list[bool] = []


def _become_subreaper() -> None:
    """Once: this process (it runs legs) becomes their subreaper, so what a leg started and left
    is re-parented here, in kgate's view, not to init."""
    if not _SUBREAPER:
        _SUBREAPER.append(census.become_subreaper())


def _reap(pids: set[int]) -> None:
    """Collect the exit of those of `pids` that are this process's children (killed strays,
    zombies handed here), so none stays a zombie; waits at most a second."""
    deadline = time.monotonic() + 1.0
    left = set(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours (it was below a leg still alive), or reaped
                left.discard(pid)
                continue
            if done:
                left.discard(pid)
        if left:
            time.sleep(0.02)


def _processes_text(records: list[dict[str, Any]]) -> str:
    named = ", ".join(f"pid {r['pid']} ({r['name']})" for r in records[:4])
    more = f" and {len(records) - 4} more" if len(records) > 4 else ""
    return f"{len(records)} process(es) ({named}{more})"


def _forked(kind: str, env: Mapping[str, str], channels: Mapping[str, int], output_fd: int,
            own_session: bool, backend: str) -> forkserver.ForkedLeg | None:
    """The leg forked by the warm fork server for this environment and backend (see
    kgate.verify.forkserver): a server has imported its backend's framework only, as a fresh leg
    of that backend would (a torch leg never loads jax); None where there is none, or it could
    not fork: the caller starts a fresh process."""
    server_env = {k: v for k, v in env.items() if k not in channels and k != HELD_ENV}
    try:
        server = forkserver.server_for(server_env, backend)
    except OSError:  # the server itself could not be started
        return None
    if server is None:
        return None
    stdin_r, stdin_w = os.pipe()
    stdin = open(stdin_w, "wb")  # noqa: SIM115 (closed by start(), go() or release())
    try:
        return server.fork([kind, REQUEST_ON_STDIN], env, cwd=os.getcwd(), stdin_fd=stdin_r, output_fd=output_fd,
                           fd_env=channels, new_session=own_session, stdin=stdin)
    except (forkserver.ServerGone, OSError):
        stdin.close()
        return None
    finally:
        os.close(stdin_r)


def with_backend(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The request with the backend its problem needs (`backend`), chosen from the reference
    module's imports where the caller did not name one."""
    from kgate.backends import detect

    if "backend" in payload or "reference" not in payload:
        return dict(payload)
    return {**payload, "backend": detect(payload["reference"])}


# The process watch: the orphans here are looked at every WATCH_EVERY_S while a leg runs, the
# leg's own tree every TREE_EVERY-th look; a process still running LINGER_S after its leg
# exited is stopped, and the leg is a crash.
WATCH_EVERY_S = 0.1
CANDIDATE_IMPORT = "phase importing the candidate"  # the beat after which a leg runs candidate code
TREE_EVERY = 5
LINGER_S = 2.0
_LIVE: set[LegProcess] = set()

RESULT_BEAT = "result sha256 "  # a leg's last beat: the digest of the result file it wrote
_CHANNELS = ("KGATE_BEAT_FD", "KGATE_TICK_FD", "KGATE_DATA_FD")
REQUEST_ON_STDIN = "-"  # the request-path argument of every leg: its request is its stdin's first line

# Every leg runs candidate code or follows one that did: a compiled program or an autotuning
# result left on disk by one would be loaded by the next in place of its own (the reference's
# program swapped for a wrong or a slow one). Persistent caches are off in every leg; a reference
# leg reopens one whose files it loads only by a digest the parent holds (kgate.verify.refcache).
CACHE_DIRS = ("JAX_COMPILATION_CACHE_DIR",)
CACHES_OFF = {"JAX_ENABLE_COMPILATION_CACHE": "false"}
# Legs run side by side on one GPU (a gate's reference and candidate legs, a held timing leg):
# JAX's default of taking 75% of the GPU's memory at start would leave the second leg none.
SHARED_DEVICE = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                 # torch.compile's pool of compile processes would outlive a leg (they look for their parent
                 # once a minute): compiled in the leg's own process, nothing of it runs after the leg
                 "TORCHINDUCTOR_COMPILE_THREADS": "1"}

# What usually keeps a leg in a phase (by the phase name's first words), said when it overruns.
PHASE_CAUSES = {
    "importing": "work at import time (a large computation, a loop, a sleep, a download) in the module or "
                 "what it imports.",
    "making inputs": "an op-point too large for this machine, or slow host code (numpy loops) in create_inputs.",
    "making the shape probes": "slow host code (numpy loops) in create_inputs, run at the odd and drawn shapes.",
    "waiting for the shape probes": "the reference's process making the odd and drawn shapes' inputs (see its "
                                    "phase 'making the shape probes' inputs').",
    "tracing": "a Python loop unrolled into the program (a `for` over a large range in the kernel or the entry "
               "traces every iteration): use lax.fori_loop, or a grid axis.",
    "compiling": "a very large program, usually a Python loop unrolled at trace time: use lax.fori_loop, or a "
                 "grid axis.",
    "timing": "a timed call that never returns (a loop or a wait in the kernel or the entry), past --budget and "
              "one phase budget more.",
    "running": "an interpreted kernel at a large op-point (the interpreter runs every grid step in Python): run "
               "at TINY (kgate gate) or a smaller --set; or a loop that never ends.",
    "firing audit": "re-tracing the program with its kernels replaced: the causes of slow tracing (a Python "
                    "loop unrolled into the program).",
    "reference": "the reference (or its float64 oracle) at a large op-point on this machine.",
    "waiting": "the other leg did not finish in time.",
    "starting": "the interpreter or the array library starting slowly (a busy or swapping machine).",
}


def _read_beats(fd: int, beats: list[tuple[int, str]], ticks: list[tuple[int, int]], tick_fd: int) -> None:
    """Stamp each beat line; answer `r I` with tick `g I` when I is the next round and round
    I-1 has ended (a request out of turn, forged or early, gets no tick)."""
    ended: set[int] = set()
    try:
        with os.fdopen(fd, "rb", buffering=0) as stream:
            pending = b""
            while chunk := stream.read(4096):
                now = time.monotonic_ns()
                pending = (pending + chunk)[-(1 << 16):]  # a flood without newlines cannot grow without bound
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    line = raw.decode(errors="replace")
                    beats.append((now, line))
                    parsed = round_line(line)
                    if parsed is None:
                        continue
                    kind, index = parsed
                    if kind == "e":
                        ended.add(index)
                    elif tick_fd >= 0 and index == len(ticks) and (not ticks or len(ticks) - 1 in ended):
                        ticks.append((time.monotonic_ns(), index))
                        try:
                            os.write(tick_fd, f"g {index}\n".encode())
                        except OSError:  # the leg is gone, or never reads its ticks: it gets no more
                            os.close(tick_fd)
                            tick_fd = -1
    finally:
        if tick_fd >= 0:
            os.close(tick_fd)


STARTING = "starting (the interpreter, kgate and the array library)"
# Starting runs none of the problem's code, so a small --phase-budget meant for its modules
# does not stop it; a start that takes longer than this is a broken machine.
STARTING_FLOOR_S = 120.0
HELD_ENV = "KGATE_HELD"  # a leg started ahead: it waits for its request (see `start`)
HELD = "held (started ahead, waiting for its request)"
RELEASED = "starting (released: reading its request, opening the device)"


def phase_seconds(clock: Mapping[str, Any]) -> list[list[Any]]:
    """Where a leg's wall time went, from its `parent_clock`: [phase, seconds] in the order the
    phases began, each phase's stretches summed (from its `phase NAME` beat to the next one),
    the time before the first beat as STARTING. The stamps are the parent's, not the leg's."""
    wall = int(clock.get("wall_ns", 0))
    marks: list[tuple[int, str]] = [(0, STARTING)]
    marks += [(int(ns), str(line)[6:]) for ns, line in clock.get("beats", []) if str(line).startswith("phase ")]
    spent: dict[str, int] = {}
    for (start, name), (end, _) in zip(marks, [*marks[1:], (max(wall, marks[-1][0]), "")]):
        spent[name] = spent.get(name, 0) + max(0, end - start)
    return [[name, round(ns / 1e9, 3)] for name, ns in spent.items() if ns or name != STARTING]


# Filled in place, never rebound: the process watch flags a kgate global that changes identity.
_RECORDING: list[list[tuple[int, str]]] = []


@contextmanager
def phases_here() -> Iterator[dict[str, Any]]:
    """For a command that runs in this process (`kgate measure`, `kgate calibrate`): record its
    own phase beats on its own clock; the dict is filled on exit in `parent_clock`'s shape.
    Diagnostics only: nothing is graded on them."""
    clock: dict[str, Any] = {}
    started, beats = time.monotonic_ns(), []
    _RECORDING.append(beats)
    try:
        yield clock
    finally:
        _RECORDING.remove(beats)
        clock.update(wall_ns=time.monotonic_ns() - started, beats=[[ns - started, line] for ns, line in beats])


def no_dumps() -> None:
    """Mark this process non-dumpable (Linux): another process of the same user, without
    ptrace rights, can no longer read its memory through /proc. No effect elsewhere."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


# What `beat` writes with, bound at kgate import; and the beat channel as the leg found it at its
# first beat, before any candidate code ran (descriptor, device, inode): filled once, never rebound.
_write, _fstat, _exit = os.write, os.fstat, os._exit
_CHANNEL: list[tuple[int, int, int]] = []
CHANNEL_REPLACED_EXIT = 70


def beat(text: str) -> None:
    """In a leg: one line on the beat channel, which the parent timestamps with its own clock
    (nothing when the process is not a leg). Always the pipe the leg had at its first beat: one
    whose descriptor now names another file (the candidate put its own pipe there, to speak for
    kgate) ends the leg at once, without a result."""
    if _RECORDING and text.startswith("phase "):
        _RECORDING[-1].append((time.monotonic_ns(), text))
    if not _CHANNEL:
        named = os.environ.get("KGATE_BEAT_FD")
        if not named:
            return
        found = _fstat(int(named))
        _CHANNEL.append((int(named), found.st_dev, found.st_ino))
    fd, device, inode = _CHANNEL[0]
    try:
        now = _fstat(fd)
        same = (now.st_dev, now.st_ino) == (device, inode)
    except OSError:
        same = False
    if not same:
        _write(2, b"kgate: the leg's beat channel is no longer the pipe kgate gave it (code in this process closed "
                  b"or replaced its descriptor); the leg stops without a result\n")
        _exit(CHANNEL_REPLACED_EXIT)
    _write(fd, text.encode() + b"\n")


def wait_tick(index: int, timeout_s: float = 120.0) -> None:
    """In a leg: ask the parent for round `index`'s tick and block until it arrives (nothing
    when the process is not a timed leg). Raises when the parent never answers."""
    fd = os.environ.get("KGATE_TICK_FD")
    if not fd:
        return
    poller = select.poll()
    poller.register(int(fd), select.POLLIN)
    if poller.poll(0):  # a tick nobody asked for: someone else requested this round early
        raise RuntimeError(f"a tick for timed round {index} was waiting before kgate asked for it: a forged request")
    beat(f"r {index}")
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(int(left * 1000) + 1):
            raise RuntimeError(f"kgate's parent sent no tick for timed round {index} within {timeout_s:.0f} s")
        line = os.read(int(fd), 64)
        if not line:
            raise RuntimeError(f"kgate's tick channel closed before timed round {index}")
        if line != f"g {index}\n".encode():  # one tick per request, sent only after the previous round ended
            raise RuntimeError(f"kgate's tick channel carried {line[:40]!r} where the tick for round {index} belonged")
        return


def _read_data(fd: int, sink: bytearray) -> None:
    with os.fdopen(fd, "rb", buffering=0) as stream:
        while chunk := stream.read(1 << 20):
            sink.extend(chunk)


def run(kind: str, payload: Mapping[str, Any], workdir: Path, *, env: Mapping[str, str] | None = None,
        beats: bool = False, phase_budget_s: float | None = None,
        on_phase: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Start a leg and wait for its result (with `parent_clock`: its wall time and beats on this
    clock); with `phase_budget_s`, a leg that stays longer in one of its phases is stopped (a
    measure leg's timing, once past its payload's `deadline` plus that budget); `on_phase` is
    told the phases it enters."""
    leg = start(kind, payload, workdir, env=env, beats=beats)
    leg.timing_until = timing_until(payload, phase_budget_s)
    return leg.wait_phased(phase_budget_s, on_phase) if phase_budget_s or on_phase else leg.wait()


def timing_until(payload: Mapping[str, Any] | None, phase_budget_s: float | None) -> float | None:
    """When a measure leg's timing is stopped: its whole run's deadline plus one phase budget."""
    deadline = (payload or {}).get("deadline")
    if not isinstance(deadline, (int, float)) or not phase_budget_s:
        return None
    return float(deadline) + phase_budget_s
