"""Framework-neutral records the backends hand up to the gates (plain numpy and strings)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def leaves_sha256(leaves: Any) -> str:
    """sha256 over every leaf's dtype, shape and bytes: the one recipe for input and output hashes."""
    h = hashlib.sha256()
    for leaf in leaves:
        if isinstance(leaf, (bool, int, float, complex, str)):  # a Python scalar, hashed as what it is
            h.update(f"py-{type(leaf).__name__}:{leaf!r};".encode())
            continue
        a = np.asarray(leaf)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def floating_dtypes(leaves: Any) -> list[str]:
    """The distinct floating dtypes among array leaves (`bfloat16`, `float32`, ...): what a
    run's inputs were made in, which a family's graded dtype must match."""
    found = {str(np.asarray(leaf).dtype) for leaf in leaves
             if np.asarray(leaf).dtype.kind == "f" or str(np.asarray(leaf).dtype) in ("bfloat16", "float8_e4m3fn", "float8_e5m2")}
    return sorted(found)


class KernelFailure(Exception):
    """A program's failure, told by its innermost exception and, where known, the kernel's
    own source line. `unsupported`: the interpreter cannot run what the kernel does (a
    feature it lacks), which says nothing about the kernel: it cannot be evaluated here."""

    def __init__(self, text: str, unsupported: bool = False) -> None:
        super().__init__(text)
        self.kgate_text = text
        self.unsupported = unsupported


@dataclass(frozen=True)
class HostTree:
    """A pytree of arrays copied to the host: its structure, leaf paths and numpy leaves."""

    structure: str
    paths: tuple[str, ...]
    leaves: tuple[np.ndarray, ...]

    def sha256(self) -> str:
        return leaves_sha256(self.leaves)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"path": p, "shape": list(a.shape), "dtype": str(a.dtype)} for p, a in zip(self.paths, self.leaves)
        ]


@dataclass(frozen=True)
class DeviceInfo:
    platform: str  # "cpu", "tpu", "gpu"
    kind: str  # the device_kind string the framework reports
    interpreted: bool  # kernels run in an interpreter (Pallas interpret mode on the CPU)
    versions: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "kind": self.kind,
            "interpreted": self.interpreted,
            "versions": dict(self.versions),
        }


@dataclass(frozen=True)
class KernelSite:
    """One authored-kernel call site in the traced program."""

    site: str  # a stable path to the equation, e.g. "eqn3/eqn0"
    name: str  # the kernel function's name
    reaches_output: bool
    exact: bool  # False when reachability was decided conservatively (inside an unknown construct)

    def to_json(self) -> dict[str, Any]:
        return {"site": self.site, "name": self.name, "reaches_output": self.reaches_output, "exact": self.exact}


@dataclass(frozen=True)
class Ablation:
    """What happens to the workload's output when every kernel result is perturbed."""

    evaluated: bool
    reason: str  # why it was not evaluated, or "" when it was
    changed_elements: int = 0
    total_elements: int = 0
    moved_above: float = 0.0  # an element counts as moved only when it moves by more than this

    @property
    def influenced_fraction(self) -> float:
        return self.changed_elements / self.total_elements if self.total_elements else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "evaluated": self.evaluated,
            "reason": self.reason,
            "changed_elements": self.changed_elements,
            "total_elements": self.total_elements,
            "influenced_fraction": self.influenced_fraction,
            "moved_above": self.moved_above,
        }


def count_moved(moves: Any, moved_above: float) -> Ablation:
    """The ablation's verdict data: elements that moved by more than `moved_above`."""
    changed = sum(int((np.asarray(m) > moved_above).sum()) for m in moves)
    total = sum(int(np.asarray(m).size) for m in moves)
    return Ablation(True, "", changed, total, moved_above)


@dataclass(frozen=True)
class ProgramFacts:
    """What a backend saw of a compiled workload: traced program, compiled program, kernels."""

    platform: str
    kernel_sites: tuple[KernelSite, ...]
    program_text: str  # the traced program (jaxpr)
    compiled_text: str  # the optimized, compiled program (HLO)
    custom_call_targets: tuple[str, ...]
    ablation: Ablation
    host_callbacks: tuple[KernelSite, ...] = ()  # host (Python) callbacks in the program

    def to_json(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "kernel_sites": [s.to_json() for s in self.kernel_sites],
            "program_text": self.program_text,
            "compiled_text": self.compiled_text,
            "custom_call_targets": list(self.custom_call_targets),
            "ablation": self.ablation.to_json(),
            "host_callbacks": [s.to_json() for s in self.host_callbacks],
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> ProgramFacts:
        """Rebuild what a leg reported (plain JSON types only, checked as they are read)."""
        ab = data["ablation"]

        def sites(items: Any) -> tuple[KernelSite, ...]:
            return tuple(
                KernelSite(str(k["site"]), str(k["name"]), bool(k["reaches_output"]), bool(k["exact"])) for k in items
            )

        return ProgramFacts(
            platform=str(data["platform"]),
            kernel_sites=sites(data["kernel_sites"]),
            program_text=str(data["program_text"]),
            compiled_text=str(data["compiled_text"]),
            custom_call_targets=tuple(str(t) for t in data["custom_call_targets"]),
            ablation=Ablation(
                bool(ab["evaluated"]), str(ab["reason"]), int(ab["changed_elements"]), int(ab["total_elements"]),
                float(ab.get("moved_above", 0.0)),
            ),
            host_callbacks=sites(data.get("host_callbacks", [])),
        )


@dataclass(frozen=True)
class Footprint:
    """What one probe of an op-point holds, from shapes alone (nothing allocated): the
    inputs, the reference's outputs, and the oracle's (outputs recomputed in float32 or
    wider, from inputs upcast likewise)."""

    inputs: int  # bytes
    outputs: int
    oracle: int

    @property
    def per_probe(self) -> int:
        return self.inputs + self.outputs + self.oracle


def gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def refuse_if_too_big(footprint: Footprint, probes: int, available: int, where: str, values: dict[str, Any]) -> None:
    """Refuse, before anything is allocated, an op-point whose `probes` probes cannot fit in
    `available` bytes (with a quarter kept for the framework and the copies it makes)."""
    from kgate.errors import KgateError

    need = footprint.per_probe * probes
    if need <= available * 0.75:
        return
    from kgate.problem.oppoint import shown

    raise KgateError(
        f"the op-point ({shown(values)}) needs about {gib(need)} ({probes} probes x (inputs {gib(footprint.inputs)} + outputs "
        f"{gib(footprint.outputs)} + oracle {gib(footprint.oracle)})), and {where} has {gib(available)} available: "
        "it would not fit (nothing was allocated).",
        "choose a smaller op-point with --set, or run where the memory is.",
    )
