"""The one exception kgate raises for bad input: it names the problem and the fix."""

from __future__ import annotations


def describe(exc: BaseException, limit: int = 400) -> str:
    """`Type: first line of the message`, bounded: how a candidate's failure is reported."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]


class KgateError(Exception):
    """Bad input or an impossible request; the CLI turns it into exit code 2.

    ``problem`` says what is wrong, ``fix`` says what to do about it. Both are
    shown to the user, and both appear in the JSON error object.
    """

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem} Fix: {fix}")
        self.problem = problem
        self.fix = fix

    def to_json(self) -> dict[str, str]:
        return {"problem": self.problem, "fix": self.fix}


def article(word: str) -> str:
    """`a` or `an` before `word` as it is said: an int, an xla-rewrite, a float, a flag."""
    w = word.lower()
    spoken_vowel = w[:1] in "aeiox" or (w.startswith("un") and not w.startswith("uni"))
    return "an" if spoken_vowel else "a"
