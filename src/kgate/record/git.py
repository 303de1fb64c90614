"""The real `git`, run as a subprocess: the few operations the records need."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kgate.errors import KgateError


def git(repo: Path, *args: str, check: bool = True, strip: bool = True) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise KgateError(
            f"`git {' '.join(args)}` failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}",
            "fix the repository state and re-run.",
        )
    return proc.stdout.strip() if strip else proc.stdout


def run(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`git` with its raw output and exit status, for reads that may legitimately fail."""
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True)


def toplevel(path: Path) -> Path:
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise KgateError(f"{path} is not inside a git repository.", "run `git init` there, or point at the code repo.")
    return Path(proc.stdout.strip())


def branch_exists(repo: Path, branch: str) -> bool:
    return subprocess.run(
        ["git", "-C", str(repo), "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"]
    ).returncode == 0


def has_commits(repo: Path) -> bool:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "HEAD"], capture_output=True).returncode == 0
