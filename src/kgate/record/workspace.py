"""The workspace: `kgate.toml` at the root of the code repo, naming where experiment
records live, the home repo, and the defaults new families inherit."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.jsonio import write_atomic
from kgate.record import git, tomlfile

FILENAME = "kgate.toml"
DTYPES = ("bfloat16", "float16", "float32", "float64")
# A family's graded dtype where its reference makes its inputs in a dtype of its own (the Model
# protocol's get_inputs, a create_inputs without a dtype parameter): no check of it takes --dtype.
NATIVE = "native"


def check_graded_dtype(dtype: str) -> None:
    """Refuse a graded dtype kgate does not grade in (a workspace's default, a family's)."""
    if dtype not in DTYPES:
        raise KgateError(f"graded dtype {dtype!r} is not one of {', '.join(DTYPES)}.", "pass --dtype bfloat16, say.")


@dataclass(frozen=True)
class Workspace:
    root: Path  # the folder holding kgate.toml
    experiments: Path
    home_repo: Path
    graded_dtype: str
    parity: str
    chip: int

    def to_toml(self) -> str:
        rel = lambda p: str(p.relative_to(self.root)) if p.is_relative_to(self.root) else str(p)  # noqa: E731
        return tomlfile.dumps(
            "kgate workspace: where experiment records live, and defaults for new families.",
            {
                "workspace": {"experiments": rel(self.experiments), "home_repo": rel(self.home_repo) or "."},
                "defaults": {"graded_dtype": self.graded_dtype, "parity": self.parity, "chip": self.chip},
            },
        )


def init(
    root: Path,
    *,
    experiments: str = "kernel_experiments",
    home_repo: str = ".",
    graded_dtype: str = "bfloat16",
    parity: str = "floor",
    chip: int = 0,
) -> Workspace:
    """Write `root/kgate.toml` (validated first; refuses to overwrite)."""
    from kgate.gates.parity import ParitySpec

    root = root.resolve()
    path = root / FILENAME
    if path.exists():
        raise KgateError(f"{path} already exists: this workspace is initialized.", "edit it, or remove it first.")
    check_graded_dtype(graded_dtype)
    ParitySpec.parse(parity)
    if chip < 0:
        raise KgateError(f"chip {chip} is negative.", "pass --chip 0 or another chip index.")
    repo = git.toplevel((root / home_repo).resolve())
    ws = Workspace(root, (root / experiments).resolve(), repo, graded_dtype, parity, chip)
    write_atomic(path, ws.to_toml())
    return ws


def find(start: Path) -> Workspace:
    """The workspace whose kgate.toml is at `start` or above it. A kgate.toml inside another
    workspace's experiments folder is that workspace's own file, checked out again in an
    experiment's work tree (once committed to the home repo, every worktree holds a copy): the
    outer workspace is the one meant."""
    found: Workspace | None = None
    for folder in [start.resolve(), *start.resolve().parents]:
        path = folder / FILENAME
        if not path.is_file():
            continue
        try:
            outer = load(path)
        except KgateError:
            if found is None:
                raise
            continue  # a broken file further up is not this workspace's
        if found is None or found.root.is_relative_to(outer.experiments):
            found = outer
    if found is None:
        raise KgateError(f"no {FILENAME} in {start} or above.", "run `kgate init` at the root of the code repo.")
    return found


def load(path: Path) -> Workspace:
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text())
        ws, defaults = data["workspace"], data["defaults"]
        root = path.parent
        return Workspace(
            root,
            (root / ws["experiments"]).resolve(),
            (root / ws["home_repo"]).resolve(),
            str(defaults["graded_dtype"]),
            str(defaults["parity"]),
            int(defaults["chip"]),
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise KgateError(f"{path} is not a valid kgate workspace ({exc}).", "fix it, or remove it and run `kgate init`.") from exc
