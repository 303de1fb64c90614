"""A snapshot of a module's bindings, to detect what importing other code changed.

The candidate runs in the reference's process and may `import baseline`. Whatever its
import rebinds (the reference's `workload`, a function's code, `CONFIG`) or patches in
a library the reference uses (`jnp.exp = ...`) would change what kgate compares
against. Taking a snapshot before the import and diffing after names each change.
"""

from __future__ import annotations

import copy
import contextlib
import dis
import functools
import hashlib
import itertools
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Values compared by content, not identity: mutating them in place changes the problem.
_CONTENT_NAMES = ("CONFIG", "TINY")


# Class members that libraries fill in lazily as they run (abc's caches, typing's protocol
# bookkeeping) or that say nothing about behaviour: every other member, dunders included (an
# operator such as `Tracer.__matmul__`), is watched.
_VOLATILE_MEMBERS = frozenset({
    "__dict__", "__weakref__", "__doc__", "__module__", "__annotations__", "__abstractmethods__", "_abc_impl",
    "__parameters__", "__orig_bases__", "__callable_proto_members_only__", "__protocol_attrs__",
    "__non_callable_proto_members__",
})


def _code_of(fn: Any) -> Any:
    """The code a callable runs: its own, or, for a wrapper without one (`jax.jit`,
    `functools.wraps`), the code of the function it wraps."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):  # a class's `__code__` is a descriptor, not code
        inner = getattr(fn, "__wrapped__", None)
        code = getattr(inner, "__code__", None) if inner is not None and inner is not fn else None
    return code if isinstance(code, types.CodeType) else None


def _code_digest(fn: Any) -> tuple[str, str, str] | None:
    """A function's code by content (bytecode and constants; a wrapper's own and the wrapped
    function's both) and its defaults, compared within one process; None for what has no code."""
    code = _code_of(fn)
    if code is None:
        return None
    inner = getattr(getattr(fn, "__wrapped__", None), "__code__", None)
    inner = inner if isinstance(inner, types.CodeType) else None
    content = _code_content(code) + (f"+{_code_content(inner)}" if inner is not None and inner is not code else "")
    return content, repr(getattr(fn, "__defaults__", None)), repr(getattr(fn, "__kwdefaults__", None))


def _code_content(code: Any) -> str | None:
    """A digest of a code object's bytecode (as written and as the interpreter runs it) and constants."""
    if code is None:
        return None
    h = hashlib.sha256(code.co_code)
    h.update(_executed(code))
    h.update(repr(code.co_consts).encode())
    for const in code.co_consts:  # a comprehension's, a generator's, an inner function's or a lambda's code
        if isinstance(const, types.CodeType):
            h.update(str(_code_content(const)).encode())
    return h.hexdigest()[:16]


def _content_once(contents: dict[int, str | None], code: Any) -> str | None:
    """`_code_content`, once per code object in `contents` (many bindings share one code)."""
    key = id(code)
    if key not in contents:
        contents[key] = _code_content(code)
    return contents[key]


def _opcode_tables() -> tuple[bytes | None, bytes, bytes, dict[int, frozenset[int]]]:
    """Per opcode as the interpreter may have rewritten it: the instruction it stands for
    (specializations and, from 3.12, the instrumented forms sys.monitoring puts in, back to
    their base); whether its opcode byte, and its argument byte, say what runs (0 where the
    instruction is kept outside the bytecode: an instrumented line or instruction keeps its
    opcode elsewhere and its argument here, an executor of the tier-2 optimizer both); and,
    for the specializations of a binary operation that do one operation whatever the argument
    (`BINARY_OP_ADD_INT`), the arguments they may stand for."""
    shown_op, shown_arg = bytearray(b"\xff" * 256), bytearray(b"\xff" * 256)
    try:
        deopt = bytearray(dis._deoptop(op) for op in range(256))  # type: ignore[attr-defined]
    except Exception:  # an interpreter without specialization (before 3.11)
        return None, bytes(shown_op), bytes(shown_arg), {}
    names = getattr(dis, "_all_opname", dis.opname)
    opmap = getattr(dis, "_all_opmap", dis.opmap)
    operations = [name for name, _ in getattr(dis, "_nb_ops", ())]  # NB_ADD, NB_INPLACE_ADD, ... by argument
    fixed: dict[int, frozenset[int]] = {}
    for op, name in enumerate(names[:256]):
        base = opmap.get(name.removeprefix("INSTRUMENTED_")) if name.startswith("INSTRUMENTED_") else None
        if base is not None:
            deopt[op] = dis._deoptop(base)  # type: ignore[attr-defined]
        elif name == "ENTER_EXECUTOR":
            shown_op[op] = shown_arg[op] = 0
        elif name.startswith("INSTRUMENTED_"):
            shown_op[op] = 0
        if name.startswith("BINARY_OP_") and names[deopt[op]] == "BINARY_OP":
            words = name.removeprefix("BINARY_OP_").split("_")
            does = {arg for arg, nb in enumerate(operations) if nb.removeprefix("NB_").removeprefix("INPLACE_") in words}
            if does:
                fixed[op] = frozenset(does)
    return bytes(deopt), bytes(shown_op), bytes(shown_arg), fixed


