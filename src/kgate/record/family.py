"""A family: one operation's binding (reference pinned by sha256, target path, parity,
op-point, graded dtype, integration branch), its RESULTS.tsv, and its single git
worktree of the home repo (`<experiments>/<slug>/.repo`)."""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.jsonio import write_atomic
from kgate.problem.module import file_sha256
from kgate.record import git, slug as slugs, tomlfile
from kgate.record.workspace import NATIVE, Workspace, check_graded_dtype

RESULTS_COLUMNS = (
    "exp_id", "date", "p50_ms", "speedup", "tflops", "roofline_util", "parity", "class", "activity", "status", "description",
)
BINDING = "family.toml"


@dataclass(frozen=True)
class Family:
    slug: str
    folder: Path
    reference: Path  # relative to the home repo
    reference_sha256: str
    target: Path  # relative to the home repo: the kernel file at its real ship path
    parity: str
    graded_dtype: str
    integration_branch: str
    op_point: Mapping[str, Any] = field(default_factory=dict)
    work_dir: Path | None = None  # relative to the home repo; candidates may change files only here
    weights: str = "shared"  # a Model reference's weights policy (`--weights`): every check of the family uses it
    backend: str = "auto"  # the framework its checks run with (`--backend`): auto (from the reference's imports), jax, torch

    @property
    def work(self) -> Path:
        return self.work_dir if self.work_dir is not None else self.target.parent

    @property
    def worktree(self) -> Path:
        return self.folder / ".repo"

    @property
    def forced_backend(self) -> str | None:
        """The `--backend` each check of the family runs with: None where its reference's imports choose."""
        return None if self.backend == "auto" else self.backend

    @property
    def run_dtype(self) -> str | None:
        """The --dtype each check of the family runs with: None where the reference makes its own."""
        return None if self.graded_dtype == NATIVE else self.graded_dtype

    def records_rel(self, home_repo: Path) -> Path:
        """The family folder relative to the home repo: where its pages sit in the worktree."""
        if not self.folder.is_relative_to(home_repo):
            raise KgateError(
                f"the family folder {self.folder} is outside the home repo {home_repo}: its pages cannot be committed there.",
                "keep the experiments root inside the home repo (kgate.toml: experiments).",
            )
        return self.folder.relative_to(home_repo)

    def to_toml(self) -> str:
        fields = {
            "slug": str(self.slug),
            "reference": str(self.reference),
            "reference_sha256": str(self.reference_sha256),
            "target": str(self.target),
            "parity": str(self.parity),
            "graded_dtype": str(self.graded_dtype),
            "integration_branch": str(self.integration_branch),
            "work_dir": str(self.work),
            "op_point": {k: list(v) if isinstance(v, tuple) else v for k, v in self.op_point.items()},
            **({"weights": self.weights} if self.weights != "shared" else {}),
            **({"backend": self.backend} if self.backend != "auto" else {}),
        }
        return tomlfile.dumps(f"kgate family binding: {self.slug}", {"family": fields})


def new(
    ws: Workspace,
    slug: str,
    *,
    reference: Path,
    target: Path,
    parity: str | None = None,
    graded_dtype: str | None = None,
    integration_branch: str | None = None,
    op_point: Mapping[str, Any] | None = None,
    work_dir: Path | None = None,
    weights: str = "shared",
    backend: str = "auto",
    say: Callable[[str], None] = lambda _: None,
) -> Family:
    """Create the family: everything is validated before anything is written, and a
    failure part-way removes what was created (files, worktree, a branch it made)."""
    from kgate.gates.parity import ParitySpec

    slugs.validate(slug)
    from kgate.backends import BACKENDS

    if backend not in ("auto", *BACKENDS):
        raise KgateError(f"--backend {backend!r} is not one kgate has.", f"use auto or one of: {', '.join(BACKENDS)}.")
    folder = ws.experiments / slug
    if folder.exists():
        raise KgateError(f"family {slug!r} already exists at {folder}.", "pick another slug, or use the existing family.")
    repo = ws.home_repo
    ref_abs = (repo / reference).resolve() if not reference.is_absolute() else reference.resolve()
    if not ref_abs.is_file():
        raise KgateError(f"reference module {reference} does not exist in {repo}.", "pass its path in the home repo.")
    if not ref_abs.is_relative_to(repo):
        raise KgateError(f"reference module {ref_abs} is outside the home repo {repo}.", "keep the reference in the repo.")
    tgt_abs = (repo / target).resolve() if not target.is_absolute() else target.resolve()
    if not tgt_abs.is_relative_to(repo):
        raise KgateError(f"target {tgt_abs} is outside the home repo {repo}.", "the target is the kernel's ship path in the repo.")
    work_abs = tgt_abs.parent if work_dir is None else (repo / work_dir).resolve()
    if not work_abs.is_relative_to(repo) or not tgt_abs.is_relative_to(work_abs):
        raise KgateError(
            f"work dir {work_dir} must be inside the home repo and hold the target {tgt_abs.relative_to(repo)}.",
            "pass the folder candidates are written in (default: the target's folder).",
        )
    spec = ParitySpec.parse(parity or ws.parity).describe()
    if not git.has_commits(repo):
        raise KgateError(f"the home repo {repo} has no commits.", "commit something first: worktrees need a base.")
    _check_pinnable(repo, ref_abs, dict(op_point or {}), say)
    dtype = _graded_dtype(repo, ref_abs, graded_dtype, ws.graded_dtype)
    branch = integration_branch or f"kernel/{slug}"
    fam = Family(
        slug, folder, ref_abs.relative_to(repo), file_sha256(ref_abs), tgt_abs.relative_to(repo), spec, dtype, branch,
        dict(op_point or {}), work_abs.relative_to(repo), weights, backend,
    )
    binding = fam.to_toml()  # a value TOML cannot hold is refused here, before anything is made
    created_branch = False
    try:
        folder.mkdir(parents=True)
        if not git.branch_exists(repo, branch):
            head = git.git(repo, "rev-parse", "--abbrev-ref", "HEAD")
            git.git(repo, "branch", branch, "HEAD")
            created_branch = True
            say(f"created integration branch {branch} from the current HEAD ({head})")
        if branch in ("main", "master"):
            say(f"note: the family's worktree is based on {branch} itself, not on an integration branch")
        git.git(repo, "worktree", "add", str(fam.worktree), branch)
        write_atomic(folder / BINDING, binding)
        write_atomic(folder / "RESULTS.tsv", "\t".join(RESULTS_COLUMNS) + "\n")
        write_atomic(folder / ".gitignore", ".repo/\n")  # the worktree is not part of the record
    except BaseException:
        if fam.worktree.exists():
            git.git(repo, "worktree", "remove", "--force", str(fam.worktree), check=False)
        git.git(repo, "worktree", "prune", check=False)
        if created_branch:
            git.git(repo, "branch", "-D", branch, check=False)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return fam


