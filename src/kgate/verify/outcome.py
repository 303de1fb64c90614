"""The report a command produces: gate results, the context they were taken in, the status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kgate import __version__
from kgate.gates.common import GateResult

RunStatus = Literal["PASS", "FAIL", "ANOMALY"]
SCHEMA_VERSION = 1
EAGER_NOTE = ("the reference runs eagerly, un-jitted, as its module asks (`_skip_jit`): its outputs are graded as "
              "they are, and a speedup over its time includes what jit alone gives.")


@dataclass(frozen=True)
class Report:
    command: str
    gates: dict[str, GateResult]
    context: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # advisories that belong to no gate (e.g. "no TINY op-point")
    advisories_ok: bool = False  # --advisories-ok: a pass with advisories exits 0 (CI), still listing them

    @property
    def status(self) -> RunStatus:
        if "integrity" in self.gates and self.gates["integrity"].status == "FAIL":
            return "ANOMALY"
        if any(g.status == "FAIL" for g in self.gates.values()):
            return "FAIL"
        return "PASS"

    @property
    def advisories(self) -> list[str]:
        found = list(self.notes)
        for name, gate in self.gates.items():
            found.extend(f"{name}.{c.name}: {c.detail}" for c in gate.advisories)
        return found

    @property
    def exit_code(self) -> int:
        if self.status != "PASS":
            return 2
        return 1 if self.advisories and not self.advisories_ok else 0

    @property
    def failed_checks(self) -> list[tuple[str, Any]]:
        return [(name, c) for name, gate in self.gates.items() for c in gate.failures]

    @property
    def next_step(self) -> str:
        failed = self.failed_checks
        if failed:
            name, check = failed[0]
            return f"fix {name}.{check.name}: {check.fix}"
        if "timing" in self.gates and self.gates["timing"].details.get("not_timed"):
            return ("not timed: here the kernel runs in an interpreter; its correctness is what this machine can "
                    "check (`kgate gate`, `kgate parity`), its speed only the device can tell.")
        return {
            "gate": "early-kill gate passed: check parity at the full op-point with `kgate parity` next.",
            "lower": "lowered for the device at TINY and at the op-point: run `kgate gate` for parity and the "
            "firing audit.",
            "fit": "the points that fit can be compiled on the device: check each one's parity with `kgate gate` "
            "before timing it.",
            "sweep": "swept: check the point you keep alone (`kgate gate --kwarg NAME=VALUE`) and verify it; only "
            "device timings in a verify receipt can back a verdict.",
            "parity": "parity passed: this candidate is correct on the probed seeds and op-point.",
            "measure": "measured: read the interval, not the point estimate; only device timings in a verify "
            "receipt can back a verdict.",
            "calibrate": "calibrated: register a bar farther from 1.0 than the speedup this budget detects with 90% power, or it cannot be decided here.",
            "verify": "verified: the receipt holds this run; anyone can check it with `kgate verify-receipt`.",
            "flags": "four legs timed: cite the headline (gates.flags.headline), which holds the reference at its faster "
            "setting (for the flag class: the reference against itself flagged).",
        }.get(self.command, "done.")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "kgate_version": __version__,
            "command": self.command,
            "status": self.status,
            "exit_code": self.exit_code,
            **self.context,
            "gates": {name: gate.to_json() for name, gate in self.gates.items()},
            "advisories": self.advisories,
            "next_step": self.next_step,
        }


# Interpreter timings back no verdict: by default they are not taken at all.
NOT_TIMED_NOTE = "timing skipped: interpreter timings back no verdict (--time-interpreted times them anyway)"
NOT_TIMED = ("not timed: a kernel runs in an interpreter here (Pallas interpret mode, the Triton interpreter), whose timings say nothing "
             "about the device and can never back a verdict; the bar stays UNDECIDED. Pass --time-interpreted to "
             "time it anyway (capped short, labelled interpreted), or time it on the device.")


NOT_RUN = ("not timed: the candidate did not get through the checks (see the failing checks), so there is "
           "nothing to time; the bar stays UNDECIDED and the run FAILs on the checks.")


def not_timed_gates(bar: str | None, why: str = "interpreted") -> dict[str, GateResult]:
    """The timing gate (and the bar's, when one is registered) of a run that timed nothing:
    an interpreter it was not asked to time, or (`why="not run"`) a candidate that did not get
    through the checks. SKIPPED with the reason, the bar's outcome UNDECIDED."""
    reason = NOT_TIMED if why == "interpreted" else NOT_RUN
    gates = {"timing": GateResult("timing", (), {"not_timed": why}, reason)}
    if bar is not None:
        gates["bar"] = GateResult("bar", (), {"bar": bar, "outcome": "UNDECIDED", "interpreted": why == "interpreted"},
                                  f"not graded: no timings were taken ({why})")
    return gates