_DEOPT, _SHOWN_OP, _SHOWN_ARG, _FIXED_OPERATION = _opcode_tables()
_NOT_A_CACHE = bytes([0] + [255] * 255)  # opcode 0 is CACHE: an inline cache entry, rewritten as the code runs


def _executed(code: Any) -> bytes:
    """The bytecode the interpreter runs, as comparable from one read to the next: from 3.11 it
    runs its own adaptive copy, which `co_code` does not show (a byte written into it through
    ctypes changes what the function does and leaves `co_code` as it was). Specialized
    instructions are read as the instructions they specialize and the inline caches, which the
    interpreter rewrites as it runs, as zeros; the opcodes and arguments must be the ones
    written, except where the instruction is kept outside the bytecode (an instrumented line
    under sys.monitoring, from 3.12), read as written; a specialization that does one operation
    whatever its argument must stand for the argument there. Empty where the interpreter keeps
    no such copy."""
    adaptive = getattr(code, "_co_code_adaptive", None)
    if _DEOPT is None or not isinstance(adaptive, bytes):
        return b""
    written = code.co_code
    if adaptive == written:  # never specialized (most code never runs): what it runs is what was written
        return written
    if len(adaptive) != len(written):
        return b"\xff" + adaptive  # never equal to what a read of unchanged code gives
    ops = adaptive[0::2]
    for op, may in _FIXED_OPERATION.items():  # a specialization that does another operation than its argument says
        at = ops.find(op)
        while at >= 0:
            if adaptive[2 * at + 1] not in may and written[2 * at] != 0:
                return b"\xfe" + adaptive  # never equal to what a read of unchanged code gives
            at = ops.find(op, at + 1)
    live = bytearray(adaptive)
    live[0::2] = ops.translate(_DEOPT)
    kept, shown = bytearray(len(written)), bytearray(len(written))
    kept[0::2] = kept[1::2] = written[0::2].translate(_NOT_A_CACHE)
    shown[0::2], shown[1::2] = ops.translate(_SHOWN_OP), ops.translate(_SHOWN_ARG)
    keep, show = int.from_bytes(kept, "little"), int.from_bytes(shown, "little")
    hide = keep & ~show & ((1 << 8 * len(written)) - 1)  # the instruction is kept elsewhere: read as written
    read = (int.from_bytes(live, "little") & keep & show) | (int.from_bytes(written, "little") & hide)
    return read.to_bytes(len(written), "little")


def _held(value: Any) -> tuple[Any, tuple[Any, ...]] | None:
    """What a watched callable holds besides its code, each part an object that can be swapped
    in place while the callable, its code and its defaults stay the same objects: a function's
    closure cells' contents (`jax.jit` is a wrapper whose cell holds the real jit), a partial's
    function, arguments and keywords (`partial.__setstate__`), a property's accessors
    (`property.__init__` called again). As (where to read them again, what they were): for a
    closure its cells (a function's cells are fixed: `__closure__` cannot be assigned, nor code
    with other free variables), else the object itself. None for what holds none of these."""
    fn = getattr(value, "__func__", value)
    if isinstance(fn, types.FunctionType) and fn.__closure__:
        return fn.__closure__, tuple(_cell_contents(cell) for cell in fn.__closure__)
    if isinstance(value, (functools.partial, property)):
        return value, _holds(value)
    return None


