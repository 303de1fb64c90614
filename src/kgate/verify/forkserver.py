"""A fork server for legs: one process that starts the interpreter and imports kgate and one
backend's array library once (jax, or torch and Triton), then forks each leg of that backend
from that state, so a leg no longer pays ~1.3 s (jax) or ~3 s (torch) of start-up, and a core's
worth of it, before it does anything of the problem's.

The server itself never loads a problem module: every fork starts from a process that has run
nothing but kgate's and its backend's imports, exactly what a fresh `python -m
kgate.verify.leg` of that backend has run by the time it reads its request, so the isolation between legs is
the same as with fresh processes (a leg shares no memory with its siblings, only a copy of
that common start). The server opens no device: a fork after a device exists is unsafe.

It is started by the parent that runs legs, talks to it over a private socket pair (never a
name another process could open), and is keyed by its backend and the whole environment its
imports read: a leg whose environment differs in anything but its own channels gets a server of
its own. The parent hears each leg's pid and exit code from it; a leg forked here is the
server's child, in the parent's process group unless it asked for a session of its own. Torch
legs are forked only where torch is a CPU build (a CUDA or ROCm build asks for its devices at
kgate's import). `KGATE_FORKSERVER=0` turns it off (every leg a fresh process), as does a platform without `fork` or `pidfd_open`.
No framework import at module level: the parent imports this module.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kgate.verify import census

# Every process kgate starts runs `python -P -m ...`: its working folder is not put on sys.path,
# so a `kgate/` (or `jax/`) package a candidate planted where kgate runs is never imported by a
# later leg, fork server or suite worker.
SAFE_PATH = ("-P",)

ENV = "KGATE_FORKSERVER"  # 0: every leg a fresh process
_MAX_MESSAGE = 1 << 20
_MAX_FDS = 16
_MAX_SERVERS = 4  # environments kept warm at once; the least recently used one is closed past it
BACKENDS = ("jax", "torch")  # a server imports one of them (kgate.backends.NAME_backend)


class ServerGone(RuntimeError):
    """The fork server ended or did not answer: the caller starts the leg as a fresh process."""


class ForkedLeg:
    """A leg forked by the server, with the part of `subprocess.Popen`'s interface legs use.

    The parent holds a pidfd of its own for the leg: it sees the leg end and can kill it without
    the server, so a server that stops answering (a leg may stop or kill it) can delay an exit
    code but never keep a leg alive past its budget or hang the parent."""

    def __init__(self, server: ForkServer, pid: int, pidfd: int, stdin: Any, args: Sequence[str]) -> None:
        self.server, self.pid, self.stdin, self.args = server, pid, stdin, list(args)
        self.returncode: int | None = None
        self.lost = ""  # why its exit code never came from the server (a stopped or killed server)
        self._ended_at: float | None = None
        self._pidfd: int | None = pidfd  # the server's own, handed over: never a recycled pid

    def poll(self) -> int | None:
        with self.server.lock:  # the pidfd is closed once, by whichever thread sees the end
            if self.returncode is None:
                self.server.collect(0.0)
                self._check_ended()
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else _now() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - _now()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self.server.collect(0.05 if left is None else min(left, 0.05))
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        with self.server.lock:
            self._kill()

    def _kill(self) -> None:
        if self.returncode is None and self._pidfd is not None:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _check_ended(self) -> None:
        """Ended with no word from the server within EXIT_GRACE_S: exit code unknown (255)."""
        if self.returncode is not None:
            self._close()
            return
        if self._pidfd is None or not select.select([self._pidfd], [], [], 0)[0]:
            return
        self._ended_at = self._ended_at or _now()
        if self.server.gone or _now() - self._ended_at > EXIT_GRACE_S:
            self.returncode = 255
            self.lost = "kgate's fork server did not report the leg's exit (a process of the run stopped it)"
            self._close()
            self.server._stop()  # a server that stopped answering forks nothing more

    def _close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


EXIT_GRACE_S = 10.0  # how long an ended leg's exit code may take to come from the server
FORK_TIMEOUT_S = 60.0  # the server's start (the interpreter, jax) plus one fork, on a busy machine
READY_FORK_TIMEOUT_S = 20.0  # one fork from a started server


class ForkServer:
    """The parent's end: a started server and the legs it forked."""

    def __init__(self, env: Mapping[str, str], backend: str = "jax") -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.owner = os.getpid()
        self.sock = mine
        self.lock = threading.RLock()
        self.legs: dict[int, ForkedLeg] = {}
        self.gone = False
        self.ready = False
        self.requests = 0
        try:
            self.proc = subprocess.Popen(
                [sys.executable, *SAFE_PATH, "-m", "kgate.verify.forkserver", str(theirs.fileno()), backend],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=dict(env), pass_fds=(theirs.fileno(),),
            )
        except OSError:
            mine.close()
            raise
        finally:
            theirs.close()
        census.own(self.proc.pid)  # kgate's own child: never taken for a process a leg left behind
        atexit.register(self.close)

    def fork(self, argv: Sequence[str], env: Mapping[str, str], *, cwd: str, stdin_fd: int, output_fd: int,
             fd_env: Mapping[str, int], new_session: bool, stdin: Any) -> ForkedLeg:
        """Fork a leg running `python -m kgate.verify.leg ARGV`: stdin from `stdin_fd`, stdout
        and stderr to `output_fd`, and each fd of `fd_env` (env name -> fd here) handed over and
        named in its environment. Raises ServerGone when the server cannot; then no leg of
        this request runs (the server, and with it anything it forked, is ended)."""
        channels = sorted(fd_env)
        with self.lock:
            if self.gone:
                raise ServerGone("the fork server has ended")
            self.requests += 1
            request = self.requests
            message = json.dumps({"id": request, "argv": list(argv), "channels": channels, "cwd": cwd,
                                  "env": {k: v for k, v in env.items() if k not in fd_env},
                                  "new_session": new_session}).encode()
            try:
                socket.send_fds(self.sock, [message], [stdin_fd, output_fd, *(fd_env[n] for n in channels)])
                deadline = _now() + (FORK_TIMEOUT_S if not self.ready else READY_FORK_TIMEOUT_S)
                while not self.gone and _now() < deadline:
                    reply = self._receive(max(0.0, deadline - _now()))
                    if reply is not None and reply.get("id") == request:
                        leg = ForkedLeg(self, int(reply["pid"]), reply["pidfd"], stdin, ["kgate.verify.leg", *argv])
                        self.legs[leg.pid] = leg
                        return leg
            except BaseException:  # an interrupted exchange: what the server says next is not to be trusted
                self._stop()
                raise
            self._stop()
            raise ServerGone("the fork server did not fork the leg in time")

    def collect(self, timeout_s: float) -> None:
        """Read what the server said within `timeout_s` (exits, readiness)."""
        with self.lock:
            if not self.gone:
                self._receive(timeout_s)

    def close(self) -> None:
        """End the server and every leg it still has, and reap it, so its CPU time counts toward
        this process's children, as a leg's did. Called for an idle server, for a dead one, and
        for every server at this process's exit."""
        with self.lock:
            if not self.gone:
                self.sock.close()
                self.gone = True
            self._end_legs("kgate's fork server was closed while the leg ran, and the leg was stopped")
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _stop(self) -> None:
        """A server that stopped answering: killed (its legs die with it: PR_SET_PDEATHSIG)."""
        with self.lock:
            self.proc.kill()
            self._ended()

    def _receive(self, timeout_s: float) -> dict[str, Any] | None:
        """One message (applied), or None when none came in time or the server is gone."""
        if not select.select([self.sock], [], [], timeout_s)[0]:
            return None
        try:
            raw, fds, _, _ = socket.recv_fds(self.sock, _MAX_MESSAGE, 1)
        except OSError:
            raw, fds = b"", []
        for fd in fds:
            os.set_inheritable(fd, False)
        if not raw:
            self._ended()
            return None
        message = json.loads(raw)
        if "pid" in message:
            message["pidfd"] = fds[0]
            if message.get("id") != self.requests:  # a reply to a request given up: nobody's leg
                signal.pidfd_send_signal(fds[0], signal.SIGKILL)
                os.close(fds[0])
        if "exit" in message:
            leg = self.legs.pop(int(message["exit"]), None)
            if leg is not None and leg.returncode is None:
                leg.returncode = int(message["returncode"])
            if leg is not None:
                leg._close()
        if "ready" in message:
            self.ready = True
        return message

    def _ended(self) -> None:
        """The server is gone: no exit code will come for the legs still out, so they are ended
        here (a leg outliving what watches it would run unobserved) and reported killed."""
        self.gone = True
        self.sock.close()
        self._end_legs("kgate's fork server ended while the leg ran (a process of the run killed it), and the leg "
                       "was stopped")

    def _end_legs(self, why: str) -> None:
        for leg in self.legs.values():
            if leg.returncode is None:
                leg._kill()
                leg.returncode = -signal.SIGKILL
                leg.lost = why
            leg._close()
        self.legs.clear()


