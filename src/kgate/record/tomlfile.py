"""The records' TOML files (kgate.toml, family.toml): written by tomli-w, read by tomllib.

A header comment says what the file is; the data below it is whatever tomli-w makes of it,
so any string (a path with a backslash, a character outside the Basic Multilingual Plane)
and any key (one with a dot, a non-ASCII identifier) reads back as it was written.
"""

from __future__ import annotations

from typing import Any

import tomli_w

from kgate.errors import KgateError


def dumps(comment: str, data: dict[str, Any]) -> str:
    """The document: the comment's lines, then the data. A value TOML cannot hold (None, an
    object) is refused, naming its key, before anything is written."""
    for key, value in _leaves(data):
        if not isinstance(value, (bool, int, float, str)):
            raise KgateError(
                f"{key} = {value!r} cannot be recorded in TOML ({type(value).__name__}).",
                "give a number, a string, a bool, or a tuple of them.",
            )
    head = "".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines())
    return head + tomli_w.dumps(data)


def tuples(value: Any) -> Any:
    """A value read back: TOML arrays become the tuples they were written from."""
    if isinstance(value, list):
        return tuple(tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: tuples(v) for k, v in value.items()}
    return value


def _leaves(data: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, dict):
        return [leaf for k, v in data.items() for leaf in _leaves(v, f"{key}.{k}" if key else str(k))]
    if isinstance(data, (list, tuple)):
        return [leaf for v in data for leaf in _leaves(v, key)]
    return [(key, data)]
