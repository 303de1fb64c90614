"""The real `git`, run as a subprocess: the few operations the records need.

Every call is hardened: `LC_ALL=C` (messages kgate reads are in English whatever the user's
locale), `GIT_TERMINAL_PROMPT=0` (a remote that wants a password fails instead of waiting at a
prompt nobody sees), `GIT_OPTIONAL_LOCKS=0` (a read such as `git status` never takes the index
lock from a concurrent writer), and a timeout, so a hung credential helper or a stuck lock
stops the command with a clear error instead of stalling the records.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from kgate.errors import KgateError

TIMEOUT_ENV = "KGATE_GIT_TIMEOUT"  # seconds; default 120
HARDENED = {"LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


def timeout_s() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "120")
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value <= 86400:
        raise KgateError(f"{TIMEOUT_ENV}={raw!r} is not a number of seconds from 0 to 86400 (a day).",
                         f"unset it, or set {TIMEOUT_ENV}=120.")
    return value


def call(args: list[str], *, cwd: Path | None = None, text: bool = True) -> subprocess.CompletedProcess[Any]:
    """`git ARGS` with the hardened environment and the timeout; its output captured. git runs in
    a process group of its own, so a hook or helper it started is stopped with it."""
    limit = timeout_s()
    try:
        proc = subprocess.Popen(["git", *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=text, env={**os.environ, **HARDENED}, start_new_session=True)
    except FileNotFoundError as exc:
        raise KgateError("git is not installed (or not on PATH).", "install git, then re-run.") from exc
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired as exc:
        _stop(proc)
        raise KgateError(
            f"`git {' '.join(args)}` did not finish in {limit:g} s (a hook or a credential helper waiting, or a "
            "lock held by another git?).",
            f"find what git waits on and re-run; a slow repository can set {TIMEOUT_ENV} to more seconds.",
        ) from exc
    except BaseException:  # Ctrl-C while git runs: git and what it started stop too
        _stop(proc)
        raise
    return subprocess.CompletedProcess(["git", *args], proc.returncode, out, err)


def _stop(proc: subprocess.Popen[Any]) -> None:
    """Kill git and its process group; a descendant that left the group may still hold the pipes:
    they are closed after a short wait rather than waited on."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.communicate(timeout=2)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()


def git(repo: Path, *args: str, check: bool = True, strip: bool = True) -> str:
    proc = call(["-C", str(repo), *args])
    if check and proc.returncode != 0:
        raise KgateError(
            f"`git {' '.join(args)}` failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}",
            "fix the repository state and re-run.",
        )
    return proc.stdout.strip() if strip else proc.stdout


def run(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`git` with its raw output and exit status, for reads that may legitimately fail."""
    return call(["-C", str(repo), *args], text=False)


def toplevel(path: Path) -> Path:
    proc = call(["-C", str(path), "rev-parse", "--show-toplevel"])
    if proc.returncode != 0:
        raise KgateError(f"{path} is not inside a git repository.", "run `git init` there, or point at the code repo.")
    return Path(proc.stdout.strip())


def branch_exists(repo: Path, branch: str) -> bool:
    return call(["-C", str(repo), "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"]).returncode == 0


def has_commits(repo: Path) -> bool:
    return call(["-C", str(repo), "rev-parse", "--verify", "--quiet", "HEAD"]).returncode == 0