def _holds(value: Any) -> tuple[Any, ...]:
    """A partial's or a property's parts (`_held`): a partial's keywords dict, and each key and value in it."""
    if isinstance(value, functools.partial):
        return (value.func, value.args, value.keywords, *itertools.chain.from_iterable(value.keywords.items()))
    return (value.fget, value.fset, value.fdel)


_EMPTY_CELL = object()  # what an empty cell (`del cell.cell_contents`) holds


def _cell_contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY_CELL


def _held_changed(held: tuple[Any, tuple[Any, ...]]) -> bool:
    """Whether anything `_held` recorded is not the very object it was (read after every timed
    round: the common case, a closure's cells, is one identity test per cell)."""
    where, kept = held
    if type(where) is tuple:
        try:
            for cell, was in zip(where, kept):
                if cell.cell_contents is not was:
                    return True
            return False
        except ValueError:  # a cell empty now (or then)
            return any(_cell_contents(cell) is not was for cell, was in zip(where, kept))
    now = _holds(where)
    return len(now) != len(kept) or any(a is not b for a, b in zip(now, kept))


def _put_back_held(held: tuple[Any, tuple[Any, ...]]) -> None:
    """Put what a callable held back in place (`_held`)."""
    where, kept = held
    if type(where) is tuple:
        for cell, was in zip(where, kept):
            if was is not _EMPTY_CELL:
                cell.cell_contents = was
            elif _cell_contents(cell) is not _EMPTY_CELL:
                del cell.cell_contents
    elif isinstance(where, functools.partial):
        func, args, keywords = kept[:3]
        keywords.clear()
        keywords.update(zip(kept[3::2], kept[4::2]))
        where.__setstate__((func, args, keywords, vars(where) or None))
    else:
        property.__init__(where, *kept, where.__doc__)


def _code_identity(fn: Any, code: Any) -> tuple[int, str, str] | None:
    """`_code_digest` for a snapshot that keeps every code object it recorded (`code`, read once
    from `fn`) alive: code objects are immutable from Python, and one kept alive cannot have its
    id reused, so its identity stands for its content; the defaults, which can be mutable and
    changed in place, by their repr. About twice as fast: diffed after every candidate call. A
    code object written into through ctypes keeps its id: the content digests, compared once at
    the end (`diff(content=True)`), see that."""
    if code is None:
        return None
    return id(code), repr(getattr(fn, "__defaults__", None)), repr(getattr(fn, "__kwdefaults__", None))


@dataclass(frozen=True)
class Binding:
    ident: int
    type_name: str
    code: tuple[str, str, str] | None  # _code_digest


@dataclass(frozen=True)
class ModuleSnapshot:
    """Identities (and code digests) of a module's globals, plus deep copies of CONFIG/TINY."""

    module_name: str
    bindings: dict[str, Binding]
    contents: dict[str, Any]
    libraries: dict[str, dict[str, int]]
    code_only: bool = False  # only functions, classes and their members (a module's data may change as it runs)

    def diff(self, module: types.ModuleType) -> list[str]:
        """Human-readable changes since the snapshot; empty when nothing changed."""
        changes: list[str] = []
        now = {**vars(module), **_class_members(module)}
        if self.code_only:
            now = {k: v for k, v in now.items() if _is_code(v)}
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
            if not name.startswith("__") and ("." not in name or name.partition(".")[0].partition("[")[0] in self.bindings):
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
                elif id(lib_vars[attr]) != ident and not any(
                        id(inner) == ident for inner in _wrapped_by_framework(lib_vars[attr])):
                    # (the original, held by the wrapper that replaced it, is alive: its id is its own)
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


def _local(cls: type, module: types.ModuleType) -> bool:
    """A class of the problem's own: defined in the module or in a sibling module beside it (a
    library's classes keep caches of their own and are the surface watch's business)."""
    if cls.__module__ == module.__name__:
        return True
    origin = getattr(sys.modules.get(cls.__module__), "__file__", None)
    here = getattr(module, "__file__", None)
    return bool(origin and here) and Path(origin).resolve().parent == Path(here).resolve().parent


