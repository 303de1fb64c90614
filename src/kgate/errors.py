"""The one exception kgate raises for bad input: it names the problem and the fix."""

from __future__ import annotations


import difflib
import re
import sys

_CALLBACK_TRACE = "Traceback (most recent call last):"
_MISSING_ATTR = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")
_MISSING_NAME = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")
# Pallas names that moved or went away in the jax releases kgate runs on: what to use instead.
RENAMED = {
    "jax.experimental.pallas.tpu.repeat": "jnp.tile (inside the kernel)",
    "jax.experimental.pallas.tpu.TPUCompilerParams": "pltpu.CompilerParams",
    "jax.experimental.pallas.tpu.TPUMemorySpace": "pltpu.MemorySpace (pl.ANY for the ANY space)",
}  # a name that moved to a sibling module (pltpu.delay -> pl.delay) is found by looking there
_SIBLINGS = ("jax.experimental.pallas", "jax.experimental.pallas.tpu", "jax.numpy", "jax.lax", "jax")


def describe(exc: BaseException, limit: int = 400) -> str:
    """`Type: first line of the message`, bounded: how a candidate's failure is reported. An
    error raised inside an interpret-mode callback is reported by its innermost exception (the
    message's first line is only "CpuCallback error calling callback: Traceback ..."); a name
    the installed jax does not have says so, and what to use."""
    text = getattr(exc, "kgate_text", None) or f"{type(exc).__name__}: {exc}".strip()
    if _CALLBACK_TRACE in text:
        text = innermost(text)
    first = text.splitlines()[0] if text else type(exc).__name__
    hint = missing_api(first)
    return (first + (f" ({hint})" if hint else ""))[:limit]


def innermost(text: str) -> str:
    """The last exception line of a formatted traceback embedded in an error message."""
    lines = [line for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b", line):
            return line.strip()
    return lines[-1].strip() if lines else text


def missing_api(line: str) -> str:
    """For `module 'X' has no attribute 'Y'` (or `cannot import name 'Y' from 'X'`) about jax:
    that Y does not exist in the installed jax, and what to use instead; "" otherwise."""
    if m := _MISSING_ATTR.search(line):
        module, name = m.groups()
    elif m := _MISSING_NAME.search(line):
        name, module = m.groups()
    else:
        return ""
    jax = sys.modules.get("jax")
    if jax is None or not module.split(".")[0] == "jax":
        return ""
    said = f"{module}.{name} does not exist in jax {getattr(jax, '__version__', '?')}: it was removed or renamed"
    if f"{module}.{name}" in RENAMED:
        return f"{said}; use {RENAMED[f'{module}.{name}']}"
    elsewhere = [f"{sibling}.{name}" for sibling in _SIBLINGS
                 if sibling != module and hasattr(sys.modules.get(sibling), name)]
    if elsewhere:
        return f"{said}; it exists as {elsewhere[0]}"
    close = difflib.get_close_matches(name, [n for n in dir(sys.modules.get(module)) if not n.startswith("_")], 3)
    return f"{said}" + (f"; close names there: {', '.join(close)}" if close else "")


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
