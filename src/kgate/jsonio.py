"""JSON in and out for every layer: stable output, non-finite floats as strings, and files
written atomically (never half-written)."""

from __future__ import annotations

import functools
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


def clean(value: Any) -> Any:
    # JSON has no inf/NaN; spell them as strings so the output stays valid JSON.
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "nan"
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def dumps(obj: Any) -> str:
    return json.dumps(clean(obj), indent=2, sort_keys=False)


def as_json(value: Any) -> Any:
    """`value` as JSON reads it back (tuples become lists): to compare a value from TOML or
    Python with one from a JSON document."""
    return json.loads(dumps(value))


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename over the target."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would make reports unreadable to others
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- the published schemas, checked where asked ------------------------------------------------

SCHEMA_CHECK_ENV = "KGATE_SCHEMA_CHECK"
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"  # in a source checkout: the published schemas/


def document(obj: Any, kind: str) -> str:
    """`dumps` for a document kgate publishes, whose shape `schemas/<kind>-v1.schema.json`
    states. With KGATE_SCHEMA_CHECK=FILE (the test suite sets it), each document is
    validated against its schema and every violation is appended to FILE; the output is
    never changed."""
    text = dumps(obj)
    check_schema(json.loads(text), kind)
    return text


def check_schema(data: Any, kind: str) -> None:
    """Under KGATE_SCHEMA_CHECK=FILE: append `kind`'s schema violations in `data` to FILE."""
    log = os.environ.get(SCHEMA_CHECK_ENV)
    if not log:
        return
    import sys

    problems = schema_errors(data, kind)
    if problems:
        with open(log, "a") as handle:
            for problem in problems:
                handle.write(json.dumps({"kind": kind, "argv": sys.argv, "problem": problem}) + "\n")


def schema_errors(data: Any, kind: str, folder: Path = SCHEMAS) -> list[str]:
    """Every way `data` breaks `schemas/<kind>-v1.schema.json` (needs `jsonschema`)."""
    try:
        import jsonschema
        import referencing  # noqa: F401  (the registry's library)
    except ImportError:
        return ["jsonschema is not installed: documents cannot be checked (pip install -e '.[test]')"]
    schemas, registry = _published(folder)
    name = f"{kind}-v1.schema.json"
    if name not in schemas:
        return [f"no schema {folder / name}"]
    validator = jsonschema.Draft202012Validator(schemas[name], registry=registry)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in validator.iter_errors(data)]


@functools.lru_cache(maxsize=4)
def _published(folder: Path) -> tuple[dict[str, Any], Any]:
    """The schemas in `folder` and a registry of them by `$id`, read once per process."""
    from referencing import Registry, Resource

    schemas = {p.name: json.loads(p.read_text()) for p in folder.glob("*.schema.json")}
    return schemas, Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas.values())
