"""Activity constraints: what a candidate must not read (the stub's no-peek list).

A capability evaluation asks whether the author can write the kernel without looking at a
known solution; the stub names what is off limits (`--no-peek ops/solution.py`, a folder, or a
dotted module name). A candidate breaks the rule when its import closure reaches a listed
item (an `import` or `from ... import` of it, followed through the repository's own modules),
or when its source names a listed file (`open("ops/solution.py")`, `importlib` by path). The
check reads source only (nothing is imported or run): the evidence is the file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgate.errors import KgateError


@dataclass(frozen=True)
class Item:
    """One no-peek entry: a path in the repository (a file or a folder), or a dotted module name."""

    text: str
    path: Path | None  # resolved, for a path entry
    module: str | None  # for a dotted module entry

    def covers_path(self, path: Path) -> bool:
        return self.path is not None and (path == self.path or self.path in path.parents)

    def covers_module(self, name: str) -> bool:
        return self.module is not None and (name == self.module or name.startswith(self.module + "."))


def parse(items: Sequence[str], root: Path) -> list[Item]:
    """The stub's entries: a path (it has a slash or ends in .py, or exists under the repo) or a
    dotted module name."""
    out = []
    for raw in items:
        text = raw.strip()
        if not text:
            raise KgateError("a --no-peek entry is empty.", "name a file, a folder or a module, e.g. --no-peek ops/solution.py.")
        as_path = (root / text).resolve()
        if "/" in text or text.endswith(".py") or as_path.exists():
            if not as_path.is_relative_to(root.resolve()):
                raise KgateError(f"--no-peek {text} is outside the home repo {root}.", "name a path inside the repository.")
            out.append(Item(text, as_path, None))
        elif all(part.isidentifier() for part in text.split(".")):
            out.append(Item(text, None, text))
        else:
            raise KgateError(f"--no-peek {text!r} is neither a path nor a module name.",
                             "name a file or folder (ops/solution.py) or a dotted module (solutions.rmsnorm).")
    return out


def _on_disk(path: Path) -> str | None:
    return path.read_text(errors="replace") if path.is_file() else None


def violations(files: Iterable[Path], root: Path, items: Sequence[Item],
               read: Callable[[Path], str | None] = _on_disk) -> list[str]:
    """Evidence, one line each, of every way `files` (and the repository modules they import,
    transitively) reach a no-peek item. `read` gives a file's text, or None where there is no
    file (default: the disk; `kgate lint` reads a commit's tree instead)."""
    if not items:
        return []
    root = root.resolve()
    found: list[str] = []
    seen: set[Path] = set()
    queue = [Path(f).resolve() for f in files if str(f).endswith(".py")]
    while queue:
        path = queue.pop()
        source = None if path in seen else read(path)
        seen.add(path)
        if source is None:
            continue
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        try:
            tree = ast.parse(source, str(path))
        except SyntaxError:
            continue  # a file that does not parse imports nothing (its candidate will not run)
        for node in ast.walk(tree):
            for name, line in _imported(node, path, root):
                hit = next((item for item in items if item.covers_module(name)), None)
                module_file = _module_file(name, path, root, read)
                if hit is None and module_file is not None:
                    hit = next((item for item in items if item.covers_path(module_file)), None)
                if hit is not None:
                    found.append(f"{shown}:{line} imports {name} (no-peek: {hit.text})")
                elif module_file is not None:
                    queue.append(module_file)  # the closure: follow the repository's own modules
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named = _named_path(node.value, path, root, items)
                if named is not None:
                    found.append(f"{shown}:{node.lineno} names {node.value!r} (no-peek: {named.text})")
    return sorted(set(found))


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


def _module_file(name: str, importer: Path, root: Path, read: Callable[[Path], str | None]) -> Path | None:
    """The repository file a module name resolves to: beside the importer (as the problem loader
    puts a candidate's folder first on the path), or from the repository's root."""
    parts = name.split(".")
    if not all(parts):
        return None
    for base in (importer.parent, root):
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts) / "__init__.py"):
            if candidate.resolve().is_relative_to(root) and read(candidate.resolve()) is not None:
                return candidate.resolve()
    return None


def _named_path(text: str, importer: Path, root: Path, items: Sequence[Item]) -> Item | None:
    if len(text) > 400 or "\n" in text or not text.strip():
        return None
    for base in (importer.parent, root):
        try:
            resolved = (base / text).resolve()
        except (OSError, ValueError):
            continue
        hit = next((item for item in items if item.covers_path(resolved)), None)
        if hit is not None:
            return hit
    return None
