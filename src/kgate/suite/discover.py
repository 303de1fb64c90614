"""What a suite holds: problems and their candidates, from a JAXBench-style tree
(`ROOT/<problem>/baseline.py` with candidates beside it) or from a TOML manifest."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgate.errors import KgateError

REFERENCE_NAMES = ("baseline.py", "reference.py")  # a problem folder's reference, in this order


@dataclass(frozen=True)
class Entry:
    """One candidate of one problem, with the terms it is checked under."""

    problem: str
    reference: Path
    candidate: Path
    overrides: Mapping[str, Any] = field(default_factory=dict)
    klass: str = "kernel-authored"
    weights: str = "shared"
    entry: str = "workload"
    reference_entry: str = "workload"
    label: str = ""  # how its row names the candidate (default: its file name)

    @property
    def name(self) -> str:
        return self.label or self.candidate.name


def discover(root: Path, manifest: Path | None = None, klass: str = "kernel-authored",
             candidates: tuple[Path, ...] = ()) -> list[Entry]:
    """The suite's entries, in a stable order: the manifest's, a KernelBench-style level's
    (`candidates` given: ROOT holds the references), or the tree's (problems and candidates
    sorted by name; `klass` for every candidate of a tree or level)."""
    if manifest is not None:
        return _from_manifest(manifest, klass)
    if candidates:
        return _from_level(root, candidates, klass)
    if not root.is_dir():
        raise KgateError(f"suite root {root} is not a folder.", "give the folder that holds one folder per problem.")
    folders = [root] if _reference_in(root) else sorted(p for p in root.iterdir() if p.is_dir())
    entries: list[Entry] = []
    for folder in folders:
        reference = _reference_in(folder)
        if reference is None:
            continue
        for candidate in sorted(folder.glob("*.py")):
            if candidate.name in REFERENCE_NAMES or candidate.name.startswith("_"):
                continue
            entries.append(Entry(folder.name, reference, candidate, klass=klass))
    if not entries:
        raise KgateError(f"no problem with candidates under {root}: a problem is a folder holding "
                         f"{' or '.join(REFERENCE_NAMES)} and candidate .py files beside it.",
                         "lay the suite out as ROOT/<problem>/baseline.py plus candidates, or give --manifest FILE.")
    return entries


def _from_level(references: Path, folders: tuple[Path, ...], klass: str) -> list[Entry]:
    """KernelBench's layout: a folder of reference modules (`19_ReLU.py`) and one or more
    folders of candidates with the same file names; a reference without a candidate in a
    folder has no row from it. The problem is the file's stem; a candidate is named by its
    folder."""
    for folder in (references, *folders):
        if not folder.is_dir():
            raise KgateError(f"{folder} is not a folder.",
                             "give the folder of reference modules as ROOT and each folder of candidates with "
                             "--candidates DIR (file names matching the references').")
    entries = [Entry(reference.stem, reference, folder / reference.name, klass=klass,
                     label=f"{folder.name}/{reference.name}")
               for reference in sorted(references.glob("*.py")) if not reference.name.startswith("_")
               for folder in folders if (folder / reference.name).is_file()]
    if not entries:
        raise KgateError(f"no candidate under {', '.join(str(f) for f in folders)} has the name of a reference in "
                         f"{references}.",
                         "name each candidate as its reference (level1/19_ReLU.py -> run1/19_ReLU.py).")
    return entries


def _reference_in(folder: Path) -> Path | None:
    return next((folder / name for name in REFERENCE_NAMES if (folder / name).is_file()), None)


def _from_manifest(path: Path, klass: str) -> list[Entry]:
    """```toml
    [[problem]]
    name = "softmax"                      # default: the reference's folder name
    reference = "softmax/reference.py"    # paths relative to the manifest
    candidates = ["softmax/pallas.py", {path = "softmax/xla_rewrite.py", class = "xla-rewrite"}]
    set = {rows = 8, cols = 256}          # the op-point (--set), for every candidate of the problem
    class = "kernel-authored"             # default for its candidates
    weights = "random"                    # a Model module's weights (--weights)
    ```"""
    from kgate.gates.firing import parse_classes
    from kgate.problem.model import parse_weights
    from kgate.problem.oppoint import keyword_value

    if not path.is_file():
        raise KgateError(f"manifest {path} does not exist.", "give an existing TOML file to --manifest.")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KgateError(f"manifest {path} is not valid TOML ({exc}).", "fix its syntax.") from exc
    problems = data.get("problem")
    if not isinstance(problems, list) or not problems:
        raise KgateError(f"manifest {path} has no [[problem]] tables.", "add one [[problem]] per problem, with "
                         "reference and candidates (see `kgate suite --help`).")
    base = path.resolve().parent
    entries: list[Entry] = []
    for i, problem in enumerate(problems):
        where = f"manifest {path}, problem {i + 1}"
        if not isinstance(problem, dict) or "reference" not in problem or not problem.get("candidates"):
            raise KgateError(f"{where} lacks reference or candidates.", "give reference = \"...\" and candidates = [...].")
        reference = _file(base, problem["reference"], where)
        overrides = problem.get("set", {})
        if not isinstance(overrides, dict):
            raise KgateError(f"{where}: set must be a table of op-point values.", "write set = {rows = 8}.")
        overrides = {k: keyword_value("--set", k, repr(tuple(v) if isinstance(v, list) else v)) for k, v in overrides.items()}
        default_class = str(problem.get("class", klass))
        weights = parse_weights(str(problem.get("weights", "shared")))
        for item in problem["candidates"]:
            spec = item if isinstance(item, dict) else {"path": item}
            if "path" not in spec:
                raise KgateError(f"{where}: a candidate table needs path.", "write {path = \"x.py\", class = \"...\"}.")
            cand_class = str(spec.get("class", default_class))
            parse_classes(cand_class)
            entries.append(Entry(str(problem.get("name", reference.parent.name)), reference,
                                 _file(base, spec["path"], where), overrides, cand_class, weights,
                                 str(spec.get("entry", problem.get("entry", "workload"))),
                                 str(problem.get("reference_entry", "workload"))))
    return entries


def _file(base: Path, name: Any, where: str) -> Path:
    path = (base / str(name)).resolve()
    if not path.is_file() or path.suffix != ".py":
        raise KgateError(f"{where}: {name} is not a .py file (looked at {path}).", "give paths relative to the manifest.")
    return path
