"""Legs forked from kgate's fork server: to the code they run they look like fresh processes,
and a leg that stops or kills the server can delay the run but never pass it.

Each candidate here records what it sees of its process (or attacks its parent) at import,
inside a real gate; the same gate run with KGATE_FORKSERVER=0 (a fresh process per leg) is the
yardstick.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import EXAMPLES, gate
from kgate.errors import KgateError
from kgate.verify import forkserver, spawn

REFERENCE = str(EXAMPLES / "softmax" / "reference.py")
RIGHT = (EXAMPLES / "softmax" / "pallas.py").read_text()  # a kernel that passes the gate
# the same for a torch problem: its legs fork from a server that imported torch, never jax
TORCH_REFERENCE = str(EXAMPLES / "model_torch" / "softmax_reference.py")
TORCH_RIGHT = (EXAMPLES / "model_torch" / "softmax_triton.py").read_text()

# What a leg's code can see of its own process, written into the folder KGATE_TEST_LEG_RECORD names.
RECORDER = '''
import json, os, signal, sys
import numpy as np

def _kind(fd):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # the listing's own descriptor, closed by now
        return None
    if target.startswith(("pipe:", "socket:")):
        return target.split(":")[0]
    return target if target.startswith(("anon_inode:", "/dev/")) else "file"

def _threads():
    names = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            names.append(f.read().strip())
    return sorted(names)

with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
    parent = f.read().replace(b"\\0", b" ").decode()
handler = signal.getsignal(signal.SIGINT)
record = {
    "fds": sorted(k for k in (_kind(fd) for fd in os.listdir("/proc/self/fd")) if k),
    "stdio": [_kind(0), _kind(1), _kind(2)],
    "threads": _threads(),
    "own_session": os.getsid(0) == os.getpid(),
    "group_leader": os.getpgid(0) == os.getpid(),
    "cwd": os.getcwd(),
    "path0": sys.path[0],
    "argv0": os.path.basename(sys.argv[0]),
    "sigint": "default" if handler is signal.default_int_handler else str(handler),
    "env": sorted(k for k in os.environ),
    "forked": "kgate.verify.forkserver" in parent,
    "numpy_draw": int(np.random.randint(2**31)),  # numpy's legacy global generator, unseeded
    # torch's generator, seeded once per process at its import; which frameworks are loaded
    "torch_draw": int(sys.modules["torch"].randint(2**31, (1,))[0]) if "torch" in sys.modules else None,
    "frameworks": sorted(m for m in ("jax", "torch", "triton") if m in sys.modules),
}
with open(os.path.join(os.environ["KGATE_TEST_LEG_RECORD"], os.path.basename(__file__) + ".json"), "w") as f:
    json.dump(record, f)
'''


def _recorded_gate(write_module, tmp_path, monkeypatch, name: str, reference: str = REFERENCE,
                   right: str = RIGHT) -> tuple[str, dict]:
    cand = write_module(f"{name}.py", RECORDER + right)
    out = tmp_path / f"{name}.py.json"
    monkeypatch.setenv("KGATE_TEST_LEG_RECORD", str(tmp_path))  # one environment: one server for every gate
    report = gate(reference, str(cand))
    return report.status, json.loads(out.read_text())


@pytest.mark.full
@pytest.mark.parametrize("problem", [(REFERENCE, RIGHT), (TORCH_REFERENCE, TORCH_RIGHT)], ids=["jax", "torch"])
def test_a_forked_leg_sees_the_process_a_fresh_leg_sees(write_module, tmp_path, monkeypatch, problem):
    forked_status, forked = _recorded_gate(write_module, tmp_path, monkeypatch, "forked", *problem)
    _, again = _recorded_gate(write_module, tmp_path, monkeypatch, "again", *problem)  # from the same server
    assert again["forked"] and again["numpy_draw"] != forked["numpy_draw"]  # no draw shared by two forks
    assert again["torch_draw"] is None or again["torch_draw"] != forked["torch_draw"]
    monkeypatch.setenv(forkserver.ENV, "0")
    fresh_status, fresh = _recorded_gate(write_module, tmp_path, monkeypatch, "fresh", *problem)
    assert forked_status == fresh_status == "PASS"
    assert fresh["frameworks"] == (["jax"] if problem[0] == REFERENCE else ["torch", "triton"])
    for record in (forked, fresh):
        record.pop("numpy_draw")
        record.pop("torch_draw")
    assert forked.pop("forked") is True and fresh.pop("forked") is False
    fresh["env"].remove(forkserver.ENV)  # the switch that turned forking off
    # the same descriptors (no socket to the server, no sibling's pipe), the same threads (the
    # BLAS pool included), session, directory, import path, SIGINT and environment names
    assert forked == fresh
    assert "socket" not in forked["fds"]
    assert forked["own_session"] and forked["group_leader"]


def test_legs_share_a_server_per_environment_and_backend_and_not_across():
    env = {k: v for k, v in os.environ.items()}
    first = forkserver.server_for(env)
    assert first is not None and forkserver.server_for(dict(env)) is first
    other = forkserver.server_for({**env, "XLA_FLAGS": "--xla_cpu_use_thunk_runtime=true"})
    assert other is not None and other is not first
    torch = forkserver.server_for(env, "torch")  # the same environment, another framework imported
    assert torch is not None and torch not in (first, other) and forkserver.server_for(env, "torch") is torch
    assert forkserver.server_for(env, "tensorflow") is None  # no server for a backend kgate has not


def test_forking_off_starts_every_leg_as_a_fresh_process(tmp_path, monkeypatch):
    monkeypatch.setenv(forkserver.ENV, "0")
    leg = spawn.start("inputs", None, tmp_path / "a", held=True)
    assert isinstance(leg.proc, subprocess.Popen)
    leg.discard()
    monkeypatch.delenv(forkserver.ENV)
    leg = spawn.start("inputs", None, tmp_path / "b", held=True)
    assert isinstance(leg.proc, forkserver.ForkedLeg)
    leg.discard()
    assert leg.proc.returncode is not None


KILLS_ITS_PARENT = '''
import os, signal
with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
    if b"kgate.verify.forkserver" in f.read():
        os.kill(os.getppid(), signal.SIG{SIG})
'''


@pytest.mark.full
def test_a_candidate_that_kills_the_fork_server_gets_no_verdict(write_module):
    cand = write_module("kills.py", KILLS_ITS_PARENT.replace("{SIG}", "KILL") + RIGHT)
    with pytest.raises(KgateError, match="fork server ended"):
        gate(REFERENCE, str(cand))
    assert gate(REFERENCE, str(write_module("right.py", RIGHT))).status == "PASS"  # a new server for the next run


@pytest.mark.full
def test_a_candidate_that_stops_the_fork_server_fails_and_hangs_nothing(write_module):
    cand = write_module("stops.py", KILLS_ITS_PARENT.replace("{SIG}", "STOP") + RIGHT)
    started = time.monotonic()
    with pytest.raises(KgateError, match="kgate's fork server (did not report|ended)"):
        gate(REFERENCE, str(cand))
    assert time.monotonic() - started < 120
    after = gate(REFERENCE, str(write_module("right.py", RIGHT)))
    assert after.status == "PASS", [(name, c.name, c.detail) for name, c in after.failed_checks]  # said, if it fails


def test_a_server_killed_from_outside_ends_its_legs_and_the_next_start_gets_a_new_one(tmp_path):
    leg = spawn.start("inputs", None, tmp_path / "a", beats=True, held=True)
    assert leg.wait_beat("phase " + spawn.HELD, timeout_s=120)
    server = leg.proc.server
    server.proc.send_signal(signal.SIGKILL)
    result = leg.wait(timeout_s=30)
    assert result["status"] == "CRASHED" and "fork server ended" in result["error"]["problem"]
    deadline = time.monotonic() + 10
    while not _gone(leg.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(leg.proc.pid)  # the leg was ended with its server, not left running unwatched
    again = spawn.start("inputs", None, tmp_path / "b", held=True)
    assert again.proc.server is not server
    again.discard()


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_forked_legs_leave_no_descriptor_behind_in_the_parent(tmp_path):
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    import gc

    spawn.start("inputs", None, tmp_path / "warm", held=True).discard()  # the server started
    gc.collect()  # what earlier tests in this worker left to the collector closes its descriptors now
    before = open_fds()
    for n in range(5):
        leg = spawn.start("inputs", None, tmp_path / f"leg{n}", held=True)
        leg.discard()
        assert leg.proc.returncode is not None
    # the worker holds other tests' fork servers and legs, whose threads open and close descriptors of
    # their own (one more, or one fewer, seen in clean-clone runs): a leak of the legs' (five or more) stays
    settled = time.monotonic() + 3.0
    while open_fds() > before and time.monotonic() < settled:
        gc.collect()
        time.sleep(0.05)
    assert open_fds() <= before


_LATE_IMPORTS = r"""
import sys
from kgate.backends import get_backend
from kgate.problem import load_pair
from kgate.verify.leg import never_trust_bytecode

