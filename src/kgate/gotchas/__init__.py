"""The gotcha table: errors kernel authors meet most, as data, with what each means and the fix.

One TOML file per platform in this folder (`pallas_tpu.toml`, ...), each row an `[[gotcha]]`
table: `id`, `pattern` (a regular expression searched in the error text), `means`, `fix`,
`source` (where the pattern was reproduced), `seen_on` (the library version whose message
the pattern was written against) and `where` (lowering, interpret, trace). Rows are tried in
file order, the files in name order: the first match names the row. Every row is reproduced
by a tiny kernel in tests/test_gotchas.py against the real message of the pinned jax.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgate.errors import KgateError

FOLDER = Path(__file__).resolve().parent
FIELDS = ("id", "pattern", "means", "fix", "source", "seen_on", "where")
NEW_ROW = ("no gotcha row matches this error; if authors will meet it again, add a row (id, pattern, means, fix, "
           "source, seen_on) to src/kgate/gotchas/<platform>.toml with a test that reproduces it")


@dataclass(frozen=True)
class Gotcha:
    id: str
    platform: str
    pattern: re.Pattern[str]
    means: str
    fix: str
    source: str
    seen_on: str
    where: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "platform": self.platform, "pattern": self.pattern.pattern, "means": self.means,
                "fix": self.fix, "source": self.source, "seen_on": self.seen_on, "where": self.where}


@functools.lru_cache(maxsize=1)
def table() -> tuple[Gotcha, ...]:
    """Every row of every platform's file, in order; a malformed file is kgate's bug, named."""
    rows: list[Gotcha] = []
    for path in sorted(FOLDER.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
            for n, row in enumerate(data["gotcha"], 1):
                missing = [f for f in FIELDS if not str(row.get(f, "")).strip()]
                if missing:
                    raise ValueError(f"row {n} lacks {', '.join(missing)}")
                rows.append(Gotcha(str(row["id"]), path.stem, re.compile(str(row["pattern"])), str(row["means"]),
                                   str(row["fix"]), str(row["source"]), str(row["seen_on"]), str(row["where"])))
        except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, re.error) as exc:
            raise KgateError(f"the gotcha table {path} is malformed ({exc}).", "restore it from kgate's repository.") from exc
    ids = [r.id for r in rows]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise KgateError(f"the gotcha table repeats ids {duplicated}.", "give every row its own id.")
    return tuple(rows)


def match(text: str) -> Gotcha | None:
    """The first row whose pattern is found in `text`."""
    return next((row for row in table() if row.pattern.search(text)), None)


def matches(text: str) -> list[Gotcha]:
    """Every row whose pattern is found in `text`, in table order."""
    return [row for row in table() if row.pattern.search(text)]


def known(gotcha_id: str) -> bool:
    return any(row.id == gotcha_id for row in table())


def fix_for(error: str, otherwise: str) -> tuple[str, str]:
    """(the fix to print, the matching row's id or ""): the row's fix when one matches the error,
    else `otherwise` and a request for a new row."""
    row = match(error)
    if row is None:
        return f"{otherwise} ({NEW_ROW}.)", ""
    return f"{row.fix} [gotcha {row.id}: {row.means}]", row.id
