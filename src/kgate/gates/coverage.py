"""The coverage battery: perturb one slice of an input; the mapped slice of the output must
move and everything else must stay bit-identical. Slices that do not move are skipped
work (rows, heads, blocks the kernel never computed); slices that leak are named too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgate.errors import KgateError
from kgate.gates.common import Check, GateResult

GRAMMAR = "IN:AXIS->OUT:AXIS[,...], e.g. 0:1->0:1 (input 0's axis 1 maps to output 0's axis 1)"
_MAP = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*->\s*(\d+)\s*:\s*(\d+)\s*$")
MAX_PROBES = 16


@dataclass(frozen=True)
class AxisMap:
    input_index: int
    input_axis: int
    output_index: int
    output_axis: int

    def text(self) -> str:
        return f"{self.input_index}:{self.input_axis}->{self.output_index}:{self.output_axis}"


def parse_spec(text: str) -> tuple[AxisMap, ...]:
    maps = []
    for part in text.split(","):
        m = _MAP.match(part)
        if not m:
            raise KgateError(f"coverage spec {part.strip()!r} is not understood.", f"write it as {GRAMMAR}.")
        maps.append(AxisMap(*(int(g) for g in m.groups())))
    return tuple(maps)


def probe_indices(size: int) -> list[int]:
    """Every index when at most MAX_PROBES; else MAX_PROBES of them: evenly spaced from the
    first to the last, and the middle."""
    if size <= MAX_PROBES:
        return list(range(size))
    picks = np.linspace(0, size - 1, MAX_PROBES).round().astype(int).tolist()
    middle = size // 2
    picks[min(range(MAX_PROBES), key=lambda i: abs(picks[i] - middle))] = middle  # the nearest one moves there
    return sorted(set(picks))


@dataclass(frozen=True)
class SliceProbe:
    index: int
    moved_inside: int  # output elements in the mapped slice that changed
    changed_outside: int  # output elements outside the mapped slice that changed


def slice_effect(base: np.ndarray, perturbed: np.ndarray, axis: int, index: int) -> SliceProbe:
    a, b = np.asarray(base), np.asarray(perturbed)
    differ = ~((a == b) | (np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))))
    inside = np.take(differ, index, axis=axis)
    return SliceProbe(index, int(inside.sum()), int(differ.sum() - inside.sum()))


def evaluate(results: Sequence[tuple[AxisMap, Sequence[SliceProbe]]], errors: Sequence[str] = ()) -> GateResult:
    checks: list[Check] = [Check("coverage", "FAIL", e, f"fix the spec: {GRAMMAR}.") for e in errors]
    details: dict[str, Any] = {"maps": []}
    for axis_map, probes in results:
        skipped = [p.index for p in probes if p.moved_inside == 0]
        leaking = [p.index for p in probes if p.changed_outside > 0]
        details["maps"].append(
            {
                "map": axis_map.text(),
                "probed": [p.index for p in probes],
                "skipped": skipped,
                "leaking": leaking,
            }
        )
        name = f"coverage[{axis_map.text()}]"
        if skipped:
            checks.append(
                Check(
                    name,
                    "FAIL",
                    f"output {axis_map.output_index} axis {axis_map.output_axis}: slices {skipped} do not move when "
                    f"input {axis_map.input_index} axis {axis_map.input_axis} is perturbed there: skipped work",
                    "compute every row/head/block: check the grid and the index maps.",
                )
            )
        if leaking:
            checks.append(
                Check(
                    name,
                    "FAIL",
                    f"perturbing input slices {leaking} also changed output outside the mapped slice",
                    "the spec says these slices are independent: fix the spec or the kernel's indexing.",
                )
            )
        if not skipped and not leaking:
            checks.append(
                Check(name, "PASS", f"all {len(probes)} probed slices move, and nothing outside them does")
            )
    return GateResult("coverage", tuple(checks), details)
