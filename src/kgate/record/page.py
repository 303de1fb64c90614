"""An experiment page: YAML front-matter (JSON-valued scalars, one level of nesting) and
`## ` sections, parsed and rendered back byte for byte, with the candidate plan and the
candidate ledger as structured views."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal

from kgate.errors import KgateError

PARAGRAPHS: Final = ("Hypothesis", "Mechanism", "Predicted signal", "Falsification criterion")
INTERVENTION_CLASSES: Final = ("refute", "flag", "xla-rewrite", "kernel-authored")
PLAN: Final = "Candidate plan"
LEDGER: Final = "Candidate ledger"
LEDGER_COLUMNS: Final = (
    "candidate", "class", "committed SHA", "parity (max abs / max rel)", "p50 ms (author-side)", "vs naive", "receipt",
    "why kept/rejected",
)
THIS_COMMIT: Final = "this commit"  # a row's SHA cell in the commit that adds the row (a commit cannot name itself)
_PLAIN_KEYS: Final = ("status",)
_PLAN_LINE = re.compile(r"^- \[([ x-])\] (cand[0-9]+): (.*)$")
_LOADED = re.compile(r"^loaded: \[(.*)\]$")

PlanState = Literal["open", "done", "closed"]
_STATES: Final[dict[str, PlanState]] = {" ": "open", "x": "done", "-": "closed"}
_MARKS: Final = {v: k for k, v in _STATES.items()}


@dataclass(frozen=True)
class PlanEntry:
    cand: str
    state: PlanState  # open `[ ]`, done `[x]` (executed or abandoned with a reason), closed `[-]` (pivoted)
    text: str  # everything after `candN: `

    def line(self) -> str:
        return f"- [{_MARKS[self.state]}] {self.cand}: {self.text}"


RECEIPT_CELL: Final = re.compile(r"^(receipts/[^ ]+\.json) \(sha256 ([0-9a-f]{12,64})\)$")  # a ledger row's receipt cell


@dataclass(frozen=True)
class LedgerRow:
    candidate: str
    klass: str
    sha: str
    parity: str
    p50_ms: str
    vs_naive: str
    receipt: str
    why: str

    @property
    def cells(self) -> tuple[str, ...]:
        return (self.candidate, self.klass, self.sha, self.parity, self.p50_ms, self.vs_naive, self.receipt, self.why)

    def line(self) -> str:
        return "| " + " | ".join(_cell(c) for c in self.cells) + " |"

    def to_json(self) -> dict[str, str]:
        return dict(zip(("candidate", "class", "sha", "parity", "p50_ms", "vs_naive", "receipt", "why"), self.cells))


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "—"


def _split_row(line: str) -> list[str]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


@dataclass(frozen=True)
class Ledger:
    loaded: tuple[str, ...] | None  # None: the first line is not a `loaded: [...]` attestation
    rows: tuple[LedgerRow, ...]

    def row(self, cand: str) -> LedgerRow | None:
        return next((r for r in self.rows if r.candidate == cand), None)

    def lines(self) -> list[str]:
        out = [f"loaded: [{', '.join(self.loaded)}]", ""] if self.loaded is not None else []
        if self.rows:
            out += ["| " + " | ".join(LEDGER_COLUMNS) + " |", "|" + "---|" * len(LEDGER_COLUMNS)]
            out += [r.line() for r in self.rows]
        return out


def format_front(front: dict[str, Any]) -> list[str]:
    def scalar(key: str, value: Any) -> str:
        if key in _PLAIN_KEYS and isinstance(value, str) and re.fullmatch(r"[a-z_]+", value):
            return value
        return json.dumps(value, ensure_ascii=False)  # a JSON scalar is a valid YAML scalar

    lines = ["---"]
    for key, value in front.items():
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines += [f"  {k}: {scalar(k, v)}" for k, v in value.items()]
        else:
            lines.append(f"{key}: {scalar(key, value)}")
    return lines + ["---"]


def _parse_scalar(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip()  # a plain YAML scalar (`status: filed`)


@dataclass(frozen=True)
class Page:
    path: Path
    front: dict[str, Any]
    preamble: tuple[str, ...]  # lines between the front-matter and the first `## ` heading
    sections: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def parse(cls, text: str, path: Path) -> Page:
        lines = text.split("\n")
        if not lines or lines[0] != "---" or "---" not in lines[1:]:
            raise KgateError(f"{path} has no front-matter block (--- ... ---).", "restore the page from its stub commit.")
        end = lines.index("---", 1)
        front: dict[str, Any] = {}
        parent: str | None = None
        for n, line in enumerate(lines[1:end], start=2):
            nested = re.match(r"^  ([A-Za-z_][\w-]*): (.*)$", line)
            top = re.match(r"^([A-Za-z_][\w-]*):(?: (.*))?$", line)
            if nested and parent is not None:
                front[parent][nested.group(1)] = _parse_scalar(nested.group(2))
            elif top and top.group(2) is None:
                parent = top.group(1)
                front[parent] = {}
            elif top:
                parent = None
                front[top.group(1)] = _parse_scalar(top.group(2))
            else:
                raise KgateError(f"{path}:{n}: front-matter line {line!r} is not understood.", "write `key: value`.")
        preamble: list[str] = []
        sections: list[tuple[str, list[str]]] = []
        for line in lines[end + 1:]:
            heading = re.match(r"^## (.+?)\s*$", line)
            if heading:
                sections.append((heading.group(1), []))
            elif sections:
                sections[-1][1].append(line)
            else:
                preamble.append(line)
        return cls(path, front, tuple(preamble), tuple((h, tuple(b)) for h, b in sections))

    @classmethod
    def load(cls, path: Path) -> Page:
        if not path.is_file():
            raise KgateError(f"experiment page {path} does not exist.", "run `kgate stub` to create it.")
        return cls.parse(path.read_text(), path)

    def text(self) -> str:
        out = format_front(self.front) + list(self.preamble)
        for heading, body in self.sections:
            out += [f"## {heading}", *body]
        return "\n".join(out)

    # -- sections ---------------------------------------------------------------------

    def section(self, heading: str) -> str | None:
        for h, body in self.sections:
            if h.lower() == heading.lower():
                return "\n".join(body).strip()
        return None

    def with_section(self, heading: str, content: list[str]) -> Page:
        """Replace a section's content (or append the section), keeping one blank line around it."""
        body = ("", *content, "")
        found = [h for h, _ in self.sections if h.lower() == heading.lower()]
        if found:
            sections = tuple((h, body if h == found[0] else b) for h, b in self.sections)
        else:
            sections = self.sections + ((heading, body),)
        return replace(self, sections=sections)

    def with_front(self, **changes: Any) -> Page:
        return replace(self, front={**self.front, **changes})

    # -- plan and ledger ----------------------------------------------------------------

    @property
    def plan(self) -> tuple[PlanEntry, ...]:
        text = self.section(PLAN) or ""
        return tuple(
            PlanEntry(m.group(2), _STATES[m.group(1)], m.group(3))
            for line in text.splitlines() if (m := _PLAN_LINE.match(line.strip()))
        )

    def with_plan(self, entries: tuple[PlanEntry, ...]) -> Page:
        return self.with_section(PLAN, [e.line() for e in entries])

    @property
    def ledger(self) -> Ledger:
        text = self.section(LEDGER)
        if text is None:
            return Ledger(None, ())
        lines = [ln for ln in text.splitlines() if ln.strip()]
        loaded = None
        if lines and (m := _LOADED.match(lines[0].strip())):
            loaded = tuple(s.strip() for s in m.group(1).split(",") if s.strip())
        table = [ln for ln in lines if ln.strip().startswith("|")]
        rows = []
        for line in table[2:]:  # header and separator first
            cells = _split_row(line)
            if len(cells) != len(LEDGER_COLUMNS):
                raise KgateError(
                    f"{self.path}: ledger row {line!r} has {len(cells)} cells, not {len(LEDGER_COLUMNS)}.",
                    "restore the row from the branch history; ledger rows are written by `kgate cand`.",
                )
            rows.append(LedgerRow(*cells))
        return Ledger(loaded, tuple(rows))

    def with_ledger(self, ledger: Ledger) -> Page:
        return self.with_section(LEDGER, ledger.lines())
