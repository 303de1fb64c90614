"""Loading a reference and a candidate module under the problem-module protocol.

The reference is imported first and registered under its own name (so a candidate's
`import baseline` gets the very same module object), its entry is bound, the op-point
is applied to its CONFIG, and only then is the candidate imported.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import inspect
import sys
import traceback
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from kgate.errors import KgateError, describe
from kgate.problem.model import (DEFAULT_METHOD, SHARED, ModelEntry, ModelProtocol, ShapeGlobals, init_inputs_of,
                                 is_model_module, make_inputs, model_class, shape_global_names)
from kgate.problem.oppoint import OpPoint, config_keys_read, key_name, keyword_value, resolve_op_point
from kgate.problem.snapshot import ModuleSnapshot, snapshot_module

Role = Literal["reference", "candidate"]


@dataclass(frozen=True)
class ProblemModule:
    """A loaded module and the entry kgate bound from it at load time."""

    role: Role
    path: Path
    module: types.ModuleType
    entry_name: str
    entry: Callable[..., Any]
    sha256: str
    # A reference whose module declares `_skip_jit = True` (module or entry) runs op by op, as
    # some suites mark it. Decided once at load, for the reference only, and passed to the
    # backend explicitly: nothing a candidate sets on a function is ever read.
    eager: bool = False
    kwargs: Mapping[str, Any] | None = None  # keyword arguments `entry` is bound with (a sweep's point)
    model: ModelProtocol | None = None  # the Model protocol's instance builder; None under the CONFIG protocol

    @property
    def config(self) -> Any:
        """The op-point: the CONFIG dict, or a Model module's shape globals (a mapping that
        rebinds them); None when the module has neither."""
        if self.model is not None:
            return self.model.shapes
        config = vars(self.module).get("CONFIG")
        return config if isinstance(config, dict) else None

    @property
    def create_inputs(self) -> Callable[..., Any]:
        if self.model is not None:
            return make_inputs(self.module)
        fn = vars(self.module).get("create_inputs")
        if not callable(fn):
            raise KgateError(
                f"{self.path} has no create_inputs function.",
                "define create_inputs(...) returning a tuple of input arrays.",
            )
        return fn

    def create_inputs_params(self) -> set[str]:
        """Which of `seed`/`dtype` create_inputs accepts by name."""
        params = inspect.signature(self.create_inputs).parameters
        accepts_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        return {name for name in ("seed", "dtype") if name in params or accepts_kwargs}


    def optional(self, name: str) -> Callable[..., Any] | None:
        fn = vars(self.module).get(name)
        return fn if callable(fn) else None

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "sha256": self.sha256, "entry": self.entry_name,
                **({"eager": True} if self.eager else {}), **({"kwargs": dict(self.kwargs)} if self.kwargs else {}),
                **({"model": {"class": self.model.cls.__name__, "weights": self.model.weights()}} if self.model else {})}


@dataclass(frozen=True)
class LoadedPair:
    """Reference and candidate, loaded in protocol order, plus what the candidate's import changed."""

    reference: ProblemModule
    candidate: ProblemModule
    op_point: OpPoint
    reference_changes: tuple[str, ...]
    config_mismatches: tuple[str, ...]
    config_labels: tuple[str, ...] = ()  # descriptive CONFIG strings that differ: reported, not an anomaly


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_path(path: Path, role: Role) -> Path:
    flag = "--reference" if role == "reference" else "--candidate"
    if not path.exists():
        raise KgateError(f"{role} module {path} does not exist.", f"pass an existing .py file to {flag}.")
    if not path.is_file() or path.suffix != ".py":
        raise KgateError(f"{role} module {path} is not a .py file.", f"pass a Python source file to {flag}.")
    return path.resolve()


