"""One adapter per framework. Nothing above this package imports jax or torch: callers
ask for a backend by name and get an object speaking plain numpy and strings."""

from __future__ import annotations

import ast
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgate.backends.base import Ablation, DeviceInfo, HostTree, KernelSite, ProgramFacts

if TYPE_CHECKING:
    from kgate.backends.jax_backend import JaxBackend

__all__ = ["Ablation", "BACKENDS", "DeviceInfo", "HostTree", "KernelSite", "ProgramFacts", "backend_for", "detect", "get_backend",
           "import_frameworks", "source_names"]

BACKENDS: tuple[str, ...] = ("jax", "torch")
_INSTANCES: dict[str, object] = {}
_FRAMEWORKS = {"jax": "jax", "jaxlib": "jax", "torch": "torch", "triton": "torch"}


def get_backend(name: str = "jax") -> JaxBackend:
    """The backend for `name`, imported on first use (importing a framework is slow)."""
    from kgate.errors import KgateError

    if name not in BACKENDS:
        raise KgateError(f"backend {name!r} is not one kgate has.", f"use one of: {', '.join(BACKENDS)}.")
    if name not in _INSTANCES:
        if name == "torch":
            try:
                from kgate.backends.torch_backend import TorchBackend
            except ImportError as exc:
                raise KgateError(f"the torch backend needs PyTorch (and Triton for kernels): {exc}.",
                                 "install kgate's torch extra: pip install 'kgate[torch]' (on a CPU-only machine, "
                                 "torch==2.13.0 is the CPU build).") from exc
            _INSTANCES[name] = TorchBackend()
        else:
            from kgate.backends.jax_backend import JaxBackend

            _INSTANCES[name] = JaxBackend()
    return _INSTANCES[name]  # type: ignore[return-value]


def source_imports(path: str | Path) -> set[str]:
    """The top-level modules a module's own imports name, read from its source (never run)."""
    try:
        tree = ast.parse(Path(path).read_text(), filename=str(path))
    except Exception:  # noqa: BLE001 - unreadable, not Python, or too deep to parse (MemoryError, RecursionError)
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[Any] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        found.update(n.split(".")[0] for n in names)
    return found


def frameworks(path: str | Path) -> set[str]:
    """The frameworks a module's own imports name ("jax", "torch")."""
    return {_FRAMEWORKS[name] for name in source_imports(path) if name in _FRAMEWORKS}


def source_names(path: str | Path, _seen: set[Path] | None = None) -> set[str]:
    """The dotted names a module reaches in its source (read, never run), and those of the modules
    beside it that it imports (a candidate split over files), each file read once: every module an
    import names in full (`torch._dynamo`), each name a `from` import takes under its module
    (`torch.library.custom_op`), and attribute chains on an imported name (`torch.compile`), under
    the module's full name where the import gave it an alias (`import torch.nn as nn`)."""
    path = Path(path)
    seen = set() if _seen is None else _seen
    try:
        key = path.resolve()
        if key in seen:
            return set()
        seen.add(key)
        tree = ast.parse(path.read_text(), filename=str(path))
    except Exception:  # noqa: BLE001 - unreadable, not Python, or too deep to parse (MemoryError, RecursionError)
        return set()
    found: set[str] = set()
    aliases: dict[str, str] = {}  # a name bound by an import -> the dotted name it stands for
    beside: set[str] = set()  # modules named that may be files next to this one
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.add(a.name)
                beside.add(a.name.split(".")[0])
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                beside.add(node.module.split(".")[0])
                continue
            found.add(node.module)
            beside.add(node.module.split(".")[0])
            for a in node.names:
                found.add(f"{node.module}.{a.name}")
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.ImportFrom):  # from . import helper
            beside.update(a.name for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(getattr(node, "ctx", None), ast.Del):
            chain: list[str] = []
            at: ast.AST = node
            while isinstance(at, ast.Attribute):
                chain.append(at.attr)
                at = at.value
            if isinstance(at, ast.Name) and at.id in aliases:
                found.add(".".join([aliases[at.id], *reversed(chain)]))
    for name in beside:
        if name.startswith("__"):
            continue
        for near in (path.parent / f"{name}.py", path.parent / name / "__init__.py"):
            try:
                if near.is_file():
                    found |= source_names(near, seen)
            except (OSError, ValueError, RecursionError):  # a name too long for a path, a folder it may not read
                pass
    return found


def import_frameworks(*modules: str | Path | None) -> None:
    """Import, here and now, every framework the problem's modules name in their imports (jax,
    torch, triton), before a leg's watch takes its snapshot: a framework's own import registers
    hooks (jax adds a garbage-collector callback) that must not read as candidate code's doing
    where the backend is another framework's. Where they name a part of a framework that patches
    the framework when it first loads or runs (torch's compiler wraps `torch.manual_seed` and
    `nn.Module.__init__`), the backend loads and runs that part once, here, with code of its own
    (`late_state`); nothing else they name is imported, so no module of their choosing runs
    before the snapshot. One that is not installed (or fails to import) is left to the module's
    own import to report."""
    import importlib

    reached = {name for path in modules if path for name in source_names(path) if name.split(".")[0] in _FRAMEWORKS}
    for name in sorted({name.split(".")[0] for name in reached}):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - absent or broken here: the module's own import reports it
            pass
    if "torch" in sys.modules and any(name.split(".")[0] == "torch" for name in reached):
        with contextlib.suppress(ImportError):
            importlib.import_module("kgate.backends.torch_backend").late_state(reached)


def require_jax(reference: str | Path, what: str) -> None:
    """Refuse a problem of another framework for what only JAX programs have (`what`)."""
    backend = detect(reference)
    if backend != "jax":
        from kgate.errors import KgateError

        raise KgateError(f"{Path(reference).name} is a {backend} problem, and {what}.",
                         f"use kgate gate, parity, measure and verify on {backend} problems.")


def backend_for(reference: str | Path, forced: str | None = None) -> str:
    """The backend a problem runs on: `forced` (`--backend`) where given, else the one its
    reference's imports call for (`detect`)."""
    if forced is None or forced == "auto":
        return detect(reference)
    if forced not in BACKENDS:
        from kgate.errors import KgateError

        raise KgateError(f"--backend {forced!r} is not one kgate has.", f"use auto or one of: {', '.join(BACKENDS)}.")
    return forced


def detect(reference: str | Path) -> str:
    """The backend for a problem, chosen from its reference module: torch when it imports
    torch (or triton) and not jax; jax otherwise (the default)."""
    return "torch" if frameworks(reference) == {"torch"} else "jax"
