"""`kgate verify-receipt`: is this receipt what kgate wrote, and does it still hold?

OK         the hash matches, every status follows from the recorded numbers, and the
           module sources (and regenerated inputs) match, where present
TAMPERED   the hash does not match, or a status does not follow from the numbers
MISMATCH   the receipt is intact but the modules or their inputs have changed since
INCOMPLETE the receipt lacks required fields (not a kgate verify receipt, or truncated)
ANOMALY    the receipt is intact, but in the run it records candidate code patched kgate, the
           array library or the reference, timed another answer than the one checked, or
           was timed below the physical floor: nothing that run reported holds
UNVERIFIABLE the receipt was made by a method this kgate does not know (a newer kgate's):
           "cannot re-derive here", never called tampered
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kgate.errors import KgateError
from kgate.problem.module import file_sha256
from kgate.verify import receipt as receipts
from kgate.verify import spawn

# Integrity checks that say candidate code changed kgate, the array library or the reference.
# A FAIL of any of these means nothing the run reported holds: candidate code patched what it relied on,
# the timed answer was not the checked one, a time fell below the physical floor, or a process
# it started worked beside the timed rounds.
PATCH_CHECKS = frozenset({"process_untouched", "reference_untouched", "timer_untouched", "parent_clock",
                          "same_answer_as_checked", "program_as_checked", "physically_possible", "processes_quiet",
                          "parent_processes", "parent_scheduling", "changes_reported", "reference_undisturbed"})

ReceiptStatus = Literal["OK", "TAMPERED", "MISMATCH", "INCOMPLETE", "ANOMALY", "UNVERIFIABLE"]


@dataclass(frozen=True)
class ReceiptCheck:
    path: Path
    status: ReceiptStatus
    findings: tuple[str, ...]
    checked: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "OK" else 2

    def to_json(self) -> dict[str, Any]:
        return {
            "command": "verify-receipt",
            "receipt": str(self.path),
            "status": self.status,
            "exit_code": self.exit_code,
            "findings": list(self.findings),
            "checked": self.checked,
        }


def load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise KgateError(f"receipt {path} does not exist.", "pass the path of a receipt written by kgate verify.")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KgateError(f"receipt {path} is not valid JSON ({exc}).", "pass an unedited kgate receipt.") from exc
    if not isinstance(data, dict):
        raise KgateError(f"receipt {path} is not a JSON object.", "pass a kgate receipt.")
    return data


def _regenerated_inputs(receipt: dict[str, Any]) -> dict[str, str]:
    payload = {
        "reference": receipt["modules"]["reference"]["path"],
        "reference_entry": receipt["modules"]["reference"].get("entry", "workload"),
        "seeds": receipt["seeds"],
        "dtype": receipt.get("dtype"),
        "overrides": receipt.get("overrides", {}),
        **({"backend": receipt["backend"]} if receipt.get("backend") else {}),  # as the run had it (`--backend`)
    }
    with tempfile.TemporaryDirectory(prefix="kgate-receipt-") as scratch:
        result = spawn.run("inputs", payload, Path(scratch))
    return dict(result.get("inputs", {}))


def check(path: Path, *, regenerate: bool = True) -> ReceiptCheck:
    return check_data(load(path), path, regenerate=regenerate)


def check_data(receipt: dict[str, Any], path: Path, *, regenerate: bool = True, sources: bool = True) -> ReceiptCheck:
    """`check` on a receipt already read; `sources=False` checks only the hash and the statuses
    (for a receipt of an earlier candidate, whose module file has since moved on)."""
    missing = [k for k in receipts.REQUIRED if k not in receipt]
    if missing or receipt.get("schema") != receipts.SCHEMA:
        report = _report_instead(receipt)
        if report:
            return ReceiptCheck(path, "INCOMPLETE", report)
        return ReceiptCheck(path, "INCOMPLETE", tuple(f"missing field: {k}" for k in missing) or ("not a kgate receipt",))
    checked: dict[str, Any] = {"hash": True}
    if receipts.digest(receipt) != receipt[receipts.HASH_FIELD]:
        return ReceiptCheck(path, "TAMPERED", ("the self-hash does not match the contents: the receipt was edited",), checked)
    try:
        problems = receipts.rederive(receipt)
    except receipts.CannotRederive as exc:
        return ReceiptCheck(path, "UNVERIFIABLE", (f"cannot re-derive here: {exc}",), checked)
    checked["statuses"] = True
    if problems:
        return ReceiptCheck(path, "TAMPERED", tuple(problems), checked)
    patched = [
        f"integrity.{c.get('name')}: {c.get('detail')}"
        for c in receipt["gates"].get("integrity", {}).get("checks", [])
        if c.get("status") == "FAIL" and str(c.get("name", "")).rsplit(".", 1)[-1] in PATCH_CHECKS
    ]
    if patched:
        return ReceiptCheck(path, "ANOMALY", ("what this run reported does not hold", *patched), checked)
    if not sources:
        return ReceiptCheck(path, "OK", ("module sources not checked",), checked)
    findings: list[str] = []
    mismatch = False
    sources_present = True
    for role, module in receipt["modules"].items():
        source = Path(module["path"])
        if not source.is_file():
            sources_present = False
            findings.append(f"{role} module {source} not present: its hash and inputs were not checked")
            continue
        if file_sha256(source) != module["sha256"]:
            mismatch = True
            findings.append(f"{role} module {source} changed since the receipt (sha256 differs)")
    checked["sources"] = sources_present
    if regenerate and sources_present and not mismatch:
        regenerated = _regenerated_inputs(receipt)
        checked["inputs"] = bool(regenerated)
        if not regenerated:
            findings.append("the inputs could not be regenerated (the reference failed to run)")
            mismatch = True
        for seed, expected in receipt["inputs"].items():
            if regenerated and regenerated.get(seed) != expected:
                mismatch = True
                findings.append(f"seed {seed}: regenerated inputs hash {regenerated.get(seed)}, receipt says {expected}")
    return ReceiptCheck(path, "MISMATCH" if mismatch else "OK", tuple(findings), checked)


def _report_instead(document: dict[str, Any]) -> tuple[str, ...]:
    """When `document` is one of kgate's JSON reports (what --json prints, --report keeps),
    say so and point at the receipt it names; () for anything else."""
    command = document.get("command")
    if not isinstance(command, str) or not isinstance(document.get("gates"), dict) or "schema_version" in document:
        return ()
    said = [f"this is `kgate {command}`'s JSON report, not a receipt: a report is not sealed and cannot be checked"]
    named = document.get("receipt")
    if isinstance(named, dict) and named.get("path"):
        said.append(f"its receipt is {named['path']} (sha256 {str(named.get('sha256', ''))[:16]}...): "
                    f"run `kgate verify-receipt {named['path']}`")
    elif command != "verify":
        said.append("only `kgate verify` writes receipts (`-o FILE`)")
    return tuple(said)