def _class_members(module: types.ModuleType) -> dict[str, Any]:
    """`Class.member` for the problem's own classes the module binds and their own bases: a
    method patched on the reference's class (`baseline.Model.forward = ...`), one added to it
    (`__getattribute__`), or one patched on a base class from a sibling module changes the
    reference as much as a rebound function."""
    members: dict[str, Any] = {}
    for name, value in list(vars(module).items()):
        if not isinstance(value, type) or not _local(value, module):
            continue
        for cls in value.__mro__:
            if not _local(cls, module):
                continue
            prefix = name if cls is value else f"{name}[{cls.__module__}.{cls.__qualname__}]"
            for member, inner in list(vars(cls).items()):
                if member not in _VOLATILE_MEMBERS:
                    members[f"{prefix}.{member}"] = getattr(inner, "__func__", inner)
    return members


def _is_code(value: Any) -> bool:
    return callable(value) or isinstance(value, (staticmethod, classmethod, property))


def snapshot_module(module: types.ModuleType, *, extra_libraries: Iterable[types.ModuleType] = (),
                    code_only: bool = False) -> ModuleSnapshot:
    """`code_only`: its functions, classes and their members only, no data and no CONFIG
    contents: for watching a module while its own code runs (a reference that caches a value in
    a global as it runs is not changed by that)."""
    bindings = {
        name: Binding(id(value), type(value).__name__, _code_digest(value))
        for name, value in [*vars(module).items(), *_class_members(module).items()]
        if not name.startswith("__") and (not code_only or _is_code(value))
    }
    contents = {}
    for name in () if code_only else _CONTENT_NAMES:
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
    return ModuleSnapshot(module.__name__, bindings, contents, libraries, code_only)


_MISSING = object()

# Rebindings a framework makes of its own functions, on its own, when a part of it loads late (torch
# wraps `torch.manual_seed` in its `_disable_dynamo` when `torch._dynamo` is imported, as a custom
# operator's registration does): each a function that says what a value wraps, where it is such a
# wrapper of the framework's own making (None otherwise), registered by a backend when kgate loads.
# A tuple, rebound to add one: the binding is itself watched.
_REWRAPS: tuple[Callable[[Any], Any], ...] = ()


def allow_rewrap(unwrap: Callable[[Any], Any]) -> None:
    """Accept a rebinding to a framework's own wrapper of the value it replaced: `unwrap(new)` is
    what `new` calls, or None (a backend registers it at kgate's import)."""
    global _REWRAPS
    _REWRAPS = (*_REWRAPS, unwrap)


# What a framework's own wrapper reads off the function it wraps, at every call, to decide what to call
# (torch's `_disable_dynamo` wrapper calls `fn.__dynamo_disable`, set by torch on its first call): each
# a function that, given a watched value, names (the object, the attribute, what the framework itself
# would set there: a test of a new value) where the value is such a wrapper, None otherwise. Registered
# by a backend when kgate loads; read at every diff, so a value set there since the snapshot that the
# framework would not have set is a change though nothing was rebound.
_LOOKUPS: tuple[Callable[[Any], tuple[Any, str, Callable[[Any], bool]] | None], ...] = ()


def watch_lookup(find: Callable[[Any], tuple[Any, str, Callable[[Any], bool]] | None]) -> None:
    """Watch what a framework's wrapper looks up off what it wraps (`_LOOKUPS`)."""
    global _LOOKUPS
    _LOOKUPS = (*_LOOKUPS, find)


def _lookups_of(value: Any) -> list[tuple[Any, str, Any, bool, Callable[[Any], bool]]]:
    """Each lookup a framework's wrapper `value` makes: (object, attribute, its value now, whether
    that is nothing or the framework's own, the framework's test)."""
    found = []
    for find in _LOOKUPS:
        where = find(value)
        if where is not None:
            holder, attr, accept = where
            was = vars(holder).get(attr, _MISSING)
            found.append((holder, attr, was, was is _MISSING or accept(was), accept))
    return found


def _lookup_changed(holder: Any, attr: str, was: Any, was_own: bool, accept: Callable[[Any], bool]) -> bool:
    """Whether a wrapper's lookup finds what the framework would not have set there: a new value
    that fails its test, or the value it had, the framework's then, that fails it now (what it
    holds changed in place). Nothing there is the framework's state before its first call."""
    now = vars(holder).get(attr, _MISSING)
    if now is _MISSING:
        return False
    if now is was:
        return was_own and not accept(now)
    return not accept(now)


