"""What candidate code could patch in its own process, watched from before its import.

A process that runs candidate code can still be asked for numbers (its outputs, its
timings, its programs); every function those numbers pass through is snapshot before the
candidate is imported and re-checked after each candidate call.
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

from kgate.problem.snapshot import ModuleSnapshot, loaded_modules, snapshot_module, snapshot_surface
from kgate.verify import census
from kgate.verify.seals import seal


def _interpreter_state() -> dict[str, Any]:
    """Interpreter settings that change how threads are scheduled or what runs between calls: a
    hook set here runs code of the candidate's later, inside kgate's own work (the garbage
    collector's callbacks run wherever a collection happens to start)."""
    state = {
        "sys.getswitchinterval()": sys.getswitchinterval(),
        "sys.getprofile()": sys.getprofile(),
        "sys.gettrace()": sys.gettrace(),
        "threading profile hook": getattr(threading, "_profile_hook", None),
        "threading trace hook": getattr(threading, "_trace_hook", None),
        "gc.callbacks": tuple(gc.callbacks),
        "gc.get_threshold()": gc.get_threshold(),
        "gc.isenabled()": gc.isenabled(),
    }
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12 on: a tool registered runs on the events it asks for
    if monitoring is not None:
        state["sys.monitoring tools"] = tuple(monitoring.get_tool(i) for i in range(6))
    # a signal's handler runs wherever the signal lands, inside a timed call too; an interval timer
    # armed delivers one at a time of the candidate's choosing
    for name, sig in _SIGNALS:
        state[f"the {name} handler"] = signal.getsignal(sig)
    for name, which in _TIMERS:
        state[f"{name} armed"] = signal.getitimer(which)[0] > 0
    return state


def _os_state() -> dict[str, Any]:
    """What the OS holds for the process, read after candidate calls and rounds (not before each of
    the reference's calls: a burst of system calls there would be the reference's alone). What it
    runs on a signal, read from the kernel: a handler installed below Python (sigaction through
    ctypes) is invisible to signal.getsignal, and one on SIGSEGV can compute an output on the first
    read of memory left unmapped by the call that returned it. How it schedules the threads: pinned
    to one core, run at a lower priority or in real time, a thread is slower or faster than the one
    beside it in the timed loop."""
    state: dict[str, Any] = {f"the {name} handler the OS holds": handler for name, handler in _native_handlers()}
    state["the threads' scheduling (affinity, policy, real-time priority, nice)"] = census.scheduling("self")
    return state


def _libc() -> Any:
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.sigaction  # noqa: B018  (present, or the handlers are not read)
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc() if sys.platform.startswith("linux") else None


def _native_handlers() -> list[tuple[str, int]]:
    """Each signal's handler as the kernel holds it (the address in `struct sigaction`'s first
    field, the same for every handler Python installs); [] where libc cannot be asked."""
    if _LIBC is None:
        return []
    import ctypes

    found = []
    buffer = ctypes.create_string_buffer(512)  # larger than any libc's struct sigaction
    for name, sig in _SIGNALS:
        if _LIBC.sigaction(sig, None, buffer) == 0:
            found.append((name, int.from_bytes(buffer.raw[:ctypes.sizeof(ctypes.c_void_p)], sys.byteorder)))
    return found


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


_SIGNALS = tuple((_signal_name(sig), sig) for sig in sorted(signal.valid_signals())
                 if sig not in (signal.SIGKILL, signal.SIGSTOP))
_TIMERS = tuple((name, getattr(signal, name)) for name in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF")
                if hasattr(signal, name))


def _same(a: Any, b: Any) -> bool:
    """The same state, by identity (a candidate's object may claim equality): a tuple item by item,
    a plain number or text by value and exact type."""
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) in (int, float, bool, str, frozenset) and type(b) is type(a):
        return a == b
    return a is b


_MISSING = object()


def _shadows(owner: Any, name: str, value: Any) -> bool:
    """Whether a name added to a module or class changes what a lookup finds: on a class, one
    that overrides a base's; on a module, anything but a submodule's import or a dunder."""
    if isinstance(owner, type):
        return any(name in vars(base) for base in owner.__mro__[1:])
    return not name.startswith("__") and not isinstance(value, types.ModuleType)