def _exec_module(path: Path, name: str, role: Role) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KgateError(f"cannot import {path} as a module.", "check that it is a Python source file.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the module's own error: report it, with where it happened
        sys.modules.pop(name, None)
        where = traceback.extract_tb(exc.__traceback__)[-1]
        raise KgateError(
            f"importing the {role} module {path} raised {describe(exc)} "
            f"(at {Path(where.filename).name}:{where.lineno}).",
            f"run `python {path}` to see the full traceback and fix the module.",
        ) from exc
    return module


def _bind_entry(module: types.ModuleType, path: Path, role: Role, entry: str) -> Callable[..., Any]:
    fn = vars(module).get(entry)
    if not callable(fn):
        available = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        hint = f" (callables: {', '.join(available)})" if available else ""
        flag = "--entry" if role == "candidate" else "--reference-entry"
        raise KgateError(
            f"{role} module {path} has no callable {entry!r}{hint}.",
            f"define {entry}(*inputs) in it, or name the {role}'s entry with {flag} NAME "
            "(--reference-entry names the reference's, --entry the candidate's).",
        )
    return fn


def _load(path: Path, role: Role, name: str, entry: str, source: ProblemModule | None = None,
          weights: str = SHARED) -> ProblemModule:
    """Import and bind a module: the CONFIG protocol when it has the entry function, the Model
    protocol when it has a Model class instead. `source`: the reference, for a candidate;
    `weights`: the reference's weights policy (`parse_weights`)."""
    module = _exec_module(path, name, role)
    if (source is not None and source.model is not None) or (
            not callable(vars(module).get(entry)) and is_model_module(module)):
        return _load_model(module, path, role, entry, source, weights)
    if weights != SHARED:
        raise KgateError(f"--weights {weights.partition(':')[0]} applies to a Model module (class Model, get_inputs); "
                         f"{path.name} follows the CONFIG protocol, whose weights are what create_inputs makes.",
                         "drop --weights, and draw the weights in create_inputs from its seed.")
    fn = _bind_entry(module, path, role, entry)
    eager = role == "reference" and bool(vars(module).get("_skip_jit") is True or getattr(fn, "_skip_jit", False) is True)
    return ProblemModule(role, path, module, entry, fn, file_sha256(path), eager)


def _load_model(module: types.ModuleType, path: Path, role: Role, entry: str,
                source: ProblemModule | None, weights: str = SHARED) -> ProblemModule:
    """A Model-protocol module: the method `entry` names (`forward` for the default entry) of
    an instance built at the op-point; a candidate's built from the reference's get_init_inputs
    and given its weights."""
    method = DEFAULT_METHOD if entry == "workload" else entry
    shapes = ShapeGlobals(module, shape_global_names(module, path.read_text(errors="replace")))
    if source is not None and source.model is None:
        raise KgateError(f"candidate module {path} follows the Model protocol, but the reference "
                         f"{source.path.name} does not (it has CONFIG/create_inputs/{source.entry_name}).",
                         f"write the candidate as the reference's protocol: a function {source.entry_name}(*inputs).")
    # a candidate is built from the reference's get_init_inputs and given the reference's weights
    protocol = ModelProtocol(module, path, role, model_class(module, path, role),
                             init_inputs_of(source.module if source is not None else module), shapes,
                             source=source.model if source is not None else None, weights=weights)
    shapes.protocols.append(protocol)
    eager = role == "reference" and vars(module).get("_skip_jit") is True
    return ProblemModule(role, path, module, method, ModelEntry(protocol, method), file_sha256(path), eager,
                         model=protocol)


def takes_keywords(entry: Callable[..., Any], name: str, keywords: Sequence[str], flag: str = "--grid") -> None:
    """Refuse keyword arguments the candidate's entry does not take (`flag`: the option that named them)."""
    try:
        params = inspect.signature(entry).parameters
    except (TypeError, ValueError):
        return  # a callable whose signature Python cannot read: its call will say
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    takes = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY or (
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.default is not inspect.Parameter.empty)]
    inputs = [n for n, p in params.items() if p.default is inspect.Parameter.empty and p.kind in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    taken = [k for k in keywords if k in inputs]
    if taken:
        raise KgateError(f"{', '.join(repr(k) for k in taken)} {'is' if len(taken) == 1 else 'are'} the candidate's "
                         f"{name} input(s), which kgate passes from create_inputs.",
                         f"set keyword arguments with defaults only (it takes {', '.join(takes) or 'none'}).")
    missing = [k for k in keywords if k not in params]
    if missing:
        example = f"{flag} {takes[-1] if takes else 'block_rows'}=..."
        raise KgateError(
            f"the candidate's {name} takes no keyword argument {', '.join(repr(k) for k in missing)} "
            f"(it takes {', '.join(takes) or 'none'}).",
            f"use keyword arguments {name} takes, e.g. {example}; or give {name} that keyword (with its default) "
            "so kgate can set it.",
        )


def parse_kwargs(items: Sequence[str]) -> dict[str, Any]:
    """`--kwarg NAME=VALUE` (a Python literal; a bare word is a string) into {name: value}."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep or not name.isidentifier() or not raw:
            raise KgateError(f"--kwarg {item!r} is not of the form NAME=VALUE.",
                             "write it as --kwarg block_rows=16 (one keyword argument per --kwarg).")
        if name in out:
            raise KgateError(f"--kwarg names {name!r} twice.", f"give {name} once.")
        out[name] = keyword_value("--kwarg", name, raw)
    return out


def kwargs_to_wire(kwargs: Mapping[str, Any] | None) -> dict[str, str]:
    """Keyword arguments as text a leg's JSON request carries exactly (a tuple stays a tuple)."""
    return {k: repr(v) for k, v in (kwargs or {}).items()}


def kwargs_from_wire(wire: Mapping[str, str] | None) -> dict[str, Any]:
    return {k: ast.literal_eval(v) for k, v in (wire or {}).items()}


def bind_keywords(candidate: ProblemModule, kwargs: Mapping[str, Any] | None) -> ProblemModule:
    """The candidate with its entry bound to `kwargs` (a sweep's point, `--kwarg`): refused
    when the entry does not take them."""
    if not kwargs:
        return candidate
    takes_keywords(candidate.entry, candidate.entry_name, list(kwargs), "--kwarg")
    return replace(candidate, entry=functools.partial(candidate.entry, **kwargs), kwargs=dict(kwargs))


def _candidate_module_name(candidate: Path, reference_name: str) -> str:
    stem = candidate.stem
    return stem if stem != reference_name and stem.isidentifier() else f"kgate_candidate_{abs(hash(candidate)) % 10**8}"


@contextlib.contextmanager
def _import_scope(dirs: Sequence[Path], names: Sequence[str]) -> Iterator[None]:
    """Put the modules' folders first on sys.path; restore sys.path and sys.modules after.

    Sibling modules the candidate imported from these folders (`from pallas import ...`)
    are dropped on exit too, so the next problem's same-named sibling loads fresh.
    """
    saved_path = list(sys.path)
    saved_modules = {name: sys.modules.get(name) for name in names}
    before = set(sys.modules)
    for folder in reversed(dirs):
        sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules.get(name), "__file__", None)
            if origin and any(Path(origin).resolve().parent == folder for folder in dirs):
                sys.modules.pop(name, None)
        for name, module in saved_modules.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _config_mismatches(
    reference: Mapping[str, Any] | None, candidate: Mapping[str, Any] | None, read: set[str] | None
) -> tuple[list[str], list[str]]:
    """(op-point values that differ, descriptive labels that differ). A string value is a label
    when the reference's code never reads its key (a `name`, `model` or `operator` tag); every
    other value (a size, a shape, a numeric parameter, a string the code reads) defines the op-point."""
    if reference is None or candidate is None or reference is candidate:
        return [], []
    mismatches: list[str] = []
    labels: list[str] = []
    for key in sorted(set(reference) & set(candidate)):
        if reference[key] == candidate[key]:
            continue
        line = f"{key_name(reference, key)}: reference {reference[key]!r}, candidate {candidate[key]!r}"
        is_label = isinstance(reference[key], str) and isinstance(candidate[key], str) and read is not None and key not in read
        (labels if is_label else mismatches).append(line)
    return mismatches, labels