def _wrapped_by_framework(new: Any) -> list[Any]:
    """What `new` wraps, for each registered framework whose own wrapper it is (as it holds it now)."""
    return [inner for unwrap in _REWRAPS if (inner := unwrap(new)) is not None]


def _rewrapped(old: Any, new: Any) -> bool:
    """Whether `new` is a framework's own wrapper of `old` (`allow_rewrap`), as it holds it now."""
    return any(inner is old for inner in _wrapped_by_framework(new))
# Defaults made only of these cannot change in place: while the tuple is the same object, so are they.
_ATOMS = frozenset({type(None), bool, int, float, complex, str, bytes})


# One binding of a surface snapshot, for `SurfaceSnapshot.diff` (a plain tuple: read after every
# candidate call): its key; where it lives (a module's dict, a class's mapping proxy: both live
# views); its name there; the object bound then; the function whose code and defaults count; what
# it wraps then (`__func__`, None: nothing); its code object then (None: none); its __defaults__
# then; whether those are immutable atoms and no keyword defaults (unchanged while the very same
# tuple is bound); the repr of both then; what it held then (`_held`; None: nothing).
_Watched = tuple[str, Any, str, Any, Any, Any, Any, Any, bool, tuple[str, str], Any]


@dataclass(frozen=True)
class SurfaceSnapshot:
    """Identities and code digests of every global of a set of modules and of the classes
    they define: what a candidate could rebind to change how kgate grades or times.

    Taken before any candidate code is imported and diffed after each candidate call:
    `kgate.*` (its gates, clocks, timed-call helpers), the array library's public surface
    and its synchronization entry points.
    """

    entries: dict[str, tuple[int, Any, int | None]]  # key -> (id of the value, its code's identity, id of what it wraps)
    modules: tuple[str, ...]
    owned_prefix: str  # kgate's own modules: every global is watched, and a new one is a change
    # key -> (holder, attribute, value, its code state, its code object, what it wraps: kept alive, see _code_identity)
    originals: dict[str, tuple[Any, str, Any, Any, Any, Any]]
    digests: dict[str, str | None]  # key -> its code object's content when snapshot (`_code_content`)
    # For the diff after every candidate call, read from the live namespaces (`_Watched`): each
    # watched module object as it was (None: not loaded), and each namespace's names then.
    loaded: dict[str, Any] = field(default_factory=dict)
    namespaces: tuple[tuple[str, Any, frozenset[str], bool], ...] = ()  # (key prefix, live namespace, names, a class's)
    # the modules kgate's own modules bind (`time`, `os`): (key, live namespace, name, module)
    submodules: tuple[tuple[str, Any, str, Any], ...] = ()
    held: dict[str, tuple[Any, tuple[Any, ...]]] = field(default_factory=dict)  # key -> what it held (`_held`), kept alive
    # key -> what its framework's wrapper looks up (`_lookups_of`), read again at every diff
    lookups: dict[str, list[tuple[Any, str, Any, bool, Callable[[Any], bool]]]] = field(default_factory=dict)
    _watched: list[list[_Watched]] = field(default_factory=list)  # made from `originals` at the first diff

    def diff(self, content: bool = False) -> list[str]:
        """What changed since the snapshot; with `content`, code objects are also hashed again
        (slower: a byte written into one in place keeps its identity).

        Each watched binding is read from its live namespace and compared by identity with the
        object kept (and what it wraps, and its code), its defaults by repr only where they could
        have changed in place; only the names a namespace did not have are walked; the modules
        kgate's own modules bind must be the very ones they bound. Where a watched module was
        replaced in `sys.modules`, unloaded or loaded since, or a class rebound, every binding is
        also walked again by name (`_walked_diff`), and both findings count."""
        changes, walk = self._live_diff(content)
        if walk or any(sys.modules.get(name) is not module for name, module in self.loaded.items()):
            changes = list(set(changes) | set(self._walked_diff(content)))
        return sorted(changes)

    def _live_diff(self, content: bool) -> tuple[list[str], bool]:
        """The changes found in the namespaces kept, and whether a rebound class calls for the walk too."""
        if not self._watched:
            self._watched.append(list(self._bindings()))  # a list: candidate code walking gc.get_objects() may hold it as it grows, which a tuple cannot survive
        changes: list[str] = []
        walk = False
        contents: dict[int, str | None] = {}  # id of a code object -> its content, read once per diff (kept alive: see _code_identity)
        for key, namespace, attr, value, fn, func, code, defaults, simple, reprs, held in self._watched[0]:
            now = namespace.get(attr, _MISSING)
            if now is not value and (_rewrapped(value, now) or self._state_rebound(key, value, now)):
                continue  # the framework's own wrapper of it, calling it (checked at every diff); a class's state
            if now is not value:
                walk = walk or isinstance(value, type)  # its members are now another class's: compared by name too
                changes.append(f"{key} was {'deleted' if now is _MISSING else 'rebound'}")
            elif (getattr(fn, "__code__", None) is not code and _code_of(fn) is not code) or (
                    getattr(value, "__func__", None) is not func and _func_of(value) is not func):
                changes.append(f"{key} had its code or defaults replaced")
            elif code is not None and not (simple and getattr(fn, "__defaults__", None) is defaults
                                           and getattr(fn, "__kwdefaults__", None) is None) and (
                    repr(getattr(fn, "__defaults__", None)), repr(getattr(fn, "__kwdefaults__", None))) != reprs:
                changes.append(f"{key} had its code or defaults replaced")
            elif held is not None and _held_changed(held):
                changes.append(f"{key} had what it holds replaced in place (a closure cell, a partial's arguments "
                               "or a property's accessors)")
            elif content and _content_once(contents, code) != self.digests[key]:
                changes.append(f"{key} had its code changed in place")
        changes += self._lookups_changed()
        changes += self._submodules_changed()
        for prefix, namespace, names, is_class in self.namespaces:
            owned = _owned(prefix, self.owned_prefix)
            for attr in namespace.keys() - names:
                value = namespace.get(attr, _MISSING)
                key = f"{prefix}.{attr}"
                if is_class:
                    if attr in _VOLATILE_MEMBERS:
                        continue
                    if owned:
                        changes.append(f"{key} was added")
                    elif self._overrides_inherited(key):
                        changes.append(f"{key} was added, overriding the method its class inherits")
                elif owned and not attr.startswith("__") and not isinstance(value, types.ModuleType):
                    changes.append(f"{key} was added")
                    if isinstance(value, type) and getattr(value, "__module__", None) == prefix:
                        changes += [f"{key}.{m} was added" for m in vars(value) if m not in _VOLATILE_MEMBERS]
        return changes, walk

    def _lookups_changed(self) -> list[str]:
        return [f"{key} calls what its wrapper looks up off {getattr(holder, '__name__', type(holder).__name__)}."
                f"{attr}, and that was set to something the framework does not set there"
                for key, found in self.lookups.items() for holder, attr, *rest in found if _lookup_changed(holder, attr, *rest)]

    def _submodules_changed(self) -> list[str]:
        return [f"{key} was {'deleted' if namespace.get(attr, _MISSING) is _MISSING else 'rebound'}"
                for key, namespace, attr, module in self.submodules if namespace.get(attr, _MISSING) is not module]

    def _bindings(self) -> Iterable[_Watched]:
        """Each binding as `diff` reads it, from what the snapshot kept (never from the objects as
        they are now: candidate code may have run since)."""
        for key, (holder, attr, value, state, code, func) in self.originals.items():
            fn = value if isinstance(holder, types.ModuleType) or func is None else func
            ident = self.entries[key][1]
            reprs = (ident[1], ident[2]) if ident is not None else ("None", "None")
            # a plain function's defaults as kept; anything else's are compared by repr
            defaults = state[1] if state is not None else _MISSING
            simple = state is not None and state[2] is None and (defaults is None or set(map(type, defaults)) <= _ATOMS)
            yield key, vars(holder), attr, value, fn, func, code, defaults, simple, reprs, self.held.get(key)

    def _walked_diff(self, content: bool) -> list[str]:
        now = _surface(self.modules, self.owned_prefix)[0]
        changes = []
        contents: dict[int, str | None] = {}
        for key, (ident, code, func) in self.entries.items():
            if key not in now:
                changes.append(f"{key} was deleted")
            elif now[key][0] != ident:
                kept = self.originals.get(key)
                now_value = _MISSING if kept is None else vars(kept[0]).get(kept[1], _MISSING)
                if kept is None or not (_rewrapped(kept[2], now_value) or self._state_rebound(key, kept[2], now_value)):
                    changes.append(f"{key} was rebound")
            elif now[key][1] != code or now[key][2] != func:
                changes.append(f"{key} had its code or defaults replaced")
            elif content and _content_once(contents, self.originals[key][4]) != self.digests[key]:
                changes.append(f"{key} had its code changed in place")
        for key in now.keys() - self.entries.keys():
            if key.startswith(self.owned_prefix + "."):
                changes.append(f"{key} was added")
            elif self._overrides_inherited(key):
                changes.append(f"{key} was added, overriding the method its class inherits")
        changes += self._lookups_changed()
        changes += self._submodules_changed()
        return sorted(changes)

    def _state_rebound(self, key: str, was: Any, now: Any) -> bool:
        """Whether a library class's member went from one piece of state to another (torch's compiler
        resets its RNG tracker's states on every compile), as a library module's data may: neither
        the value it had nor the one it has is behaviour (`_behaviour`). A hook that was None and
        is now a function is behaviour now, and a change."""
        holder = self.originals[key][0]
        return (isinstance(holder, type) and not _owned(getattr(holder, "__module__", "") or "", self.owned_prefix)
                and now is not _MISSING and not _behaviour(was) and not _behaviour(now))

    def _overrides_inherited(self, key: str) -> bool:
        """A member added to a watched library class that shadows one of its bases' (a method
        set on `torch.Tensor` over the one it inherits): a library adds names lazily, but
        not over its own inherited methods."""
        owner, _, member = key.rpartition(".")
        held = self.originals.get(owner)
        cls = held[2] if held is not None else None
        if not isinstance(cls, type) or member in _VOLATILE_MEMBERS:
            return False
        inherited = next((vars(base)[member] for base in cls.__mro__[1:] if member in vars(base)), None)
        # a method or a descriptor (a property); not a cache a library fills in (copyreg's __slotnames__)
        return inherited is not None and (callable(inherited) or hasattr(inherited, "__get__"))

    def restore(self) -> None:
        """Put back every binding (and function code) that changed: a candidate's patch must
        not outlive its run in a process that goes on (a test runner, a notebook)."""
        now = _surface(self.modules, self.owned_prefix)[0]
        for key, entry in self.entries.items():
            if now.get(key) == entry:
                continue
            holder, attr, value, state, _, func = self.originals[key]
            try:
                setattr(holder, attr, value)
                if func is not None and isinstance(value, (staticmethod, classmethod)) and value.__func__ is not func:
                    type(value).__init__(value, func)  # re-initialised in place: wrap the kept function again
                if state is not None:
                    fn = getattr(value, "__func__", value)
                    fn.__code__, fn.__defaults__, fn.__kwdefaults__ = state
            except (AttributeError, TypeError):
                pass  # a read-only holder: nothing could have changed it
        for found in self.lookups.values():
            for holder, attr, was, *rest in found:
                if _lookup_changed(holder, attr, was, *rest):
                    with contextlib.suppress(AttributeError, TypeError):
                        if was is _MISSING:
                            delattr(holder, attr)
                        else:
                            setattr(holder, attr, was)
        for held in self.held.values():
            if _held_changed(held):
                try:
                    _put_back_held(held)
                except (AttributeError, TypeError, ValueError):
                    pass
        for _, namespace, attr, module in self.submodules:
            namespace[attr] = module
        for key in now.keys() - self.entries.keys():
            if key.startswith(self.owned_prefix + "."):
                module_name, _, attr = key.rpartition(".")
                module = sys.modules.get(module_name)
                if module is not None:
                    vars(module).pop(attr, None)
            elif self._overrides_inherited(key):  # a method set over an inherited one: removed again
                owner, _, member = key.rpartition(".")
                try:
                    delattr(self.originals[owner][2], member)
                except (AttributeError, TypeError):
                    pass