backend = get_backend("jax")
backend.load_lazy_modules()  # as kgate.verify.leg.main does, before it trusts no bytecode
never_trust_bytecode()
before = {name for name, module in sys.modules.items() if module is not None}
absent = {name for name, module in sys.modules.items() if module is None and name.startswith("jax")}
with load_pair(sys.argv[1], sys.argv[2], use_tiny=True) as pair:
    inputs, _ = backend.create_inputs(pair.reference, 0, None)
    backend.run(pair.candidate.entry, inputs)
    for platform in ("tpu", "cuda"):
        backend.lower_for(pair.candidate.entry, inputs, platform, "TINY")
late = sorted(name for name, module in sys.modules.items()
              if module is not None and name not in before and name.split(".")[0] in ("jax", "jaxlib", "kgate"))
print(sorted(absent))
print(late)
"""


def test_a_leg_loads_what_jax_imports_late_while_bytecode_is_trusted_and_compiles_none_of_it_from_source():
    """A Pallas kernel's run and its lowering for each device import jax modules late; after a
    leg stops trusting bytecode each would be compiled from source (seconds per leg). The leg
    loads them before; one that cannot load here (jax's Mosaic GPU needs absl) stays absent, so
    jax's own later tries fail at once."""
    out = subprocess.run(
        [sys.executable, "-P", "-c", _LATE_IMPORTS, str(EXAMPLES / "rmsnorm" / "reference.py"),
         str(EXAMPLES / "rmsnorm" / "pallas.py")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    absent, late = (json.loads(line.replace("'", '"')) for line in out.stdout.strip().splitlines()[-2:])
    assert late == [], f"imported after bytecode stopped being trusted: {late}"
    from kgate.backends.jax_backend import LAZY_MODULES

    assert set(absent) <= set(LAZY_MODULES)


def test_a_watch_takes_the_surfaces_snapshot_ahead_only_while_nothing_they_cover_has_changed():
    """The fork server snapshots what a leg's Watch watches once (kgate.verify.watch.prepare); a
    leg forked from it takes those snapshots only after a diff finds nothing changed since, so a
    patch made between the two is never folded into what the watch calls the state before."""
    import jax.numpy as jnp

    from kgate.backends import get_backend
    from kgate.verify import watch

    backend = get_backend("jax")
    original = jnp.tanh
    list(watch.prepare(backend.name, backend.watched_modules))  # every step
    ahead = watch.Watch(backend)
    assert ahead.prepared_ahead
    try:
        jnp.tanh = lambda x: x  # after the watch began: seen, as with a snapshot of its own
        ahead.check("after a call")
        assert any("jax.numpy.tanh" in change for change in ahead.changes), ahead.changes
    finally:
        jnp.tanh = original
    assert not watch.Watch(backend).prepared_ahead  # a snapshot ahead serves one watch
    steps = watch.prepare(backend.name, backend.watched_modules)
    next(steps)
    assert not watch.Watch(backend).prepared_ahead  # ready only once every step ran
    list(watch.prepare(backend.name, backend.watched_modules))  # every step
    try:
        jnp.tanh = lambda x: x  # between the snapshot ahead and the watch: that snapshot is not used
        assert not watch.Watch(backend).prepared_ahead
    finally:
        jnp.tanh = original