@contextlib.contextmanager
def load_reference(
    reference_path: str | Path, *, overrides: Mapping[str, Any] | None = None, use_tiny: bool = False,
    entry: str = "workload", weights: str = SHARED, registered: Mapping[str, Any] | None = None,
) -> Iterator[tuple[ProblemModule, OpPoint]]:
    """Load the reference alone, with the op-point applied: a process that never sees the candidate."""
    ref_path = _check_path(Path(reference_path), "reference")
    ref_name = ref_path.stem if ref_path.stem.isidentifier() else "kgate_reference"
    with _import_scope([ref_path.parent], [ref_name]):
        reference = _load(ref_path, "reference", ref_name, entry, weights=weights)
        updates, source = resolve_op_point(
            reference.config, vars(reference.module).get("TINY"), dict(overrides or {}), use_tiny, registered
        )
        replaced = {k: (reference.config or {}).get(k) for k in updates}
        if reference.config is not None:
            reference.config.update(updates)
        _build(reference)
        yield reference, OpPoint(dict(reference.config or {}), source, dict(updates), replaced)


@contextlib.contextmanager
def config_set(updates: Mapping[str, Any], *configs: dict[str, Any] | None) -> Iterator[None]:
    """Every distinct CONFIG given with `updates` applied for the duration (a candidate's own
    copy: only the keys it has, as `load_pair` keeps it in step), then exactly as it was."""
    distinct = [c for i, c in enumerate(configs) if c is not None and all(c is not d for d in configs[:i])]
    saved = [dict(c) for c in distinct]
    for config in distinct:
        config.update({k: v for k, v in updates.items() if k in config or config is distinct[0]})
    try:
        _rebuild(distinct)  # an __init__ that refuses these sizes raises here, with the op-point put back
        yield
    finally:
        for config, before in zip(distinct, saved):
            config.clear()
            config.update(before)
        _rebuild(distinct, keep_current=True)