def _code_state(fn: Any) -> Any:
    code = getattr(fn, "__code__", None)
    if code is None or not isinstance(fn, types.FunctionType):
        return None
    return (code, fn.__defaults__, fn.__kwdefaults__)


def _owned(name: str, owned_prefix: str) -> bool:
    return name == owned_prefix or name.startswith(owned_prefix + ".")


def _func_of(value: Any) -> Any:
    """What a method, staticmethod or classmethod wraps (`__func__`), when reading it twice gives
    the same object; else None. A staticmethod re-initialised in place (`staticmethod.__init__`)
    keeps its identity but wraps another function."""
    func = getattr(value, "__func__", None)
    return func if func is not None and func is getattr(value, "__func__", None) else None


def _surface(
    names: Iterable[str], owned_prefix: str, keep: bool = False
) -> tuple[dict[str, tuple[int, Any, int | None]], dict[str, tuple[Any, str, Any, Any, Any, Any]]]:
    """Every watched binding: key -> (id of the value, its code's identity, id of what it wraps);
    with `keep`, key -> (holder, attribute, value, its code state, its code object, what it wraps),
    each kept alive so that no id is reused."""
    entries: dict[str, tuple[int, Any, int | None]] = {}
    originals: dict[str, tuple[Any, str, Any, Any, Any, Any]] = {}
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__") or isinstance(value, types.ModuleType):
                continue  # submodules appear as they are imported lazily; their own globals are watched
            if not callable(value) and not _owned(name, owned_prefix):
                continue  # a library's module-level state (caches, flags) changes as it runs
            code = _code_of(value)  # read once: the object whose id is recorded is the one kept
            func = _func_of(value)
            entries[f"{name}.{attr}"] = (id(value), _code_identity(value, code), None if func is None else id(func))
            if keep:
                originals[f"{name}.{attr}"] = (module, attr, value, _code_state(value), code, func)
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                for member, inner in list(vars(value).items()):
                    if member in _VOLATILE_MEMBERS:
                        continue
                    func = _func_of(inner)
                    inner_fn = func if func is not None else inner
                    code = _code_of(inner_fn)
                    entries[f"{name}.{attr}.{member}"] = (id(inner), _code_identity(inner_fn, code),
                                                          None if func is None else id(func))
                    if keep:
                        originals[f"{name}.{attr}.{member}"] = (value, member, inner, _code_state(inner_fn), code, func)
    return entries, originals


