"""A snapshot of a module's bindings, to detect what importing other code changed.

The candidate runs in the reference's process and may `import baseline`. Whatever its
import rebinds (the reference's `workload`, a function's code, `CONFIG`) or patches in
a library the reference uses (`jnp.exp = ...`) would change what kgate compares
against. Taking a snapshot before the import and diffing after names each change.
"""

from __future__ import annotations

import copy
import hashlib
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Values compared by content, not identity: mutating them in place changes the problem.
_CONTENT_NAMES = ("CONFIG", "TINY")


def _code_digest(fn: Any) -> str | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    h = hashlib.sha256(code.co_code)
    h.update(repr(code.co_consts).encode())
    h.update(repr(getattr(fn, "__defaults__", None)).encode())
    h.update(repr(getattr(fn, "__kwdefaults__", None)).encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Binding:
    ident: int
    type_name: str
    code: str | None


@dataclass(frozen=True)
class ModuleSnapshot:
    """Identities (and code digests) of a module's globals, plus deep copies of CONFIG/TINY."""

    module_name: str
    bindings: dict[str, Binding]
    contents: dict[str, Any]
    libraries: dict[str, dict[str, int]]

    def diff(self, module: types.ModuleType) -> list[str]:
        """Human-readable changes since the snapshot; empty when nothing changed."""
        changes: list[str] = []
        now = vars(module)
        for name, before in self.bindings.items():
            if name not in now:
                changes.append(f"{self.module_name}.{name} was deleted")
                continue
            value = now[name]
            if id(value) != before.ident:
                changes.append(f"{self.module_name}.{name} was rebound (now {type(value).__name__})")
            elif _code_digest(value) != before.code:
                changes.append(f"{self.module_name}.{name} had its code or defaults replaced")
        for name in sorted(set(now) - set(self.bindings)):
            if not name.startswith("__"):
                changes.append(f"{self.module_name}.{name} was added")
        for name, before_value in self.contents.items():
            if name in now and _safe_ne(now[name], before_value):
                changes.append(f"{self.module_name}.{name} was mutated: {before_value!r} -> {now[name]!r}")
        for lib_name, attrs in self.libraries.items():
            lib = sys.modules.get(lib_name)
            if lib is None:
                continue
            lib_vars = vars(lib)
            for attr, ident in attrs.items():
                if attr not in lib_vars:
                    changes.append(f"{lib_name}.{attr} (reached from {self.module_name}) was deleted")
                elif id(lib_vars[attr]) != ident:
                    changes.append(f"{lib_name}.{attr} (reached from {self.module_name}) was monkeypatched")
        return changes


def _safe_ne(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # an array-valued entry; compare by repr instead
        return repr(a) != repr(b)


def _libraries_of(module: types.ModuleType) -> Iterable[types.ModuleType]:
    """Modules the reference reaches through its globals, and their submodules one level down."""
    seen: dict[str, types.ModuleType] = {}
    for value in vars(module).values():
        lib = value if isinstance(value, types.ModuleType) else None
        if lib is None or lib.__name__ in seen:
            continue
        seen[lib.__name__] = lib
        top = lib.__name__.split(".")[0]
        for sub in list(vars(lib).values()):
            if isinstance(sub, types.ModuleType) and sub.__name__.split(".")[0] == top:
                seen.setdefault(sub.__name__, sub)
    return seen.values()


def snapshot_module(module: types.ModuleType, *, extra_libraries: Iterable[types.ModuleType] = ()) -> ModuleSnapshot:
    bindings = {
        name: Binding(id(value), type(value).__name__, _code_digest(value))
        for name, value in vars(module).items()
        if not name.startswith("__")
    }
    contents = {}
    for name in _CONTENT_NAMES:
        if name in vars(module):
            try:
                contents[name] = copy.deepcopy(vars(module)[name])
            except Exception:
                contents[name] = repr(vars(module)[name])
    libraries: dict[str, dict[str, int]] = {}
    for lib in [*_libraries_of(module), *extra_libraries]:
        libraries[lib.__name__] = {
            attr: id(value) for attr, value in list(vars(lib).items()) if not attr.startswith("__")
        }
    return ModuleSnapshot(module.__name__, bindings, contents, libraries)
