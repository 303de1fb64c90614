"""The shared shape of a gate result: named checks, each with evidence and a fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

GateStatus = Literal["PASS", "FAIL", "SKIPPED"]
CheckStatus = Literal["PASS", "FAIL", "ADVISORY", "SKIPPED"]


@dataclass(frozen=True)
class Check:
    """One named check inside a gate. `fix` says what to do when it did not pass."""

    name: str
    status: CheckStatus
    detail: str
    fix: str = ""
    gotcha: str = ""  # the gotcha table's row for the error this check carries, if one matched

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status, "detail": self.detail}
        if self.fix:
            out["fix"] = self.fix
        if self.gotcha:
            out["gotcha"] = self.gotcha
        return out


def error_check(name: str, detail: str, error: str, otherwise: str) -> Check:
    """A FAIL that carries an error (the candidate raised, a lowering or compile error): its fix is
    the gotcha table's row for the error, named, or `otherwise` with a request for a new row."""
    from kgate import gotchas

    fix, row = gotchas.fix_for(str(error), otherwise)
    return Check(name, "FAIL", detail, fix, row)


@dataclass(frozen=True)
class GateResult:
    """A gate's verdict: FAIL if any check failed; the numbers behind it in `details`."""

    gate: str
    checks: tuple[Check, ...]
    details: dict[str, Any] = field(default_factory=dict)
    skipped_reason: str = ""

    def __post_init__(self) -> None:
        if not self.checks and not self.skipped_reason:  # a gate that checked nothing cannot pass
            failed = Check(f"{self.gate}_evaluated", "FAIL", f"the {self.gate} gate checked nothing",
                           "a gate that cannot be evaluated fails: report this as a kgate bug, with the command line")
            object.__setattr__(self, "checks", (failed,))

    @property
    def status(self) -> GateStatus:
        if self.skipped_reason:
            return "SKIPPED"
        return "FAIL" if any(c.status == "FAIL" for c in self.checks) else "PASS"

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.status == "FAIL"]

    @property
    def advisories(self) -> list[Check]:
        return [c for c in self.checks if c.status == "ADVISORY"]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "checks": [c.to_json() for c in self.checks]}
        if self.skipped_reason:
            out["reason"] = self.skipped_reason
        out.update(self.details)
        return out


def skipped(gate: str, reason: str) -> GateResult:
    return GateResult(gate, (), {}, reason)
