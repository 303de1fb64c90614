"""`kgate verify --mode screen`: every device leg in a fresh process, one report, one receipt.

This module never imports a framework. It validates the request, takes the chip lock,
runs each leg (`python -m kgate.verify.leg`) with a verifier-owned compilation cache and
only the chosen chip visible, combines the legs' gates, and writes a sealed receipt
atomically at the very end (an interrupted verify leaves no receipt).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgate import __version__
from kgate.errors import KgateError
from kgate.gates.bar import parse_bar
from kgate.gates.common import Check, GateResult
from kgate.gates.firing import FiringSpec, parse_classes
from kgate.gates.parity import ParitySpec
from kgate.problem.module import file_sha256
from kgate.verify import lock as chip_lock
from kgate.verify import receipt as receipts
from kgate.verify.outcome import Report

CACHE_ENV = "KGATE_VERIFIER_CACHE"


@dataclass(frozen=True)
class VerifyRequest:
    reference: Path
    candidate: Path
    entry: str = "workload"
    klass: str = "kernel-authored"
    seeds: tuple[int, ...] = (42, 43)
    dtype: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    parity: str = "floor"
    firing: FiringSpec = FiringSpec()
    bar: str | None = None
    budget_s: float = 20.0
    sessions: int = 4
    chip: int = 0
    lock_dir: Path | None = None
    receipt: Path | None = None
    argv: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for role, path in (("reference", self.reference), ("candidate", self.candidate)):
            if not Path(path).is_file():
                raise KgateError(f"{role} module {path} does not exist.", f"pass an existing .py file as --{role}.")
        parse_classes(self.klass)
        ParitySpec.parse(self.parity)
        if self.bar is not None:
            parse_bar(self.bar)
        if self.receipt is not None and not Path(self.receipt).parent.is_dir():
            raise KgateError(f"the folder of --receipt {self.receipt} does not exist.", "create it first.")
        chip_lock.lock_path(self.chip, self.lock_dir)  # validates chip and lock folder


def verifier_cache() -> Path:
    """The verifier's own compilation cache (never the author's)."""
    base = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "kgate" / f"verifier-xla-{__version__}")
    base.mkdir(parents=True, exist_ok=True)
    return base


def _git(path: Path) -> dict[str, Any]:
    """HEAD and dirtiness of the git repository holding `path`, if any."""
    folder = path if path.is_dir() else path.parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "-C", str(folder), "status", "--porcelain"], capture_output=True, text=True, check=True
            ).stdout.strip()
        )
        return {"git_sha": sha, "dirty": dirty}
    except (subprocess.CalledProcessError, FileNotFoundError):
        return {"git_sha": None, "dirty": None}


def _run_leg(kind: str, payload: Mapping[str, Any], request: VerifyRequest, say: Callable[[str], None]) -> dict[str, Any]:
    env = {
        **os.environ,
        **chip_lock.visibility_env(request.chip),
        "JAX_COMPILATION_CACHE_DIR": str(verifier_cache()),
        "PYTHONUNBUFFERED": "1",
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(payload, handle)
        request_file = handle.name
    try:
        path = chip_lock.lock_path(request.chip, request.lock_dir)
        with chip_lock.hold(path, say=say, what=f"kgate verify {kind} leg"):
            say(f"running the {kind} leg in a fresh process")
            proc = subprocess.run(
                [sys.executable, "-m", "kgate.verify.leg", kind, request_file], capture_output=True, text=True, env=env
            )
    finally:
        Path(request_file).unlink(missing_ok=True)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"status": "CRASHED", "returncode": proc.returncode, "error": {"problem": " | ".join(tail)}}


def _gate_from_json(name: str, data: Mapping[str, Any]) -> GateResult:
    checks = tuple(Check(c["name"], c["status"], c["detail"], c.get("fix", "")) for c in data.get("checks", []))
    details = {k: v for k, v in data.items() if k not in ("status", "checks", "reason")}
    return GateResult(name, checks, details, data.get("reason", "") if data.get("status") == "SKIPPED" else "")


def _crashed(name: str, leg: Mapping[str, Any]) -> GateResult:
    error = leg.get("error", {})
    return GateResult(
        name,
        (
            Check(
                "evaluated",
                "FAIL",
                f"the {name} leg did not produce a result: {error.get('problem', leg.get('status'))}",
                error.get("fix", "run the leg's command by hand (`kgate gate` / `kgate measure`) to see the error."),
            ),
        ),
    )


def run_verify(request: VerifyRequest, say: Callable[[str], None] = lambda _: None) -> tuple[Report, dict[str, Any]]:
    """Run the screen legs; return the combined report and the sealed receipt."""
    common = {
        "reference": str(Path(request.reference).resolve()),
        "candidate": str(Path(request.candidate).resolve()),
        "entry": request.entry,
        "class": request.klass,
        "seeds": list(request.seeds),
        "dtype": request.dtype,
        "overrides": dict(request.overrides),
    }
    checks_leg = _run_leg(
        "checks", {**common, "parity": request.parity, "firing": request.firing.to_json()}, request, say
    )
    measure_leg = _run_leg(
        "measure", {**common, "bar": request.bar, "budget_s": request.budget_s, "sessions": request.sessions}, request, say
    )
    gates: dict[str, GateResult] = {}
    integrity: list[Check] = []
    for leg_name, leg in (("checks", checks_leg), ("measure", measure_leg)):
        if "gates" not in leg:
            gates[leg_name] = _crashed(leg_name, leg)
            continue
        for name, data in leg["gates"].items():
            if name == "integrity":
                integrity += [Check(f"{leg_name}.{c.name}", c.status, c.detail, c.fix) for c in _gate_from_json(name, data).checks]
            else:
                gates[name] = _gate_from_json(name, data)
    gates = {"integrity": GateResult("integrity", tuple(integrity)), **gates}
    source = checks_leg if "gates" in checks_leg else measure_leg
    context = {
        "mode": "screen",
        "class": request.klass,
        "reference": source.get("reference", {"path": common["reference"]}),
        "candidate": source.get("candidate", {"path": common["candidate"]}),
        "op_point": source.get("op_point", {}),
        "seeds": list(request.seeds),
        "device": source.get("device", {}),
        "interpreted": bool(checks_leg.get("interpreted", True) or measure_leg.get("interpreted", True)),
        "chip": request.chip,
    }
    report = Report("verify", gates, context)
    receipt = receipts.seal(_receipt_body(request, report, checks_leg, measure_leg))
    return report, receipt


def _receipt_body(
    request: VerifyRequest, report: Report, checks_leg: Mapping[str, Any], measure_leg: Mapping[str, Any]
) -> dict[str, Any]:
    data = report.to_json()
    ref, cand = Path(request.reference).resolve(), Path(request.candidate).resolve()
    kgate_src = Path(__file__).resolve()
    return {
        "schema": receipts.SCHEMA,
        "schema_version": receipts.SCHEMA_VERSION,
        "kind": "verify",
        "mode": "screen",
        "kgate": {"version": __version__, **_git(kgate_src)},
        "candidate_repo": _git(cand),
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": list(request.argv),
        "host": platform.node(),
        "chip": request.chip,
        "device": data.get("device", {}),
        "interpreted": data.get("interpreted", True),
        "modules": {
            "reference": {"path": str(ref), "sha256": file_sha256(ref)},
            "candidate": {"path": str(cand), "sha256": file_sha256(cand), "entry": request.entry},
        },
        "class": request.klass,
        "dtype": request.dtype,
        "overrides": dict(request.overrides),
        "op_point": data.get("op_point", {}),
        "seeds": list(request.seeds),
        "inputs": checks_leg.get("input_sha256", {}),
        "outputs": checks_leg.get("output_sha256", {}),
        "timed_inputs": measure_leg.get("input_sha256"),
        "parity_spec": request.parity,
        "bar": request.bar,
        "gates": data["gates"],
        "status": data["status"],
    }


def default_receipt_path(candidate: Path) -> Path:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path.cwd() / f"kgate-receipt-{Path(candidate).stem}-{stamp}.json"
