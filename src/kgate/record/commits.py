"""The commit grammars of an experiment branch: one pattern per kind of record commit."""

from __future__ import annotations

import re
from typing import Final

from kgate.errors import KgateError

GRAMMARS: Final[dict[str, re.Pattern[str]]] = {
    "K3": re.compile(r"^K3\([a-z0-9-]+ v[0-9]{3}\): stub — .+$"),
    "cand": re.compile(r"^cand[0-9]+\([a-z0-9-]+ v[0-9]{3}\): .+ — .+$"),
    "pivot": re.compile(r"^pivot\([a-z0-9-]+ v[0-9]{3}\): [a-z-]+→[a-z-]+$"),
    "lead": re.compile(r"^lead\([a-z0-9-]+ v[0-9]{3}\): .+$"),
    "K7": re.compile(r"^K7\([a-z0-9-]+ v[0-9]{3}\): (supported|refuted|inconclusive|invalid|blocked) — .+$"),
}


def kind(subject: str) -> str | None:
    """Which grammar a commit subject matches, or None."""
    return next((name for name, pattern in GRAMMARS.items() if pattern.match(subject)), None)


def checked(name: str, message: str) -> str:
    """The message, once it is one line matching grammar `name`; else the problem and the fix."""
    if "\n" in message or "\r" in message or not GRAMMARS[name].match(message):
        raise KgateError(
            f"the commit message {message!r} does not match the {name} grammar {GRAMMARS[name].pattern}.",
            "use one line; give a non-empty --what without line breaks.",
        )
    return message