_SERVERS: dict[tuple[tuple[str, str], ...], ForkServer] = {}
_SERVERS_LOCK = threading.Lock()


def available() -> bool:
    return os.environ.get(ENV, "1") != "0" and hasattr(os, "fork") and hasattr(os, "pidfd_open") and \
        hasattr(socket, "send_fds")


@functools.lru_cache(maxsize=1)  # read once per process, not at every torch leg
def _torch_has_a_device_runtime() -> bool:
    """Whether the installed torch is a CUDA or ROCm build, read from its files (never imported
    here): importing kgate's torch backend asks such a build for its devices, which initializes
    the driver, and a fork after that is unsafe."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.origin:
        return False
    lib = Path(spec.origin).parent / "lib"
    return any(lib.glob("libtorch_cuda*")) or any(lib.glob("libtorch_hip*"))


def server_for(env: Mapping[str, str], backend: str = "jax") -> ForkServer | None:
    """The warm server for this environment and backend (started on first use); None where
    forking is off, and for torch legs where torch is a CUDA or ROCm build."""
    if not available() or backend not in BACKENDS:
        return None
    if backend == "torch" and _torch_has_a_device_runtime():
        return None
    key = (backend, *sorted(env.items()))
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None and (server.gone or server.owner != os.getpid()):
            del _SERVERS[key]
            if server.owner == os.getpid():
                server.close()  # reaped
            server = None
        if server is None:
            idle = [k for k, s in _SERVERS.items() if not s.legs]  # a server with legs out keeps them
            for stale in idle[:max(0, len(_SERVERS) - _MAX_SERVERS + 1)]:
                _SERVERS.pop(stale).close()
            server = _SERVERS[key] = ForkServer(env, backend)
        else:  # most recently used last
            _SERVERS[key] = _SERVERS.pop(key)
        return server


def _now() -> float:
    import time

    return time.monotonic()


# ---- the server's side ---------------------------------------------------------------------

def serve(fd: int, backend: str = "jax") -> None:
    sock = socket.socket(fileno=fd)
    interrupt = signal.getsignal(signal.SIGINT)  # what a fresh process would start with
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for the legs and the parent
    from kgate.verify.spawn import no_dumps

    no_dumps()
    before = dict(os.environ)
    # What a leg of this backend imports before it reads its problem (see leg.main): the
    # framework's import, no device.
    import importlib

    import kgate.verify.leg  # noqa: F401

    module = importlib.import_module(f"kgate.backends.{backend}_backend")
    if hasattr(module, "load_lazy_modules"):
        module.load_lazy_modules()

    # Variables those imports set (jax sets a few defaults), which a fresh leg would have too.
    imported = {k: v for k, v in os.environ.items() if before.get(k) != v}

    children: dict[int, tuple[int, int, str]] = {}  # pidfd -> (pid, pidfd, the leg's kind)
    # Once a leg that watches has come and gone, this server serves a run of many (a suite, a
    # test session): while idle it takes, step by step, the snapshots their watch would take.
    preparing: Iterator[None] | None = None
    prepare_started = False  # once per server
    try:
        sock.send(b'{"ready": true}')
        while True:
            waiting = select.select([sock, *children], [], [], None if preparing is None else 0)[0]
            if not waiting and preparing is not None:
                if next(preparing, _DONE) is _DONE:
                    preparing = None
                continue
            for ready in waiting:
                if ready is not sock:
                    pid, pidfd, kind = children.pop(ready)
                    if kind in WATCHING_LEGS and not prepare_started:
                        prepare_started, preparing = True, _prepare_watch(module, backend)
                    _, status = os.waitpid(pid, 0)
                    os.close(pidfd)
                    sock.send(json.dumps({"exit": pid, "returncode": os.waitstatus_to_exitcode(status)}).encode())
                    continue
                raw, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, _MAX_FDS)
                if not raw:
                    return  # the parent is gone
                message = json.loads(raw)
                pid = os.fork()
                if pid == 0:
                    _child(message, fds, sock, interrupt, list(children), imported)
                for passed in fds:
                    os.close(passed)
                pidfd = os.pidfd_open(pid)
                children[pidfd] = (pid, pidfd, str((message.get("argv") or [""])[0]))
                socket.send_fds(sock, [json.dumps({"id": message["id"], "pid": pid}).encode()], [pidfd])
    except OSError:
        return  # the parent's end is closed
    finally:  # nobody will read their results (they also die with this process: PR_SET_PDEATHSIG)
        for _, pidfd, _ in children.values():
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass


WATCHING_LEGS = frozenset({"candidate-probes", "measure", "lower", "fit"})  # the legs that build a Watch
_DONE = object()


def _prepare_watch(module: Any, backend: str) -> Iterator[None]:
    """The steps of snapshotting what a leg's Watch watches (kgate.verify.watch.prepare), with the
    kgate modules a leg has loaded by then imported first: every leg forked after the last step
    inherits the snapshots and skips about a second of work, once it has checked that nothing
    they cover changed. Nothing of a problem's has run here. A failure costs only that second, in
    each leg."""
    try:
        import kgate.verify.measure  # noqa: F401  (with probes: what the legs that watch import)
        import kgate.verify.probes  # noqa: F401
        from kgate.verify import watch

        cls = next(v for v in vars(module).values() if isinstance(v, type) and hasattr(v, "watched_modules")
                   and v.__module__ == module.__name__)
        yield from watch.prepare(backend, cls.watched_modules)
    except Exception:  # noqa: BLE001
        return


def _child(message: dict[str, Any], fds: list[int], sock: socket.socket, interrupt: Any, pidfds: list[int],
           imported: Mapping[str, str]) -> None:
    """In the forked leg: become what `python -m kgate.verify.leg ARGV` would be at that point,
    then run it. Never returns."""
    code = 1
    try:
        _die_with_server()
        sock.close()  # the server's channel, and its watch on the other legs, stay the server's
        for pidfd in pidfds:
            os.close(pidfd)
        stdin_fd, output_fd, *channel_fds = fds
        os.dup2(stdin_fd, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        for fd in (stdin_fd, output_fd):
            if fd > 2:
                os.close(fd)
        env = {**imported, **message["env"]}
        env.update({name: str(fd) for name, fd in zip(message["channels"], channel_fds)})
        os.environ.clear()
        os.environ.update(env)
        os.chdir(message["cwd"])
        if message["new_session"]:
            os.setsid()
        if interrupt is not None:
            signal.signal(signal.SIGINT, interrupt)
        import importlib

        from kgate.verify import leg

        sys.argv = [str(leg.__file__), *message["argv"]]
        # no working folder on sys.path (the server runs with -P): a `kgate/` or `jax/` folder a
        # candidate planted where kgate runs is never imported; the problem's folders are put on
        # the path by name where a module is loaded (kgate.problem.module)
        importlib.invalidate_caches()  # a module written since the server started is found
        _as_fresh()
        code = leg.main(sys.argv)
    except SystemExit as exc:  # as the interpreter ends a fresh process on it
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:  # a fresh process ends killed by SIGINT
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # noqa: BLE001 - a leg's own error, as a fresh process would print it
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _die_with_server() -> None:
    """A leg ends when its server does (Linux's PR_SET_PDEATHSIG): a server killed before it
    could report the fork leaves no leg running that nobody watches."""
    server = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != server:  # the server died before the line above
        os._exit(1)


def _as_fresh() -> None:
    """What a fork shares with its siblings that a fresh process draws for itself. numpy's
    legacy global generator was seeded once, in the server: every leg would draw the same
    numbers (Python's `random` reseeds itself at a fork). OpenBLAS shuts its thread pool down
    at a fork and starts it again on the next large product; a fresh process has that pool
    from numpy's import on, and the thread census counts every interpreter-named thread not in
    its baseline: the pool starts now, as a fresh leg has it."""
    import numpy as np

    np.random.seed()  # from the OS's entropy
    block = np.ones((128, 128))
    block @ block
    torch = sys.modules.get("torch")
    if torch is not None:  # torch seeds its generator once per process, at import: in the server
        torch.seed()


if __name__ == "__main__":
    serve(int(sys.argv[1]), *sys.argv[2:3])