def _check_pinnable(repo: Path, reference: Path, op_point: dict[str, Any], say: Callable[[str], None]) -> None:
    """The family pins the reference as committed (the worktree holds the commit, not the
    working copy) and an op-point of keys the reference's CONFIG has."""
    from kgate.problem.oppoint import static_config, static_shape_globals, validate_overrides

    rel = reference.relative_to(repo).as_posix()
    if git.run(repo, "ls-files", "--error-unmatch", "--", rel).returncode != 0:
        raise KgateError(f"the reference {rel} is not committed in the home repo: the family would pin a file its "
                         "worktree does not have.", f"git add {rel} && git commit, then run family new again.")
    if git.git(repo, "status", "--porcelain", "--", rel):
        raise KgateError(f"the reference {rel} has uncommitted changes: the pin and the worktree would disagree.",
                         f"commit (or revert) the changes to {rel}, then run family new again.")
    if not op_point:
        return
    source = reference.read_text()
    config = static_config(source)
    shapes = static_shape_globals(source)
    if config is None and shapes is not None:  # the Model protocol: its op-point is its top-level sizes
        unknown = sorted(set(op_point) - shapes)
        if unknown:
            listed = ", ".join(sorted(shapes)) or "none"
            raise KgateError(f"--set sets {', '.join(map(repr, unknown))}, which {rel} (the Model protocol) does not "
                             f"assign at its top level (its shape globals: {listed}).",
                             "use one of the shape globals listed.")
        say(f"note: {rel} follows the Model protocol: the --set values are checked against its shape globals' "
            "types when the reference first runs")
        return
    if config is None:
        say(f"note: {rel} has no literal CONFIG dict (a computed one): the --set keys are checked when the "
            "reference first runs")
        return
    validate_overrides(config, op_point, "--set")


def _graded_dtype(repo: Path, reference: Path, given: str | None, default: str) -> str:
    """The dtype the family grades in: as given (else the workspace's default) for a reference
    whose inputs are made in the dtype asked for; NATIVE for one that makes its own (the Model
    protocol's get_inputs, a create_inputs without a dtype parameter), where no --dtype can be given."""
    from kgate.problem.oppoint import static_takes_dtype

    if static_takes_dtype(reference.read_text()) is not False:
        dtype = given or default
        check_graded_dtype(dtype)
        return dtype
    if given is not None and given != NATIVE:
        rel = reference.relative_to(repo).as_posix()
        raise KgateError(f"--dtype {given} given, but {rel} makes its inputs in its own dtype (its get_inputs or "
                         "create_inputs takes no dtype): no check of the family could run in another one.",
                         f"drop --dtype: the family grades the dtype {rel} makes (recorded as {NATIVE!r}).")
    return NATIVE


def load(ws: Workspace, slug: str) -> Family:
    """The family's binding, as `kgate family new` wrote it."""
    folder = ws.experiments / slug
    path = folder / BINDING
    if not path.is_file():
        raise KgateError(f"family {slug!r} does not exist (no {path}).", f"create it with `kgate family new {slug} ...`.")
    try:
        data = tomllib.loads(path.read_text())["family"]
        return Family(
            slug, folder, Path(data["reference"]), str(data["reference_sha256"]), Path(data["target"]), str(data["parity"]),
            str(data["graded_dtype"]), str(data["integration_branch"]), tomlfile.tuples(dict(data.get("op_point", {}))),
            Path(data["work_dir"]) if "work_dir" in data else None, str(data.get("weights", "shared")),
            str(data.get("backend", "auto")),
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise KgateError(f"{path} is not a valid family binding ({exc}).", "restore it; it is written by `kgate family new`.") from exc
