"""Op-point overrides (`--set key=value`, the module's TINY) applied to CONFIG in place."""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgate.errors import KgateError, article


@dataclass(frozen=True)
class OpPoint:
    """The op-point a run used: the final CONFIG values and where each change came from."""

    values: Mapping[str, Any]
    source: str  # "CONFIG", "TINY", "TINY+--set", "--set", "registered+TINY", ... or "none" (module has no CONFIG)
    overrides: Mapping[str, Any] = field(default_factory=dict)
    replaced: Mapping[str, Any] = field(default_factory=dict)  # each overridden key's value before

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "values": dict(self.values), "overrides": dict(self.overrides)}

    def without_tiny(self, overrides: Mapping[str, Any], registered: Mapping[str, Any] | None) -> dict[str, Any]:
        """The updates that give the op-point the run would use without TINY: each key changed
        put back as the family registered it, else as CONFIG had it (`--set` still applies)."""
        registered = registered or {}
        return {k: registered.get(k, v) for k, v in self.replaced.items() if k not in overrides}


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """Parse `key=value` strings; values are Python literals (ints, floats, bools, strings)."""
    parsed: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.isidentifier():
            raise KgateError(
                f"--set {item!r} is not of the form key=value.",
                "write it as --set seq_len=128 (one key per --set).",
            )
        parsed[key] = literal(raw.strip())
    return parsed


def keyword_value(flag: str, name: str, raw: str) -> Any:
    """A keyword argument's value from the command line: a plain literal (a number, a string, a
    bool, None, or a tuple or list of them) that crosses to a leg's process unchanged."""
    value = literal(raw)
    if not _plain(value):
        raise KgateError(f"{flag} {name}={raw} is not a plain value ({type(value).__name__}"
                         f"{', not finite' if isinstance(value, float) else ''}).",
                         f"give a number, a string, True/False/None, or a tuple of them, e.g. {flag} {name}=16.")
    return value


def _plain(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, str))


def literal(raw: str) -> Any:
    """A Python literal from the command line (int, float, bool, tuple, ...); a bare word is a
    string, e.g. --set mode=causal."""
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw


def _compatible(old: Any, new: Any) -> bool:
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(old, bool) and isinstance(new, bool)
    if isinstance(old, int):
        return isinstance(new, int)
    if isinstance(old, float):
        return isinstance(new, (int, float))
    return old is None or isinstance(new, type(old))


def validate_overrides(config: Mapping[str, Any] | None, overrides: Mapping[str, Any], origin: str) -> None:
    """Reject overrides naming keys CONFIG lacks or changing a value's type."""
    if not overrides:
        return
    if config is None:
        raise KgateError(
            f"{origin} sets {sorted(overrides)} but the reference module has no CONFIG dict.",
            "add a module-level CONFIG = {...} that create_inputs reads, or drop the overrides.",
        )
    noun = getattr(config, "noun", "CONFIG key")  # a Model module's op-point is its shape globals
    if not config and hasattr(config, "noun"):
        raise KgateError(f"{origin} sets {sorted(overrides)} but the reference module has no {noun}s.",
                         "give the reference module-level sizes (batch_size = 16) that get_inputs and "
                         "get_init_inputs read, or drop the overrides.")
    for key, value in overrides.items():
        if key not in config:
            raise KgateError(
                f"{origin} sets {key!r}, which is not a {noun} (keys: {', '.join(sorted(config))}).",
                f"use one of the {noun}s listed.",
            )
        if not _compatible(config[key], value):
            raise KgateError(
                f"{origin} sets {key}={value!r} ({type(value).__name__}) but {key_name(config, key)} is "
                f"{config[key]!r} ({type(config[key]).__name__}).",
                f"give {key} {article(type(config[key]).__name__)} {type(config[key]).__name__} value.",
            )


def resolve_op_point(
    config: Mapping[str, Any] | None,
    tiny: Mapping[str, Any] | None,
    overrides: Mapping[str, Any],
    use_tiny: bool,
    registered: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], str]:
    """The updates to apply to CONFIG and a label for where they came from (pure): a family's
    `registered` op-point, then TINY over it (when asked), then `--set`."""
    updates: dict[str, Any] = {}
    parts: list[str] = []
    if registered:
        validate_overrides(config, registered, "the family's registered op-point")
        updates.update(registered)
        parts.append("registered")
    if use_tiny and tiny:
        validate_overrides(config, tiny, "TINY")
        updates.update(tiny)
        parts.append("TINY")
    validate_overrides(config, overrides, "--set")
    if overrides:
        updates.update(overrides)
        parts.append("--set")
    if config is None:
        return updates, "none"
    return updates, "+".join(parts) if parts else "CONFIG"


