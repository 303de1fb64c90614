"""Per-chip locks: every device execution holds an exclusive `flock` on a lock file.

The lock is the same kind the `flock(1)` command takes, so `flock /tmp/kgate-chip-0.lock
CMD` and `kgate lock 0 -- CMD` exclude each other. The holder writes its pid and command
into the file, so a waiting run can say whom it waits for.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Final

from kgate.errors import KgateError

LOCK_DIR_ENV = "KGATE_LOCK_DIR"
COMPILE_SLOTS_ENV = "KGATE_COMPILE_SLOTS"  # set it alike for every user of a host
COMPILE_SLOTS = 2  # by default, at most this many concurrent compiles per host
SLOT_POLL_S = 0.05  # a waiting compile tries every slot this often
LOCK_MODE = 0o666  # any user of the machine can wait on a lock another made (whatever the umask)


def compile_slots() -> int:
    """How many compiles may run at once on this host: KGATE_COMPILE_SLOTS, else 2."""
    raw = os.environ.get(COMPILE_SLOTS_ENV)
    if raw is None:
        return COMPILE_SLOTS
    try:
        slots = int(raw)
    except ValueError:
        slots = 0
    if not 1 <= slots <= 64:
        raise KgateError(f"{COMPILE_SLOTS_ENV}={raw!r} is not a whole number of compile slots from 1 to 64.",
                         f"set {COMPILE_SLOTS_ENV}=2 (or unset it for the default, {COMPILE_SLOTS}).")
    return slots


def open_lock(path: Path) -> int:
    """A descriptor to flock `path` by, shared between the users of a machine: made readable and
    writable by all (the umask would leave it the creator's alone), opened read-only where
    another user's file cannot be written (flock needs no write access; only the holder's name
    is then not written), and never opened with O_CREAT when it exists (in a sticky /tmp the
    kernel may refuse that for another user's file)."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)  # a symlink planted at the lock's path is never followed
    for _ in range(100):
        try:
            return os.open(path, os.O_RDWR | nofollow)
        except FileNotFoundError:
            pass
        except PermissionError:
            return os.open(path, os.O_RDONLY | nofollow)
        except OSError as exc:  # ELOOP: a symlink
            raise KgateError(f"the lock file {path} cannot be opened ({exc.strerror}): a symlink or something else "
                             "that is not a lock file is there.", f"remove {path}, or set {LOCK_DIR_ENV} to another "
                             "folder.") from exc
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | nofollow, LOCK_MODE)
        except FileExistsError:
            continue  # another process made it first: open theirs
        os.fchmod(fd, LOCK_MODE)
        return fd
    raise KgateError(f"the lock file {path} exists and cannot be opened (a dangling symlink?).",
                     f"remove {path}, or set {LOCK_DIR_ENV} to another folder.")


# What a scheduler (Ray, Slurm, Kubernetes, a user) already set: the chips this process may use,
# by physical id. kgate's chip N is the N-th of them, and keeps them; unset, chip N is physical N.
VISIBLE_ENVS: Final = ("CUDA_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS")
_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


def visible(env: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """The visible chips each scheduler variable set in `env` (this process's by default) lists."""
    env = os.environ if env is None else env
    return {name: [part.strip() for part in env[name].split(",") if part.strip()]
            for name in VISIBLE_ENVS if env.get(name, "").strip()}


def physical(chip: int, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Chip `chip` (an index among the visible ones) as each set variable names it physically;
    empty when no scheduler set one. A chip past the visible ones is refused."""
    if chip < 0:
        raise KgateError(f"chip {chip} is not a chip index.", "use a non-negative chip number, e.g. 0.")
    ids = {}
    for name, chips in visible(env).items():
        if chip >= len(chips):
            raise KgateError(f"chip {chip} is not visible here: {name}={','.join(chips)} shows {len(chips)} "
                             f"chip{'s' if len(chips) != 1 else ''} (a scheduler chose them).",
                             f"use --chip 0{f' to {len(chips) - 1}' if len(chips) > 1 else ''}: kgate's chip N is "
                             f"the N-th of {name}.")
        ids[name] = chips[chip]
    return ids


def lock_path(chip: int, lock_dir: str | Path | None = None) -> Path:
    """The lock of chip `chip`, named by its physical device: two processes that a scheduler gave
    different chips (each its own chip 0) never wait on each other, and two given the same do."""
    ids = physical(chip)
    folder = Path(lock_dir or os.environ.get(LOCK_DIR_ENV) or "/tmp")
    if not folder.is_dir():
        raise KgateError(f"lock folder {folder} does not exist.", f"create it, or set {LOCK_DIR_ENV} to a folder.")
    name = next(iter(ids.values()), str(chip))  # CUDA's id where both are set (one host has one kind of chip)
    return folder / f"kgate-chip-{_SAFE_ID.sub('_', name)}.lock"


def _holder(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError:
        return "unknown holder"
    return text or "a holder that did not say who it is (e.g. the flock command)"


@contextlib.contextmanager
def hold(path: Path, *, say: Callable[[str], None] | None = None, what: str = "") -> Iterator[float]:
    """Hold an exclusive flock on `path`; yields the seconds spent waiting."""
    fd = open_lock(path)
    started = time.monotonic()
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if say:
                say(f"waiting for {path} (held by {_holder(path)})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        waited = time.monotonic() - started
        _say_holder(fd, f"pid {os.getpid()}: {what or ' '.join(sys.argv)}\n")
        try:
            yield waited
        finally:
            _say_holder(fd, "")
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _say_holder(fd: int, text: str) -> None:
    try:
        os.ftruncate(fd, 0)
        if text:
            os.pwrite(fd, text.encode(), 0)
    except OSError:  # opened read-only: another user's lock file; the lock itself holds
        pass


def _free_slot(fds: list[int]) -> int | None:
    for fd in fds:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return fd
    return None


@contextlib.contextmanager
def compile_slot(lock_dir: str | Path | None = None, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """One of the host-wide compile slots (`compile_slots()`): take a free one, else wait for
    whichever frees first."""
    slots = compile_slots()
    folder = Path(lock_dir or os.environ.get(LOCK_DIR_ENV) or "/tmp")
    fds: list[int] = []
    try:
        for i in range(slots):  # one at a time: a failure part-way closes those already open
            fds.append(open_lock(folder / f"kgate-compile-{i}.lock"))
        taken = _free_slot(fds)
        if taken is None and say:
            say(f"waiting for a compile slot ({slots} compiles already running on this host)")
        while taken is None:  # whichever slot frees first, not one chosen in advance
            time.sleep(SLOT_POLL_S)
            taken = _free_slot(fds)
        try:
            yield
        finally:
            fcntl.flock(taken, fcntl.LOCK_UN)
    finally:
        for fd in fds:
            os.close(fd)


def pinned_env(physical_id: str) -> dict[str, str]:
    """Variables that make only the chip of this physical id visible to a framework imported
    afterwards (a GPU's or a TPU's: the other kind's variables are ignored)."""
    return {"CUDA_VISIBLE_DEVICES": physical_id, "TPU_VISIBLE_CHIPS": physical_id,
            "TPU_CHIPS_PER_PROCESS_BOUNDS": "1,1,1", "TPU_PROCESS_BOUNDS": "1,1,1"}


def visibility_env(chip: int) -> dict[str, str]:
    """Variables that make only `chip` visible to a framework imported afterwards: the physical
    chip a scheduler's variable names at that index, or `chip` itself where none is set."""
    return {**pinned_env(str(chip)), **physical(chip), "KGATE_CHIP": str(chip)}