class LookupGuard:
    """The bindings an eager reference looks up at every call (its framework's functions, its own
    module's), by identity, and the interpreter's hooks: read before each of its timed calls, so a
    patch or hook the candidate leaves for that call alone, and takes back inside it, is seen
    (a round's checks come after the round; by then it is gone). About 0.2 ms a look, outside the
    timed window."""

    def __init__(self, owners: list[tuple[str, Any]]) -> None:
        self.namespaces = [(label, owner, vars(owner), list(vars(owner).items())) for label, owner in owners]
        self.interpreter = _interpreter_state()

    def changed(self) -> list[str]:
        found: list[str] = []
        for label, owner, ns, items in self.namespaces:
            get = ns.get
            if len(ns) != len(items) or any(get(k, _MISSING) is not v for k, v in items):
                now = dict(ns)
                found += [f"{label}.{k} was rebound" for k, v in items if now.get(k, _MISSING) is not v]
                found += [f"{label}.{k} was added" for k in sorted(now.keys() - {k for k, _ in items})
                          if _shadows(owner, k, now[k])]
        now_state = _interpreter_state()
        found += [f"{k} changed from {self.interpreter[k]!r} to {now_state[k]!r}" for k in now_state
                  if not _same(now_state[k], self.interpreter.get(k))]
        return found


DEPTHS = ("hot", "public", "deep")

# Surfaces snapshot ahead in the fork server (`prepare`), which has imported what a leg imports
# and has run nothing of a problem's: a leg forked from it inherits them, and its first Watch
# takes them once a diff shows that nothing they cover changed since (else it snapshots afresh).
_PREPARED: dict[str, Any] = {}


def _surfaces(watched_modules: Any) -> dict[str, tuple[str, ...]]:
    """The modules each depth watches now: kgate's own (hot and public) and the backend's."""
    kgate_modules = loaded_modules("kgate")
    return {
        "hot": tuple(sorted({*kgate_modules, *watched_modules("hot")})),
        "public": tuple(sorted({*kgate_modules, *watched_modules("public")})),
        "deep": tuple(sorted(set(watched_modules("deep")))),
    }


def prepare(backend_name: str, watched_modules: Any) -> Iterator[None]:
    """Snapshot the surfaces for the next Watch of `backend_name` in this process or a fork of it
    (about a second of work a leg then skips), one step per next(): a fork server serves a fork
    request between steps. Ready once exhausted."""
    names = _surfaces(watched_modules)
    snapshots = {}
    for depth in DEPTHS:
        yield
        snapshots[depth] = snapshot_surface(names[depth])
        yield
        snapshots[depth].diff()  # its first diff builds what every later one reads: here, once
    if names == _surfaces(watched_modules):  # nothing was imported between the steps
        _PREPARED[backend_name] = (names, snapshots)


def _take_prepared(backend: Any) -> dict[str, Any] | None:
    """The prepared snapshots, when they cover exactly the modules a fresh Watch would and
    nothing in them changed since (the same identity diff every check makes); each is used once."""
    prepared = _PREPARED.pop(getattr(backend, "name", ""), None)
    if prepared is None:
        return None
    names, snapshots = prepared
    if names != _surfaces(backend.watched_modules):
        return None
    if any(snapshots[depth].diff() for depth in DEPTHS):
        return None
    # a name a library's module or class gained since is one a fresh snapshot would watch, which
    # the diff reports only for kgate's own modules: then the snapshots are not the same
    if any(namespace.keys() != then for depth in DEPTHS for _, namespace, then, _ in snapshots[depth].namespaces):
        return None
    return snapshots


def _op_point_state(config: Any) -> dict[str, tuple[type, str]]:
    return {k: (type(v), repr(v)) for k, v in list(config.items())}