def _behaviour(member: Any) -> bool:
    """Whether a class member is behaviour (a function, a method, a descriptor: what an instance
    does, or a hook it calls) rather than state the class keeps."""
    return callable(member) or hasattr(type(member), "__get__")


def snapshot_surface(module_names: Iterable[str], owned_prefix: str = "kgate") -> SurfaceSnapshot:
    names = tuple(sorted(set(module_names)))
    entries, originals = _surface(names, owned_prefix, keep=True)
    digests = {key: _code_content(kept[4]) for key, kept in originals.items()}
    held = {key: found for key, kept in originals.items() if (found := _held(kept[2])) is not None}
    lookups = {key: found for key, kept in originals.items() if _LOOKUPS and (found := _lookups_of(kept[2]))}
    loaded = {name: sys.modules.get(name) for name in names}
    namespaces: list[tuple[str, Any, frozenset[str], bool]] = []
    submodules: list[tuple[str, Any, str, Any]] = []
    for name, module in loaded.items():
        if module is None:
            continue
        namespaces.append((name, vars(module), frozenset(vars(module)), False))
        if _owned(name, owned_prefix):  # `time`, `os` as kgate's code reads them
            submodules += [(f"{name}.{attr}", vars(module), attr, value) for attr, value in list(vars(module).items())
                           if isinstance(value, types.ModuleType)]
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and getattr(value, "__module__", None) == name and f"{name}.{attr}" in originals:
                namespaces.append((f"{name}.{attr}", vars(value), frozenset(vars(value)), True))
    return SurfaceSnapshot(entries, names, owned_prefix, originals, digests, loaded, tuple(namespaces),
                           tuple(submodules), held, lookups)


def loaded_modules(*prefixes: str) -> list[str]:
    """Names of the loaded modules equal to or under any of `prefixes`."""
    return [
        name
        for name, module in list(sys.modules.items())
        if module is not None and any(name == p or name.startswith(p + ".") for p in prefixes)
    ]
