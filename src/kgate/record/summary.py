"""What a kgate report or receipt says about one candidate, in the few numbers a ledger row
and a candidate commit carry: parity, author-side p50, speedup vs the reference."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.problem.module import file_sha256
from kgate.record.workspace import NATIVE


def _num(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return None


@dataclass(frozen=True)
class ReportSummary:
    path: Path
    sha256: str
    command: str  # verify | gate | parity | measure
    is_receipt: bool
    mode: str | None  # screen | full, for receipts
    status: str
    parity: str | None  # PASS | FAIL, None when the run did not check parity
    max_abs: float | None
    max_rel: float | None
    p50_ms: float | None  # the candidate's
    speedup: tuple[float, float, float] | None  # estimate, low, high (reference p50 / candidate p50)
    interpreted: bool
    candidate_sha256: str | None
    reference_sha256: str | None
    first_failure: str | None
    input_dtypes: tuple[str, ...] = ()  # the floating dtypes the run's inputs were made in (older runs: none)
    backend: str | None = None  # the framework the run's checks ran with (older runs: not recorded)
    bar: str | None = None  # the bar the run graded (measure --bar, verify --bar), if any
    bar_outcome: str | None = None  # MET | MISSED | UNDECIDED
    kwargs: dict[str, Any] = field(default_factory=dict)  # the candidate entry's keyword arguments (--kwarg, a sweep point)
    dtype: str | None = None  # the --dtype the run asked create_inputs for (None: the module's own default)
    made_inputs: bool = False  # the run recorded its inputs' dtypes (gate, parity, measure, verify, flags; not lower, fit)

    @classmethod
    def load(cls, path: Path) -> ReportSummary:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise KgateError(f"receipt {path} does not exist.", "pass the -o report or the receipt kgate wrote.") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise KgateError(f"{path} is not JSON ({exc}).", "pass a report or receipt written by kgate.") from None
        if not isinstance(data, dict) or not isinstance(data.get("gates"), dict) or "status" not in data:
            raise KgateError(f"{path} is not a kgate report or receipt (no gates/status).", "pass one written by kgate.")
        return cls.from_json(data, path, file_sha256(path))

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path, sha256: str) -> ReportSummary:
        gates = data["gates"]
        is_receipt = data.get("kind") == "verify"
        modules = data.get("modules", {}) if is_receipt else data
        parity = gates.get("parity")
        worst: dict[str, float] = {}
        if isinstance(parity, dict):
            for probe in parity.get("probes", []):
                for out in probe.get("outputs", []):
                    for key in ("max_abs", "max_rel"):
                        value = _num(out.get("candidate", {}).get(key))
                        if value is not None and (key not in worst or math.isnan(value) or value > worst[key]):
                            worst[key] = value  # NaN wins: a non-finite output is the worst error there is
        bar = gates.get("bar") if isinstance(gates.get("bar"), dict) else {}
        timing = gates.get("timing")
        head = (gates.get("flags") or {}).get("headline") if isinstance(gates.get("flags"), dict) else None
        p50 = speedup = None
        if isinstance(head, dict) and isinstance(head.get("speedup"), dict):  # kgate flags: the number a claim cites
            timing = {"candidate": {"p50_ms": head.get("p50_ms")}, "speedup": head["speedup"]}
        if isinstance(timing, dict) and isinstance(timing.get("speedup"), dict):
            p50 = _num(timing.get("candidate", {}).get("p50_ms"))
            sp = timing["speedup"]
            est, low, high = (_num(sp.get(k)) for k in ("estimate", "low", "high"))
            if est is not None and low is not None and high is not None:
                speedup = (est, low, high)
        failure = next(
            (f"{name}.{c.get('name')}" for name, g in gates.items() if isinstance(g, dict)
             for c in g.get("checks", []) if c.get("status") == "FAIL"),
            None,
        )
        return cls(
            path=path,
            sha256=sha256,
            command=str(data.get("kind") if is_receipt else data.get("command", "?")),
            is_receipt=is_receipt,
            mode=data.get("mode"),
            status=str(data["status"]),
            parity=parity.get("status") if isinstance(parity, dict) else None,
            max_abs=worst.get("max_abs"),
            max_rel=worst.get("max_rel"),
            p50_ms=p50,
            speedup=speedup,
            interpreted=bool(data.get("interpreted", True)),
            candidate_sha256=(modules.get("candidate") or {}).get("sha256"),
            reference_sha256=(modules.get("reference") or {}).get("sha256"),
            first_failure=failure,
            input_dtypes=tuple(str(d) for d in data.get("input_dtypes") or ()),
            backend=str(data["backend"]) if data.get("backend") else None,
            bar=str(bar["bar"]) if "bar" in bar else None,
            bar_outcome=str(bar["outcome"]) if "outcome" in bar else None,
            kwargs=dict((modules.get("candidate") or {}).get("kwargs") or {}),
            dtype=str(data["dtype"]) if data.get("dtype") else None,
            made_inputs=isinstance(data.get("input_dtypes"), list),
        )

    def check_backend(self, family: Any) -> None:
        """A run on another framework than the family's checks run with is not evidence for it
        (a reference that imports both, run with the other --backend). A run older than the
        record of its backend ran on the one its reference's imports chose."""
        from kgate.backends import backend_for

        expected = backend_for(family.worktree / family.reference, family.forced_backend)
        if self.backend is not None and self.backend != expected:
            raise KgateError(f"{self.path} ran on the {self.backend} backend; the family's checks run on {expected}.",
                             f"re-run it under the family's terms (--family {family.slug}); for checks on "
                             f"{self.backend}, make a family with `kgate family new --backend {self.backend}`.")

    def check_dtype(self, graded: str) -> None:
        """A run in another dtype than the family grades is not evidence for it. Its floating
        inputs show the dtype. A run that made inputs and none floating (integers only: there is
        no dtype to run them in, and such a module often takes no --dtype) stands unless it asked
        for another dtype. A run that records no inputs (lower, fit) must have asked for the
        graded one (--dtype, as --family does), or nothing shows it ran in it. Where the family
        grades the dtype its reference makes (NATIVE), a run must have asked for none."""
        if graded == NATIVE:
            if self.dtype is not None:
                raise KgateError(f"{self.path} asked for --dtype {self.dtype}; the family grades the dtype its reference "
                                 "makes (it takes no dtype).",
                                 "re-run it under the family's terms (--family SLUG), without --dtype.")
            return
        other = [d for d in self.input_dtypes if d != graded]
        if other:
            raise KgateError(
                f"{self.path} ran with {', '.join(self.input_dtypes)} inputs; the family grades {graded}.",
                f"re-run it with --dtype {graded} (or create the family with the dtype you grade in).",
            )
        if self.input_dtypes or self.dtype == graded or (self.made_inputs and self.dtype is None):
            return
        if self.dtype is not None:
            problem = f"{self.path} asked for --dtype {self.dtype}; the family grades {graded}."
        else:
            problem = (f"{self.path} records no inputs' dtypes and gave no --dtype: nothing shows it ran in the "
                       f"{graded} the family grades.")
        raise KgateError(problem, f"re-run it under the family's terms (--family SLUG) or with --dtype {graded}.")

    # -- the cells and the commit summary --------------------------------------------

    @property
    def parity_cell(self) -> str:
        if self.parity is None:
            return "not checked"
        return f"{self.parity} {_g(self.max_abs)} / {_g(self.max_rel)}"

    @property
    def p50_cell(self) -> str:
        if self.p50_ms is None:
            return "not timed (interpreted)" if self.interpreted else "not timed"
        return f"{self.p50_ms:.4g}" + self.mark

    @property
    def mark(self) -> str:
        """What follows a number timed in an interpreter, wherever it is written."""
        return " (interpreted)" if self.interpreted else ""

    @property
    def speedup_cell(self) -> str:
        if self.speedup is None:
            return "not timed"
        est, low, high = self.speedup
        return f"{est:.3f}x [{low:.3f}, {high:.3f}]" + self.mark

    def summary(self) -> str:
        """The number part of a candidate commit message."""
        parts = []
        if self.p50_ms is not None:
            parts.append(f"p50 {self.p50_ms:.4g} ms{self.mark}")
        elif self.command in ("measure", "verify") and self.interpreted:  # a kernel in an interpreter is not timed
            parts.append("not timed (interpreted)")
        if self.speedup is not None:
            parts.append(f"{self.speedup[0]:.3f}x vs naive [{self.speedup[1]:.3f}, {self.speedup[2]:.3f}]"
                         + self.mark)
        if self.parity is not None:
            parts.append(f"parity {self.parity} (max abs {_g(self.max_abs)})")
        if self.status not in ("PASS",):
            parts.append(f"{self.command} {self.status}" + (f" at {self.first_failure}" if self.first_failure else ""))
        return ", ".join(parts) or f"{self.command} {self.status}"


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.2e}"
