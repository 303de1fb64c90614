"""Family slugs: lowercase, hyphenated operation names (`flash-attention`)."""

from __future__ import annotations

import re

from kgate.errors import KgateError

RULE = "lowercase letters and digits in hyphen-separated words, starting with a letter (e.g. flash-attention)"
_SLUG = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


def validate(slug: str) -> str:
    if not _SLUG.match(slug):
        raise KgateError(f"slug {slug!r} is not valid: a slug is {RULE}.", f"use e.g. {derive(slug) or 'rms-norm'!r}.")
    return slug


def derive(name: str) -> str:
    """A slug from a path or name: `1p_Flash_Attention` -> `flash-attention`.

    Words are split on non-alphanumerics and lower-to-upper case changes; words that
    start with a digit (suite numbering such as `1p`, `07`) are dropped.
    """
    stem = re.sub(r"\.py$", "", name.rsplit("/", 1)[-1])
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", stem)
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w and not w[0].isdigit()]
    return "-".join(words)