def _rebuild(configs: Sequence[Any], keep_current: bool = False) -> None:
    """Build the Model instances of the op-point the shape globals now hold, before anything is
    traced (an instance built inside a trace would put its weights' making in the program);
    `keep_current`: and let go of the others."""
    for config in configs:
        for protocol in getattr(config, "protocols", ()):
            protocol.instance()
            if keep_current:
                protocol.keep_current()


def _build(problem: ProblemModule) -> None:
    if problem.model is not None:
        problem.model.instance()


@contextlib.contextmanager
def load_pair(
    reference_path: str | Path,
    candidate_path: str | Path,
    *,
    entry: str = "workload",
    overrides: Mapping[str, Any] | None = None,
    use_tiny: bool = False,
    watch: Sequence[types.ModuleType] = (),
    reference_entry: str = "workload",
    kwargs: Mapping[str, Any] | None = None,
    weights: str = SHARED,
    before_candidate: Callable[[ProblemModule], Any] | None = None,
    registered: Mapping[str, Any] | None = None,
) -> Iterator[LoadedPair]:
    """Load reference then candidate in protocol order; the modules stay importable inside.

    `kwargs`: keyword arguments the candidate's entry is bound with (`bind_keywords`).
    `weights`: a Model reference's weights policy (`parse_weights`); the candidate is given the same.
    `before_candidate`: called with the reference, at its op-point, before any candidate code
    exists (what must be taken from a process candidate code has not touched yet).

    `registered`: a family's op-point, applied under TINY and `overrides` (`resolve_op_point`).

    `watch`: more modules (kgate's own clocks and statistics, say) whose bindings the
    candidate's import must not change; their changes are reported with the reference's.
    """
    ref_path = _check_path(Path(reference_path), "reference")
    cand_path = _check_path(Path(candidate_path), "candidate")
    ref_name = ref_path.stem if ref_path.stem.isidentifier() else "kgate_reference"
    cand_name = _candidate_module_name(cand_path, ref_name)
    dirs = [cand_path.parent, ref_path.parent] if cand_path.parent != ref_path.parent else [ref_path.parent]
    with _import_scope(dirs, [ref_name, cand_name]):
        reference = _load(ref_path, "reference", ref_name, reference_entry, weights=weights)
        updates, source = resolve_op_point(
            reference.config, vars(reference.module).get("TINY"), dict(overrides or {}), use_tiny, registered
        )
        replaced = {k: (reference.config or {}).get(k) for k in updates}
        if reference.config is not None:
            reference.config.update(updates)
        _build(reference)  # the reference's instance (its weights) exists before any candidate code
        if before_candidate is not None:
            before_candidate(reference)
        before: ModuleSnapshot = snapshot_module(reference.module)
        watched = [snapshot_module(module) for module in watch]
        candidate = bind_keywords(_load(cand_path, "candidate", cand_name, entry, source=reference), kwargs)
        if candidate.config is not None and candidate.config is not reference.config:
            # A candidate carrying its own copy of CONFIG (or of the shape globals) shrinks with the reference.
            candidate.config.update({k: v for k, v in updates.items() if k in candidate.config})
        _build(candidate)
        changes = tuple(before.diff(reference.module)) + tuple(
            change for snap, module in zip(watched, watch) for change in snap.diff(module)
        ) + tuple(reference.model.changes() if reference.model is not None else ())
        op_point = OpPoint(dict(reference.config or {}), source, dict(updates), replaced)
        mismatches, labels = _config_mismatches(
            reference.config, candidate.config, config_keys_read(ref_path.read_text(errors="replace"))
        )
        yield LoadedPair(reference, candidate, op_point, changes, tuple(mismatches), tuple(labels))


def load_requested_pair(req: Mapping[str, Any], **extra: Any) -> Any:
    """`load_pair` for a leg's request (the JSON a kgate process hands a leg): its op-point, both
    entries, and the candidate's keyword arguments."""
    return load_pair(req["reference"], req["candidate"], entry=req["entry"], overrides=req["overrides"],
                     reference_entry=req.get("reference_entry", "workload"), kwargs=kwargs_from_wire(req.get("kwargs")),
                     weights=req.get("weights", SHARED), registered=req.get("registered"), **extra)