class Watch:
    """kgate's modules, the array library's surface and its settings, snapshot before the
    candidate is imported. Three depths, by cost: `hot` (kgate and what the timing loop calls: jit,
    the compiled call, synchronization) after every timed round; `public` (the array
    library's public modules too) after every candidate call outside timing; `deep`
    (every loaded module of the array library) at the end."""

    def __init__(self, backend: Any) -> None:
        snapshots = _take_prepared(backend)
        self.prepared_ahead = snapshots is not None  # taken in the fork server (`prepare`), not here
        if snapshots is None:
            names = _surfaces(backend.watched_modules)
            snapshots = {depth: snapshot_surface(names[depth]) for depth in DEPTHS}
        self.snapshots = snapshots
        self.interpreter = {**_interpreter_state(), **_os_state()}
        self.backend = backend
        self.settings = backend.settings()
        self.tracked: dict[str, tuple[Any, dict[str, int]]] = {}
        self.guarded: list[tuple[Any, ModuleSnapshot]] = []
        self.models: list[Any] = []
        self.op_points: list[tuple[Any, dict[str, tuple[type, str]]]] = []
        self.changes: list[str] = []
        self._seal = seal  # bound before any candidate code: rebinding the module's name reaches no change

    def guard(self, problem: Any) -> None:
        """Watch a problem (the reference, in a process that times both): its module's functions,
        its classes' methods and the libraries it reaches, from now on (its import-time changes are
        the loader's to report); a Model's instances against what they were when built."""
        self.guarded.append((problem.module, snapshot_module(problem.module, code_only=True)))
        if problem.model is not None:
            self.models.append(problem.model)
        if problem.config is not None:  # the op-point: its values, by type and text (an int subclass is not an int)
            self.op_points.append((problem.config, _op_point_state(problem.config)))

    def guard_lookups(self, owners: list[tuple[str, Any]]) -> Callable[[], None]:
        """A check to run before each of the reference's timed calls (`LookupGuard`: the modules and
        classes `owners` names): what it finds is recorded as a change, with when."""
        guard = LookupGuard(owners)

        def look() -> None:
            found = guard.changed()
            if found:
                self._record(found, "before a timed reference call, inside a round")

        return look

    def track(self, label: str, obj: Any, volatile: tuple[str, ...] = ()) -> None:
        """Watch one of kgate's own objects (a timed call): its attributes must keep the
        values they had when kgate made it, `volatile` ones excepted."""
        self.tracked[label] = (obj, {k: id(v) for k, v in vars(obj).items() if k not in volatile})

    def untrack(self, *labels: str) -> None:
        """Stop watching objects kgate is done with (a retired session's timed calls)."""
        for label in labels:
            self.tracked.pop(label, None)

    def restore(self) -> None:
        """Undo whatever candidate code rebound or set (this process may go on after the run)."""
        for snapshot in self.snapshots.values():
            snapshot.restore()
        self.backend.restore_settings(self.settings)
        gc.callbacks[:] = self.interpreter["gc.callbacks"]
        gc.set_threshold(*self.interpreter["gc.get_threshold()"])
        (gc.enable if self.interpreter["gc.isenabled()"] else gc.disable)()

    def settings_changed(self) -> list[str]:
        """The array library's settings that are not the very objects they were (identity: a
        value that claims equality with the old one is still a change)."""
        now = self.backend.settings()
        return [f"the array library's setting {k} changed from {self.settings.get(k)!r} to {now.get(k)!r}"
                for k in sorted(set(now) | set(self.settings)) if now.get(k) is not self.settings.get(k)]

    def check(self, when: str, depth: str = "public", content: bool | None = None) -> None:
        """What changed since the snapshots, at `depth`; `content` (at the end, `deep`, by default)
        also reads the bytes of every code object again (`SurfaceSnapshot.diff`)."""
        found = self.snapshots[depth].diff(content=depth == "deep" if content is None else content)
        if depth == "deep":  # the end: code objects hashed again, for bytes written into one in place
            found += self.snapshots["public"].diff(content=True)
        now = {**_interpreter_state(), **_os_state()}
        found += [f"{k} changed from {self.interpreter[k]!r} to {now[k]!r}" for k in now
                  if not _same(now[k], self.interpreter.get(k))]
        found += self.settings_changed()
        for label, (obj, attrs) in self.tracked.items():
            found += [f"{label}.{k} was replaced" for k, ident in attrs.items() if id(vars(obj).get(k)) != ident]
        for module, snapshot in self.guarded:
            found += snapshot.diff(module)
        for model in self.models:
            found += model.changes()
        for config, state in self.op_points:
            now = _op_point_state(config)
            found += [f"the reference's op-point value {k} changed from {state[k][1]} to {now.get(k, (None, 'nothing'))[1]}"
                      for k in state if now.get(k) != state[k]]
        self._record(found, when)

    def _record(self, found: list[str], when: str) -> None:
        """Each change once, with when it was first seen, sealed as it is recorded (in a leg: the
        candidate, called again later, cannot take it back unseen; `kgate.verify.seals`)."""
        seen = {c.rsplit(" (", 1)[0] for c in self.changes}
        for change in dict.fromkeys(f"{c} ({when})" for c in found if c not in seen):
            self.note(change)

    def note(self, change: str) -> None:
        """Record one change, sealed."""
        self.changes.append(change)
        self._seal(f"change {len(self.changes) - 1}", change)