def key_name(config: Mapping[str, Any], key: str) -> str:
    """How messages name an op-point key: `CONFIG['rows']`, or a Model module's `batch_size`."""
    return f"the shape global {key}" if hasattr(config, "noun") else f"CONFIG[{key!r}]"


def refuse_ineffective(keys: Sequence[str], op_point: OpPoint, given: Mapping[str, Any], module: str,
                       registered: Mapping[str, Any] | None = None) -> None:
    """An override that changed nothing must not be reported as the op-point that ran. Each key
    is named where it came from: `given` (--set), `registered` (the family's op-point), else TINY."""
    if not keys:
        return
    registered = registered or {}

    def source(k: str) -> int:  # where a key came from: 0 --set, 1 the family's op-point, 2 TINY
        return 0 if k in given else 1 if k in registered else 2

    named = [("--set ", "--set"), ("the family's op-point ", "the family's op-point (family.toml)"), ("TINY's ", "TINY")]
    came = sorted({source(k) for k in keys})
    origin = " and ".join(named[i][0] + ", ".join(f"{k}={op_point.values[k]!r}" for k in keys if source(k) == i)
                          for i in came)
    where = [named[i][1] for i in came]
    raise KgateError(
        f"{origin} changed nothing: {module}'s create_inputs and entry build the very same program with and without "
        f"it (checked by tracing, nothing run), so the op-point kgate would report was never run. "
        f"Keys without effect: {', '.join(keys)}.",
        f"make create_inputs read its sizes from CONFIG (e.g. CONFIG[{keys[0]!r}]) instead of hard-coding them "
        "(under the Model protocol: get_inputs and get_init_inputs from the shape globals), "
        f"or drop these keys from {' and '.join(where)}.",
    )


def static_config(source: str) -> dict[str, Any] | None:
    """The module's top-level `CONFIG = {...}`, read without running the module (a literal
    dict only); None when there is none or it is computed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found: dict[str, Any] | None = None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "CONFIG" for t in targets) and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                return None
            found = value if isinstance(value, dict) else None
    return found


def _top_level(source: str) -> list[ast.stmt] | None:
    try:
        return ast.parse(source).body
    except SyntaxError:
        return None


def _assigns(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds (assignments, definitions, imports)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, (ast.AnnAssign, ast.AugAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def static_is_model(source: str, entry: str = "workload") -> bool:
    """Whether the module, read without running it, follows the Model protocol as kgate loads it
    (`kgate.problem.module`): no top-level `entry` (`workload`), a top-level `class Model` (or
    `ModelNew`), and no CONFIG at all (a computed one is the CONFIG protocol's too)."""
    bound = set().union(*(_assigns(n) for n in _top_level(source) or []))
    return entry not in bound and bool(bound & {"Model", "ModelNew"}) and "CONFIG" not in bound


def static_takes_dtype(source: str) -> bool | None:
    """Whether the module's inputs can be made in a dtype kgate asks for, read without running
    it: False for a module that follows the Model protocol (`get_inputs()` makes its own); else
    whether its top-level `create_inputs` (the last one defined, as Python keeps) has a `dtype`
    parameter (or **kwargs); None when it cannot be told (no such function at the top level)."""
    body = _top_level(source)
    if body is None:
        return None
    if static_is_model(source):
        return False
    defs = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "create_inputs"]
    if not defs:
        return None
    args = defs[-1].args
    return "dtype" in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} or args.kwarg is not None


def static_shape_globals(source: str) -> set[str] | None:
    """A Model-protocol module's possible shape globals, read without running it: the public names
    its top level assigns (the values are checked when the module runs). None for a module that
    does not follow the Model protocol, or cannot be parsed."""
    if not static_is_model(source):
        return None
    names = set().union(*(_assigns(n) for n in _top_level(source) or [] if isinstance(n, (ast.Assign, ast.AnnAssign))))
    return {n for n in names if not n.startswith("_") and n not in ("CONFIG", "TINY")}


def config_keys_read(source: str) -> set[str] | None:
    """The names the module's code mentions outside its CONFIG literal's keys (a string, as in
    `CONFIG["mode"]`, or a name, as in `def f(mode)` fed by `**CONFIG`): a CONFIG key among them
    may be read. None when the source cannot be parsed (then every key counts as read)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    literal_keys: set[int] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "CONFIG" for t in targets) and isinstance(node.value, ast.Dict):
            literal_keys |= {id(k) for k in node.value.keys if k is not None}
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in literal_keys:
            read.add(node.value)
        elif isinstance(node, ast.Name):
            read.add(node.id)
        elif isinstance(node, ast.arg):
            read.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            read.add(node.arg)
        elif isinstance(node, ast.Attribute):
            read.add(node.attr)
    return read


def shown(values: Mapping[str, Any]) -> str:
    """`batch=1, seq_len=17`: op-point values as messages show them."""
    return ", ".join(f"{k}={v}" for k, v in values.items())
