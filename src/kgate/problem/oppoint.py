"""Op-point overrides (`--set key=value`, the module's TINY) applied to CONFIG in place."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgate.errors import KgateError, article


@dataclass(frozen=True)
class OpPoint:
    """The op-point a run used: the final CONFIG values and where each change came from."""

    values: Mapping[str, Any]
    source: str  # "CONFIG", "TINY", "TINY+--set", "--set", or "none" (module has no CONFIG)
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "values": dict(self.values), "overrides": dict(self.overrides)}


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
        raw = raw.strip()
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw  # a bare word is a string, e.g. --set mode=causal
        parsed[key] = value
    return parsed


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
    for key, value in overrides.items():
        if key not in config:
            raise KgateError(
                f"{origin} sets {key!r}, which is not a CONFIG key (keys: {', '.join(sorted(config))}).",
                "use one of the CONFIG keys listed.",
            )
        if not _compatible(config[key], value):
            raise KgateError(
                f"{origin} sets {key}={value!r} ({type(value).__name__}) but CONFIG[{key!r}] is "
                f"{config[key]!r} ({type(config[key]).__name__}).",
                f"give {key} {article(type(config[key]).__name__)} {type(config[key]).__name__} value.",
            )


def resolve_op_point(
    config: Mapping[str, Any] | None,
    tiny: Mapping[str, Any] | None,
    overrides: Mapping[str, Any],
    use_tiny: bool,
) -> tuple[dict[str, Any], str]:
    """The updates to apply to CONFIG and a label for where they came from (pure)."""
    updates: dict[str, Any] = {}
    parts: list[str] = []
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


def shown(values: Mapping[str, Any]) -> str:
    """`batch=1, seq_len=17`: op-point values as messages show them."""
    return ", ".join(f"{k}={v}" for k, v in values.items())
