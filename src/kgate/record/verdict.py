"""The verdict rules: a pure function from the verification receipt's gate outcomes and
the lint caps to `supported | refuted | inconclusive | invalid`, with every rule that fired.

Anyone can re-run them: the inputs are fields of a sealed receipt and lint findings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

Verdict = Literal["supported", "refuted", "inconclusive", "invalid", "blocked"]  # blocked: filed by --blocked
Consequence = Literal["advisory", "cap: inconclusive", "invalid"]
GateOutcome = Literal["PASS", "FAIL", "SKIPPED"] | None  # None: the gate is not in the receipt
BarOutcome = Literal["MET", "MISSED", "UNDECIDED"] | None
VERDICTS: Final = ("supported", "refuted", "inconclusive", "invalid")
_RANK: Final[dict[str, int]] = {"invalid": 0, "inconclusive": 1, "refuted": 2, "supported": 2}


@dataclass(frozen=True)
class Evidence:
    """What the rules read from a `verify --mode full` receipt."""

    parity: GateOutcome
    firing: GateOutcome
    integrity: GateOutcome
    bar: BarOutcome
    interpreted: bool
    reference_changed: bool  # the receipt's reference sha256 differs from the family's pin

    @classmethod
    def from_receipt(cls, receipt: dict[str, Any], pinned_reference_sha256: str) -> Evidence:
        gates = receipt.get("gates", {})

        def status(name: str) -> Any:
            gate = gates.get(name)
            return gate.get("status") if isinstance(gate, dict) else None

        bar = gates.get("bar")
        reference = receipt.get("modules", {}).get("reference", {}).get("sha256")
        return cls(
            parity=status("parity"),
            firing=status("firing"),
            integrity=status("integrity"),
            bar=bar.get("outcome") if isinstance(bar, dict) else None,
            interpreted=bool(receipt.get("interpreted", True)),
            reference_changed=reference != pinned_reference_sha256,
        )


@dataclass(frozen=True)
class Cap:
    code: str
    consequence: Consequence
    detail: str


@dataclass(frozen=True)
class Rule:
    code: str
    text: str
    verdict: Verdict


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    from_evidence: Verdict  # before the lint caps
    fired: tuple[Rule, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "from_evidence": self.from_evidence,
            "rules": [{"code": r.code, "text": r.text, "verdict": r.verdict} for r in self.fired],
        }


def _lower(a: Verdict, b: Verdict) -> Verdict:
    return a if _RANK[a] <= _RANK[b] else b


def decide(evidence: Evidence, caps: Sequence[Cap] = ()) -> Decision:
    """The evidence rules first (the first that applies decides), then the caps (the lower verdict wins)."""
    fired: list[Rule] = []
    if evidence.integrity != "PASS":
        rule = Rule("V1", f"integrity {evidence.integrity or 'not evaluated'}: the measurement cannot be trusted", "invalid")
    elif evidence.reference_changed:
        rule = Rule("V2", "the receipt's reference module differs from the family's pinned sha256", "invalid")
    elif evidence.parity != "PASS" or evidence.firing != "PASS":
        failed = [f"{name} {outcome or 'not evaluated'}" for name, outcome in
                  (("parity", evidence.parity), ("firing", evidence.firing)) if outcome != "PASS"]
        rule = Rule("V3", f"{', '.join(failed)}: a wrong or non-firing kernel refutes nothing", "inconclusive")
    elif evidence.interpreted:
        rule = Rule("V4", "the timings were interpreted: they can never support or refute a device claim", "inconclusive")
    elif evidence.bar == "MET":
        rule = Rule("V5", "bar MET on device timings by a correct, firing candidate", "supported")
    elif evidence.bar == "MISSED":
        rule = Rule("V6", "bar MISSED, confidently, by a correct, firing candidate", "refuted")
    else:
        rule = Rule("V7", f"bar {evidence.bar or 'not evaluated'}: the interval straddles the bar or no bar was graded",
                    "inconclusive")
    fired.append(rule)
    verdict = rule.verdict
    for cap in caps:
        if cap.consequence == "advisory":
            continue
        capped: Verdict = "invalid" if cap.consequence == "invalid" else "inconclusive"
        fired.append(Rule(cap.code, f"lint {cap.code} ({cap.consequence}): {cap.detail}", capped))
        verdict = _lower(verdict, capped)
    return Decision(verdict, rule.verdict, tuple(fired))
