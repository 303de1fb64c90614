"""Evidence sealed the moment kgate makes it, in a leg that runs candidate code.

What a leg reports (each run's record, the firing audit's facts, the changes the process watch
found, the output arrays) is made in the candidate's process, and stays there, reachable by the
candidate's code, until the leg sends it at its end: a candidate called again later (the next
probe, the audit's runs) could rewrite what an earlier step recorded, say erase a change the
watch saw, or the launches of a graded run. So each piece is sealed as soon as kgate has made
it, before any candidate code runs again: its digest goes out at once on the beat channel, a
pipe the parent reads and stamps as it comes. The parent then holds the leg's result to its
seals (`problems`): a piece whose digest differs, a piece without its seal, a seal without its
piece, a name sealed twice (another writer on kgate's channel) and a seal line that came
mangled are each a change to the run, an integrity ANOMALY.

A candidate that rewrites a record during its own call, before kgate has sealed it (the list a
recorder is filling), is not caught here: that is out of reach of anything in its process.
No framework import here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kgate.jsonio import as_json
from kgate.verify.spawn import beat

SEAL_BEAT = "seal "
SHOWN = 160  # characters of a sealed text kept in its seal, to name what went missing
TREE = "tree "  # an array tree's digest is its leaves' digest after this


def digest(value: Any) -> str:
    """A value's digest as the parent recomputes it: an array tree by its leaves' digest, any
    other value by its JSON (as a round trip through the result file leaves it)."""
    if callable(getattr(value, "sha256", None)) and hasattr(value, "leaves"):
        return TREE + value.sha256()
    return hashlib.sha256(json.dumps(as_json(value), sort_keys=True).encode()).hexdigest()


def seal(name: str, value: Any, known: str = "") -> None:
    """Send `value`'s digest (`known`, where the caller has just made it) under `name` on the beat
    channel now (nothing outside a leg)."""
    shown = value[:SHOWN] if isinstance(value, str) else ""
    beat(SEAL_BEAT + json.dumps([name, known or digest(value), shown]))


def keep(store: dict[str, Any], name: str, value: Any, kind: str = "result", known: str = "") -> Any:
    """`store[name] = value`, sealed as `KIND NAME`."""
    store[name] = value
    seal(f"{kind} {name}", value, known)
    return value


def sealed(lines: Iterable[str]) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """The seals on a leg's beat lines (name -> digest, shown text), and what is wrong with them."""
    found: dict[str, tuple[str, str]] = {}
    wrong: list[str] = []
    for line in lines:
        if not line.startswith(SEAL_BEAT):
            if SEAL_BEAT.strip() + " [" in line:
                wrong.append(f"a seal came mangled on the leg's beat channel ({line[:80]!r}): something else wrote "
                             "on kgate's channel")
            continue
        try:
            name, value, shown = json.loads(line[len(SEAL_BEAT):])
            if not (isinstance(name, str) and isinstance(value, str) and isinstance(shown, str)):
                raise ValueError
        except ValueError:
            wrong.append(f"a malformed seal on the leg's beat channel ({line[:80]!r}): something else wrote on "
                         "kgate's channel")
            continue
        if name in found:
            wrong.append(f"{name} was sealed twice on the leg's beat channel: something else wrote on kgate's channel")
            continue
        found[name] = (value, shown)
    return found, wrong


def problems(result: Mapping[str, Any], lines: Iterable[str], outputs: Mapping[str, Any],
             result_keys: Iterable[str], lists: Iterable[str] = ()) -> list[str]:
    """How the leg's `result` and `outputs` differ from what it sealed as it made them: each run
    (`run KEY`), each change the watch found (`change I`), each of `result_keys` present
    (`result KEY`), each entry of the lists named in `lists` (`KEY I`) and each output tree
    (`output NAME`). Empty when they agree."""
    found, wrong = sealed(lines)
    pieces: dict[str, Any] = {f"run {run.get('key')}": run for run in result.get("runs", []) if isinstance(run, dict)}
    pieces.update({f"change {i}": change for i, change in enumerate(result.get("changes", []))})
    pieces.update({f"result {key}": result[key] for key in result_keys if key in result})
    for key in lists:
        pieces.update({f"{key} {i}": entry for i, entry in enumerate(result.get(key, []))})
    pieces.update({f"output {name}": tree for name, tree in outputs.items()})
    unsealed = [name for name in pieces if name not in found]
    changed = [name for name, value in pieces.items() if name in found and digest(value) != found[name][0]]
    removed = [name + (f" ({found[name][1]!r})" if found[name][1] else "") for name in found if name not in pieces]
    if changed:
        wrong.append(f"{_listed(changed)} changed after kgate sealed {'it' if len(changed) == 1 else 'them'}: code in "
                     "the candidate's process rewrote kgate's record of the run")
    if removed:
        wrong.append(f"{_listed(removed)} {'was' if len(removed) == 1 else 'were'} sealed and {'is' if len(removed) == 1 else 'are'} "
                     "missing from the leg's report: code in the candidate's process removed "
                     f"{'it' if len(removed) == 1 else 'them'} from kgate's record")
    if unsealed:
        wrong.append(f"the leg reports {_listed(unsealed)}, which kgate never sealed as it made "
                     f"{'it' if len(unsealed) == 1 else 'them'}: the record was added to after the fact")
    return wrong


def _listed(names: list[str], most: int = 6) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
