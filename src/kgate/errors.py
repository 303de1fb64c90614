"""The one exception kgate raises for bad input: it names the problem and the fix."""

from __future__ import annotations


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
