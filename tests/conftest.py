"""Shared helpers: run kgate's gates in-process on the bundled examples."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kgate.gates.parity import ParitySpec
from kgate.jsonio import SCHEMA_CHECK_ENV, check_schema, dumps
from kgate.verify import CheckRequest, Report, run_gate, run_parity

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# Every document kgate publishes during the suite (what --json prints, reports written with
# -o, receipts), in this process and in every kgate it starts, is checked against its schema
# in schemas/; each violation is appended here and fails the test that produced it.
SCHEMA_LOG = Path(tempfile.mkdtemp(prefix="kgate-schema-check-")) / "violations.jsonl"
os.environ[SCHEMA_CHECK_ENV] = str(SCHEMA_LOG)


@pytest.fixture(autouse=True)
def documents_match_their_schemas():
    start = SCHEMA_LOG.stat().st_size if SCHEMA_LOG.exists() else 0
    yield
    if SCHEMA_LOG.exists() and SCHEMA_LOG.stat().st_size > start:
        with open(SCHEMA_LOG) as handle:
            handle.seek(start)
            found = [json.loads(line) for line in handle if line.strip()]
        pytest.fail("documents that break their schema:\n" + "\n".join(
            f"  {v['kind']}: {v['problem']}  (from {' '.join(v['argv'][-8:])})" for v in found[:20]))


PINNED_DRAW = 7  # the run's drawn seed in this process's gates: its shapes catch the drawn-shape examples
PINNED_EDGE = "edge-negative"  # the edge the torch audit's ablation runs on: a repair of exp's overflow shows there


@pytest.fixture(autouse=True)
def pinned_draw(request, monkeypatch):
    """Gates run in this process draw the same seed in every test: their verdicts are the same on
    every run of the suite, and the reference legs reuse the programs compiled at its drawn shapes
    (kgate.verify.refcache). A test of the draw itself is marked `fresh_draws`; kgate started as
    its own process always draws afresh."""
    if request.node.get_closest_marker("fresh_draws"):
        return
    from kgate.verify import early

    monkeypatch.setattr(early, "draw_seed", lambda taken=(): PINNED_DRAW if PINNED_DRAW not in taken else PINNED_DRAW + 1)
    # the edge probe the torch firing audit's ablation runs on too: the same in every test
    monkeypatch.setattr(early, "edge_choice", lambda edges: sorted(
        edges, key=lambda e: not str(e.get("label", "")).startswith(PINNED_EDGE))[:early.AUDITED_EDGE_COUNT])


def request(reference: str, candidate: str, **kwargs) -> CheckRequest:
    ref = Path(reference) if Path(reference).is_absolute() else EXAMPLES / reference
    cand = Path(candidate) if Path(candidate).is_absolute() else EXAMPLES / candidate
    if isinstance(kwargs.get("parity_spec"), str):
        kwargs["parity_spec"] = ParitySpec.parse(kwargs["parity_spec"])
    return CheckRequest(reference=ref, candidate=cand, **kwargs)


def gate(reference: str, candidate: str, **kwargs) -> Report:
    report = run_gate(request(reference, candidate, **kwargs))
    check_schema(json.loads(dumps(report.to_json())), "report")
    return report


def parity(reference: str, candidate: str, **kwargs) -> Report:
    report = run_parity(request(reference, candidate, **kwargs))
    check_schema(json.loads(dumps(report.to_json())), "report")
    return report


def failed(report: Report) -> set[str]:
    """`gate.check` names that FAILed, with the probe prefix (`seedNN.`, `edge-KIND-inI.`, `odd-shape.`, `drawn-shapeN.`, `past-op-point.`) dropped."""
    return {f"{name}.{re.sub(r'^(seed[0-9]+|edge-[a-z]+-in[0-9]+|odd-shape|drawn-shape[0-9]|past-op-point|rows-at-a-shape)[.]', '', c.name)}" for name, c in report.failed_checks}


@pytest.fixture
def write_module(tmp_path: Path):
    """Write a module file into a temp problem folder and return its path."""

    def _write(name: str, source: str) -> Path:
        path = tmp_path / name
        path.write_text(source)
        return path

    return _write


# -- real git repositories and the kgate CLI as a subprocess (records tests) -----------------


def sh(cwd, *args) -> str:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def kgate(cwd, *args):
    return subprocess.run([sys.executable, "-m", "kgate", *map(str, args)], cwd=cwd, capture_output=True, text=True)


def home_repo(root: Path, reference: Path, message: str = "reference") -> Path:
    """A git repository at `root` holding `reference` at ops/reference.py, one commit."""
    (root / "ops").mkdir(parents=True)
    sh(root, "git", "init", "-q", "-b", "main")
    sh(root, "git", "config", "user.email", "t@example.invalid")
    sh(root, "git", "config", "user.name", "t")
    shutil.copy(reference, root / "ops" / "reference.py")
    sh(root, "git", "add", "-A")
    sh(root, "git", "commit", "-qm", message)
    return root


def copy_repo(root: Path, dst: Path, slug: str) -> tuple[Path, Path]:
    """A copy of a home repo (`root`) in a new place, the worktree of family `slug` linked to the
    copy's repository (git keeps both links as absolute paths). Returns (the copy, its worktree)."""
    shutil.copytree(root, dst, symlinks=True)
    wt = dst / "kernel_experiments" / slug / ".repo"
    (admin,) = (dst / ".git" / "worktrees").iterdir()
    (wt / ".git").write_text(f"gitdir: {admin}\n")
    (admin / "gitdir").write_text(f"{wt / '.git'}\n")
    return dst, wt


def off_other_shapes(names):
    """`names` (probe or check names) without the probe that carries the row-wise edges' rows at
    one of the odd and drawn shapes (kgate.backends.base.mixed_rows): a kernel wrong on an edge's
    rows is wrong there as well."""
    return {n for n in names if not n.startswith("rows-at-a-shape")}
