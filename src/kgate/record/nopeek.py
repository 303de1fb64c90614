"""Activity constraints: what a candidate must not read (the stub's no-peek list).

A capability evaluation asks whether the author can write the kernel without looking at a
known solution; the stub names what is off limits (`--no-peek ops/solution.py`, a folder, or a
dotted module name). A candidate breaks the rule when its import closure reaches a listed
item (an `import` or `from ... import` of it, followed through the repository's own modules,
each resolved as the problem loader would: beside the importing file, beside the candidate,
or from the repository's root), when its source names a listed file or module in a string
(`open("ops/solution.py")`, `importlib.import_module("ops.solution")`), or when a file of the
closure is itself a listed item (a symlink to the solution, say). Paths compare relative to
the repository, so a path into the home repository from the family's worktree counts too.

The check reads source only (nothing is imported or run), so it cannot see a name built at
run time (`"sol" + "ution"`), a file listed from a folder, a subprocess, the network, or a copy
of the solution's text: those are documented as out of its reach.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kgate.errors import KgateError


@dataclass(frozen=True)
class Item:
    """One no-peek entry: a path in the repository (a file or a folder, relative to its root) and,
    for a dotted module entry, its name (resolved to its file too, where it has one)."""

    text: str
    rel: PurePosixPath | None
    module: str | None

    def covers_rel(self, rel: PurePosixPath | None) -> bool:
        return rel is not None and self.rel is not None and (rel == self.rel or self.rel in rel.parents)

    def covers_module(self, name: str) -> bool:
        return self.module is not None and (name == self.module or name.startswith(self.module + "."))


def parse(items: Sequence[str], root: Path, *, must_exist: bool = False) -> list[Item]:
    """The stub's entries: a path (it has a slash or ends in .py, or exists under the repo) or a
    dotted module name. `must_exist` (at stub time): an entry that names nothing protects nothing."""
    root = root.resolve()
    out = []
    for raw in items:
        text = str(raw).strip()
        if not text or "\0" in text:
            raise KgateError(f"a --no-peek entry ({text!r}) is empty or not text.",
                             "name a file, a folder or a module, e.g. --no-peek ops/solution.py.")
        as_path = Path(_normal(root / text))
        if "/" in text or text.endswith(".py") or as_path.exists():
            if not as_path.is_relative_to(root):
                raise KgateError(f"--no-peek {text} is outside the home repo {root}.", "name a path inside the repository.")
            if must_exist and not as_path.exists():
                raise KgateError(f"--no-peek {text}: there is no such file or folder in {root}.",
                                 "name what exists (check the spelling: a typo protects nothing).")
            out.append(Item(text, PurePosixPath(as_path.relative_to(root).as_posix()), None))
        elif all(part.isidentifier() for part in text.split(".")):
            parts = text.split(".")
            found = next((p for p in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts))
                          if p.exists()), None)
            if must_exist and found is None:
                raise KgateError(f"--no-peek {text}: no module {text} in {root}.",
                                 "name a module of the repository (check the spelling: a typo protects nothing).")
            rel = PurePosixPath(found.relative_to(root).as_posix()) if found is not None else None
            out.append(Item(text, rel, text))
        else:
            raise KgateError(f"--no-peek {text!r} is neither a path nor a module name.",
                             "name a file or folder (ops/solution.py) or a dotted module (solutions.rmsnorm).")
    return out


def refuse(files: Iterable[Path], root: Path, listed: object, *, also: Path | None, activity: object) -> None:
    """Refuse (KgateError, with the evidence) a candidate whose files reach an item of the stub's
    no-peek list (`listed`: the page's `no_peek`, a list or one entry); nothing listed, nothing to do."""
    entries = [str(item) for item in listed] if isinstance(listed, list) else [str(listed)] if listed else []
    if not entries:
        return
    found = violations(files, root, parse(entries, root), also=also)
    if found:
        raise KgateError(
            f"the candidate reads what the stub's no-peek list forbids ({activity}): "
            + "; ".join(found[:5]) + ("" if len(found) <= 5 else f"; and {len(found) - 5} more") + ".",
            "remove the import (or the path) from the candidate: a capability evaluation is of what the author "
            "writes, not of the solution it reads.",
        )


def _on_disk(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def violations(files: Iterable[Path], root: Path, items: Sequence[Item],
               read: Callable[[Path], bytes | None] = _on_disk, *, resolve: bool = True,
               also: Path | None = None) -> list[str]:
    """Evidence, one line each, of every way `files` (and the repository modules they import,
    transitively) reach a no-peek item. `read` gives a file's bytes, or None where there is no
    file (default: the disk; `kgate lint` reads a commit's tree, with `resolve=False`). `also`: a
    second root whose paths count as the repository's (the home repository, around a worktree)."""
    if not items:
        return []
    root = root.resolve()
    roots = [root] + ([also.resolve()] if also is not None else [])
    here = lambda p: Path(p).resolve() if resolve else Path(_normal(Path(p)))  # noqa: E731
    starts = [here(f) for f in files if str(f).endswith(".py")]
    folders = list(dict.fromkeys(p.parent for p in starts))  # where the loader puts the candidate: first on the path
    found: list[str] = []
    seen: set[Path] = set()
    queue = list(starts)

    def rel_of(path: Path) -> PurePosixPath | None:
        for base in roots:
            if path.is_relative_to(base):
                return PurePosixPath(path.relative_to(base).as_posix())
        return None

    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        source = read(path)
        if source is None:
            continue
        shown = rel_of(path) or path
        hit = next((item for item in items if item.covers_rel(rel_of(path))), None)
        if hit is not None:
            found.append(f"{shown} is itself a no-peek item (no-peek: {hit.text})")
            continue
        try:
            tree = ast.parse(source, str(path))  # bytes: the file's own coding declaration is honoured
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # a file that does not parse imports nothing (its candidate will not run)
        for node in ast.walk(tree):
            for name, line in _imported(node, path, root):
                module_file = _module_file(name, path, folders, root, read, here)
                hit = next((item for item in items if item.covers_module(name)
                            or (module_file is not None and item.covers_rel(rel_of(module_file)))), None)
                if hit is not None:
                    found.append(f"{shown}:{line} imports {name} (no-peek: {hit.text})")
                elif module_file is not None:
                    queue.append(module_file)  # the closure: follow the repository's own modules
            if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
                text = node.value.decode(errors="replace") if isinstance(node.value, bytes) else node.value
                named = _named(text, path, folders, root, roots, items, read, here)
                if named is not None:
                    found.append(f"{shown}:{node.lineno} names {text!r} (no-peek: {named.text})")
    return sorted(set(found))


def _normal(path: Path) -> str:
    import os

    return os.path.normpath(str(path))


def _imported(node: ast.AST, path: Path, root: Path) -> list[tuple[str, int]]:
    if isinstance(node, ast.Import):
        return [(alias.name, node.lineno) for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # a relative import: the package of this file, up `level - 1` folders
            package = path.parent
            for _ in range(node.level - 1):
                package = package.parent
            prefix = ".".join(package.relative_to(root).parts) if package.is_relative_to(root) else ""
            base = ".".join(p for p in (prefix, base) if p)
        names = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
        return [(base, node.lineno)] + [(n, node.lineno) for n in names if base]
    return []


def _module_file(name: str, importer: Path, folders: list[Path], root: Path, read: Callable[[Path], bytes | None],
                 here: Callable[[Path], Path]) -> Path | None:
    """The repository file a module name resolves to: beside the importer, beside the candidate
    (the loader puts its folder first on the path), or from the repository's root."""
    parts = name.split(".")
    if not name or not all(part.isidentifier() for part in parts):
        return None
    for base in dict.fromkeys((importer.parent, *folders, root)):
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts) / "__init__.py"):
            resolved = here(candidate)
            if resolved.is_relative_to(root) and read(resolved) is not None:
                return resolved
    return None


def _named(text: str, importer: Path, folders: list[Path], root: Path, roots: list[Path], items: Sequence[Item],
           read: Callable[[Path], bytes | None], here: Callable[[Path], Path]) -> Item | None:
    """The item a string constant names: a path (from the importer, the candidate's folder or a
    root) or a dotted module name."""
    if len(text) > 400 or "\n" in text or "\0" in text or not text.strip():
        return None
    if all(part.isidentifier() for part in text.split(".")):
        module_file = _module_file(text, importer, folders, root, read, here)
        for item in items:
            if item.covers_module(text) or (module_file is not None and any(
                    item.covers_rel(PurePosixPath(module_file.relative_to(base).as_posix()))
                    for base in roots if module_file.is_relative_to(base))):
                return item
    for base in dict.fromkeys((importer.parent, *folders, *roots)):
        try:
            resolved = Path(_normal(base / text))
        except (OSError, ValueError):
            continue
        for top in roots:
            if resolved.is_relative_to(top):
                rel = PurePosixPath(resolved.relative_to(top).as_posix())
                hit = next((item for item in items if item.covers_rel(rel)), None)
                if hit is not None:
                    return hit
    return None
