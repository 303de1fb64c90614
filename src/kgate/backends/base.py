"""Framework-neutral records the backends hand up to the gates (plain numpy and strings)."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import pickle
import re
import secrets
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgate import clock as kclock


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
class Skip:
    """An experiment not made here, and why (said as SKIPPED, never taken for a result)."""

    reason: str


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
    reads_inputs: bool = True  # an operand computed from the workload's inputs (not only from constants)

    def to_json(self) -> dict[str, Any]:
        return {"site": self.site, "name": self.name, "reaches_output": self.reaches_output, "exact": self.exact,
                "reads_inputs": self.reads_inputs}


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


def graded_differences(kernels: Sequence[str], launched: Sequence[Collection[str]], outputs_differ: bool) -> str:
    """What differs between a firing audit's run and the graded runs at its shapes: kernels it
    launched that some graded run did not (`launched`: each graded run's kernels), and outputs
    other than the graded run's on the same inputs; "" when nothing does."""
    found = []
    missing = sorted({name for run in launched for name in kernels if name not in run})
    if missing:
        runs = sum(1 for run in launched if not set(kernels) <= set(run))
        found.append(f"{', '.join(missing)} launched in the audit's run but not in {runs} of the {len(launched)} "
                     "graded runs")
    if outputs_differ:
        found.append("the audit's run gave other outputs than the graded run on the same inputs")
    return "; ".join(found)


def count_moved(moves: Any, moved_above: float) -> Ablation:
    """The ablation's verdict data: elements that moved by more than `moved_above`."""
    changed = sum(int((np.asarray(m) > moved_above).sum()) for m in moves)
    total = sum(int(np.asarray(m).size) for m in moves)
    return Ablation(True, "", changed, total, moved_above)


@dataclass(frozen=True)
class Arithmetic:
    """A count of the arithmetic a traced program does outside its kernels (or why it has none)."""

    outside: float  # operations done by plain array code (a dot's multiply-adds count two)
    kernel_calls: int  # kernel call sites
    unknown_loops: int = 0  # while loops with arithmetic and a trip count kgate cannot read (counted once)
    error: str = ""  # why the program could not be counted ("" when it was)
    inside: float | None = None  # the kernels' own: each body's operations times its grid; None: not counted

    def to_json(self) -> dict[str, Any]:
        return {"outside": self.outside, "kernel_calls": self.kernel_calls, "unknown_loops": self.unknown_loops,
                "error": self.error, "inside": self.inside}

    @staticmethod
    def from_json(data: Any) -> Arithmetic | None:
        if not isinstance(data, dict):
            return None
        inside = data.get("inside")
        return Arithmetic(float(data["outside"]), int(data["kernel_calls"]), int(data.get("unknown_loops", 0)),
                          str(data.get("error", "")), None if inside is None else float(inside))


@dataclass(frozen=True)
class ProgramPrint:
    """The reference's program at its op-point, taken before any candidate code exists: what
    every program later compiled for it, in a process that ran candidate code, must still be."""

    sha256: str | None  # the program as traced and lowered; None when it could not be taken
    why: str = ""  # why there is none
    compiled_sha256: str | None = None  # what the compiler made of it, where the backend can read that
    compiled: Any = None  # that compiled program: session 0 times it, so it is never compiled after the import


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
    kernel_kind: str = "pallas_call"  # what an authored kernel call is called here ("Triton launch")
    # Where the audit runs the candidate again (torch): "" when that run is the graded runs'
    # computation (the same kernels launched, the same outputs), else what differs; None where
    # the audit inspects the very program the graded runs ran (JAX: one traced program).
    graded_consistency: str | None = None
    # The digest of that run's outputs (torch; "" elsewhere): the parent holds it to the graded run's.
    audited_sha256: str = ""
    # The arithmetic the program does outside its kernels (JAX); None where the backend does not count it.
    arithmetic: Arithmetic | None = None
    # A program without kernels compiled with the operations that computed nothing on the probe
    # left out (JAX; what a rewrite is compared with the reference by), and those operations;
    # "" where none was left out (or the backend's `compiled_text` already leaves them out).
    essential_text: str = ""
    identities: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "arithmetic": self.arithmetic.to_json() if self.arithmetic is not None else None,
            "platform": self.platform,
            "kernel_kind": self.kernel_kind,
            "graded_consistency": self.graded_consistency,
            "audited_sha256": self.audited_sha256,
            "kernel_sites": [s.to_json() for s in self.kernel_sites],
            "program_text": self.program_text,
            "compiled_text": self.compiled_text,
            "custom_call_targets": list(self.custom_call_targets),
            "ablation": self.ablation.to_json(),
            "host_callbacks": [s.to_json() for s in self.host_callbacks],
            "essential_text": self.essential_text,
            "identities": list(self.identities),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> ProgramFacts:
        """Rebuild what a leg reported (plain JSON types only, checked as they are read)."""
        ab = data["ablation"]

        def sites(items: Any) -> tuple[KernelSite, ...]:
            return tuple(
                KernelSite(str(k["site"]), str(k["name"]), bool(k["reaches_output"]), bool(k["exact"]),
                           bool(k.get("reads_inputs", True))) for k in items
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
            kernel_kind=str(data.get("kernel_kind", "pallas_call")),
            graded_consistency=None if data.get("graded_consistency") is None else str(data["graded_consistency"]),
            audited_sha256=str(data.get("audited_sha256", "")),
            arithmetic=Arithmetic.from_json(data.get("arithmetic")),
            essential_text=str(data.get("essential_text", "")),
            identities=tuple(str(n) for n in data.get("identities", [])),
        )


@dataclass(frozen=True)
class LoweredKernel:
    """One kernel custom call in a program lowered for a device platform."""

    target: str  # the custom call's target, e.g. "tpu_custom_call"
    name: str  # the kernel's name (the `kernel_name` attribute), or "" where there is none
    location: str  # `file.py:LINE` of the kernel's pallas_call, where the lowering says it
    reaches_output: bool
    exact: bool  # False when decided conservatively (inside a loop or a branch)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "name": self.name, "location": self.location,
                "reaches_output": self.reaches_output, "exact": self.exact}


@dataclass(frozen=True)
class OutputCoverage:
    """One kernel output's blocks and how many of them its grid writes (from the index maps,
    at one op-point's shapes), or why that could not be told statically."""

    kernel: str
    output: int
    shape: tuple[int, ...]
    grid: tuple[int, ...]
    block: tuple[int, ...]
    blocks_total: int
    blocks_written: int
    first_unwritten: tuple[int, ...] | None = None  # the first element of the first block no step writes
    not_evaluated: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "output": self.output, "shape": list(self.shape), "grid": list(self.grid),
                "block": list(self.block), "blocks_total": self.blocks_total, "blocks_written": self.blocks_written,
                "first_unwritten": None if self.first_unwritten is None else list(self.first_unwritten),
                "not_evaluated": self.not_evaluated}

    @staticmethod
    def from_json(data: dict[str, Any]) -> OutputCoverage:
        first = data["first_unwritten"]
        return OutputCoverage(
            str(data["kernel"]), int(data["output"]), tuple(int(d) for d in data["shape"]),
            tuple(int(d) for d in data["grid"]), tuple(int(d) for d in data["block"]), int(data["blocks_total"]),
            int(data["blocks_written"]), None if first is None else tuple(int(d) for d in first),
            str(data["not_evaluated"]),
        )


@dataclass(frozen=True)
class KernelVmem:
    """A kernel's VMEM working set, estimated from its grid mapping at one op-point's shapes:
    every VMEM block times its buffers, and its VMEM scratch, each padded to whole tiles."""

    kernel: str
    total: int  # bytes
    parts: tuple[tuple[str, int], ...]  # (what, bytes), e.g. ("in 0 block [8, 1024] bfloat16 x2", 32768)
    declared_limit: int | None = None  # the kernel's own vmem_limit_bytes, when it sets one

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "total": self.total, "parts": [[what, n] for what, n in self.parts],
                "declared_limit": self.declared_limit}

    @staticmethod
    def from_json(data: dict[str, Any]) -> KernelVmem:
        limit = data["declared_limit"]
        return KernelVmem(str(data["kernel"]), int(data["total"]), tuple((str(w), int(n)) for w, n in data["parts"]),
                          None if limit is None else int(limit))


@dataclass(frozen=True)
class LoweredProgram:
    """The workload lowered for a device platform from abstract shapes (no device needed, no
    memory spent): the kernel custom calls it holds, or the lowering's error, or why it
    could not be tried here (`unavailable`)."""

    platform: str  # "tpu", "cuda"
    op_point: str  # "TINY", "op-point": which shapes were lowered
    shapes: str  # the inputs' shapes and dtypes, as lowered
    kernels: tuple[LoweredKernel, ...] = ()
    error: str = ""  # the lowering failed: its message
    where: str = ""  # the candidate's own source line the error points at, if any
    unavailable: str = ""  # lowering for this platform cannot be tried on this machine
    kernel_sites: int = 0  # pallas_call sites in the traced program at these shapes
    kernel_names: tuple[str, ...] = ()  # the distinct kernels it calls, by name
    coverage: tuple[OutputCoverage, ...] = ()  # what each kernel output's grid writes at these shapes
    vmem: tuple[KernelVmem, ...] = ()  # each kernel's VMEM working set at these shapes
    chip: str = ""  # the TPU generation the VMEM estimate is compared with ("" when none is known)
    chip_vmem: int | None = None  # that chip's VMEM per TensorCore, bytes (from jax's own TPU table)

    def to_json(self) -> dict[str, Any]:
        return {"platform": self.platform, "op_point": self.op_point, "shapes": self.shapes,
                "kernels": [k.to_json() for k in self.kernels], "error": self.error, "where": self.where,
                "unavailable": self.unavailable, "kernel_sites": self.kernel_sites,
                "kernel_names": list(self.kernel_names),
                "coverage": [c.to_json() for c in self.coverage], "vmem": [v.to_json() for v in self.vmem],
                "chip": self.chip, "chip_vmem": self.chip_vmem}

    @staticmethod
    def from_json(data: dict[str, Any]) -> LoweredProgram:
        """Rebuild what a leg reported (plain JSON types only, checked as they are read)."""
        return LoweredProgram(
            platform=str(data["platform"]), op_point=str(data["op_point"]), shapes=str(data["shapes"]),
            kernels=tuple(LoweredKernel(str(k["target"]), str(k["name"]), str(k["location"]), bool(k["reaches_output"]),
                                        bool(k["exact"])) for k in data["kernels"]),
            error=str(data["error"]), where=str(data["where"]), unavailable=str(data["unavailable"]),
            kernel_sites=int(data["kernel_sites"]),
            kernel_names=tuple(str(n) for n in data.get("kernel_names", [])),
            coverage=tuple(OutputCoverage.from_json(c) for c in data.get("coverage", [])),
            vmem=tuple(KernelVmem.from_json(v) for v in data.get("vmem", [])),
            chip=str(data.get("chip", "")),
            chip_vmem=None if data.get("chip_vmem") is None else int(data["chip_vmem"]),
        )


@dataclass(frozen=True)
class Footprint:
    """What one probe of an op-point holds, from shapes alone (nothing allocated): the
    inputs, the reference's outputs, and the oracle's (outputs recomputed in float32 or
    wider, from inputs upcast likewise)."""

    inputs: int  # bytes
    outputs: int
    oracle: int
    output_elements: int | None = None  # the reference's outputs' elements, all leaves (None: not known)

    @property
    def per_probe(self) -> int:
        return self.inputs + self.outputs + self.oracle


def gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def refuse_if_too_big(footprint: Footprint, probes: int, available: int, where: str, values: dict[str, Any],
                      shapes: Sequence[Footprint] = ()) -> int:
    """Refuse, before anything is allocated, `probes` probes at the op-point and one at each of
    `shapes` (probes at other sizes) that cannot fit in `available` bytes (with a quarter kept for
    the framework and the copies it makes); the bytes that remain when they fit."""
    from kgate.errors import KgateError

    need = footprint.per_probe * probes + sum(shape.per_probe for shape in shapes)
    if need <= available * 0.75:
        return int(available * 0.75) - need
    from kgate.problem.oppoint import shown

    others = f" + {len(shapes)} probes at other shapes ({gib(sum(s.per_probe for s in shapes))})" if shapes else ""
    raise KgateError(
        f"the op-point ({shown(values)}) needs about {gib(need)} ({probes} probes x (inputs {gib(footprint.inputs)} + outputs "
        f"{gib(footprint.outputs)} + oracle {gib(footprint.oracle)}){others}), and {where} has {gib(available)} available: "
        "it would not fit (nothing was allocated).",
        "choose a smaller op-point with --set, or run where the memory is.",
    )


def write_hand_over(host: Any, path: Path) -> str:
    """Write inputs already on the host (numpy arrays and Python scalars, in any nesting) to
    `path`; the file's sha256. Written only by a process that never imported candidate code;
    `read_hand_over` checks the file against that sha256 before reading it, so nothing else can
    slip a payload in."""
    data = pickle.dumps(host, protocol=pickle.HIGHEST_PROTOCOL)
    write_new(path, data)
    return hashlib.sha256(data).hexdigest()


def write_new(path: Path, data: bytes) -> None:
    """Write `data` to `path` as a fresh file renamed over it: never through a link or into a file
    that another process (the candidate's, as the same user) put there first, and a reader never
    sees half of it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)
    os.replace(temporary, path)


def read_hand_over(path: Path, sha256: str) -> Any:
    from kgate.errors import KgateError

    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise KgateError(
            f"the hand-over file of the inputs {path.name} changed after it was written.",
            "something in this process tree rewrote kgate's files: re-run; report a candidate that does this.",
        )
    return pickle.loads(data)


def edge_values(x32: np.ndarray, dtype_max: float, seed: int | None = None,
                dtype_tiny: float = float(np.finfo(np.float32).tiny),
                kinds: Collection[str] | None = None) -> list[tuple[str, np.ndarray]]:
    """The values random probes never hit, for one floating input (`x32`: its values in
    float32; `dtype_max`: its own dtype's largest finite value). Along every axis longer than
    one: `slices` has an extreme slice (the last index) and a zero slice (index 0, applied last
    so it stays all zero); `offset` is the whole input plus a large common offset, with a
    constant slice (the middle index); `negative` the same below zero, every value negative (a
    running maximum started at 0 instead of the first value, a clamp at zero, are wrong there). With `seed` (drawn for the run, never sent to the
    candidate's process), `spikes`: one extreme value in every row (along the last axis) at a position
    drawn from it, so no fixed place (first, last, middle) is where extremes always are; and
    `scales`: every row times its own power of two between 1/16 and 64, one drawn from each of as
    many equal bands of the exponent as there are rows, in a drawn order, so that the rows span
    magnitudes random draws of one distribution never leave (an approximation tuned to the range
    the seeds' values have, exact outside it, is wrong on the rows between), up to 64 where the
    extreme edge's cap allows (`SCALE_EXPONENTS`); `rows`: every row given a structure of its own
    that draws of one distribution never have (`structured_rows`: moved off zero by a drawn multiple
    of its own size, a drawn share of it zero, several outliers, sorted, or whole numbers); `columns`:
    the same few drawn columns standing out in every row (`outstanding_columns`); and `small`: every
    row times its own power of two from 2**-24 to 2**-6, drawn the same way, never so small that
    the input's typical value comes within 2**10 of its dtype's smallest normal (`dtype_tiny`;
    none for float16): rows whose squares and sums are far below anything a draw makes, where an
    epsilon, a clamp or a threshold the reference does not have decides the output; `large`, its
    mirror: every row times its own power of two from 2**6 (where `scales` stops) to 2**24, or up
    to where a row's sum of squares stays `LARGE_HEADROOM` below the dtype's largest value where
    that is less (none where that leaves less than `LARGE_OCTAVES`: float16), drawn the same way (an
    input of one row: in the top octave, `large_rows`), where a guard against overflow set too low
    (a clamp of a sum, an output saturated) decides the output; and `masked`:
    a drawn span of every row at -inf (`masked_rows`), as a mask leaves a logit; and `lowest`: the
    same with a finite value far below zero (`lowest_fill`: below every sentinel kernels write for
    -inf), a quarter of the rows filled whole, as a model's finite mask leaves them. With `kinds`, only those are made."""
    scale = float(np.max(np.abs(x32))) or 1.0
    typical = float(np.median(np.abs(x32))) or 1.0
    # 64x the input's largest magnitude: squares overflow float16 (past 256), sums lose
    # bfloat16's 8 bits, yet attention logits or a float32 reference stay far from overflow.
    huge = min(64.0 * scale, 4.0 * float(np.sqrt(dtype_max)))
    offset = 64.0 * scale
    axes = [a for a in range(x32.ndim) if x32.shape[a] > 1]  # a slice along a unit axis is the whole input
    variants: list[tuple[str, np.ndarray]] = []

    def wanted(kind: str) -> bool:  # each edge draws from its own generator: leaving one out moves no other
        return kinds is None or kind in kinds

    if wanted("slices") or wanted("offset") or wanted("negative"):
        slices, shifted, below = x32.copy(), x32 + np.float32(offset), x32 - np.float32(offset)
        for axis in axes:
            slices[(slice(None),) * axis + (x32.shape[axis] - 1,)] *= np.float32(huge / scale)
        for axis in axes:
            lead = (slice(None),) * axis
            slices[lead + (0,)] = 0.0
            shifted[lead + (x32.shape[axis] // 2,)] = np.float32(offset + typical)
            below[lead + (x32.shape[axis] // 2,)] = np.float32(-offset - typical)
        variants += [(kind, value) for kind, value in (("slices", slices), ("offset", shifted), ("negative", below))
                     if wanted(kind)]
    if seed is not None and x32.ndim >= 1 and x32.shape[-1] > 1:
        if wanted("spikes"):
            rng = np.random.default_rng(seed)
            spikes = x32.copy()
            rows = spikes.reshape(-1, x32.shape[-1])
            where = rng.integers(0, x32.shape[-1], size=rows.shape[0])
            signs = np.where(rng.random(rows.shape[0]) < 0.5, -1.0, 1.0).astype(np.float32)
            rows[np.arange(rows.shape[0]), where] = signs * np.float32(huge)
            variants.append(("spikes", spikes))
        if wanted("scales"):
            top = min(SCALE_EXPONENTS[1], max(SCALE_EXPONENTS[0] + 8.0, math.log2(max(huge / scale, 1.0))))
            variants.append(("scales", row_scaled(x32, np.random.default_rng([seed, 1]), huge / scale,
                                                  (SCALE_EXPONENTS[0], top))))
        if wanted("rows"):
            variants.append(("rows", structured_rows(x32, np.random.default_rng([seed, 4]), huge)))
        if wanted("columns") and x32.ndim >= 2 and x32.size // x32.shape[-1] > 1 and x32.shape[-1] >= 4:
            variants.append(("columns", outstanding_columns(x32, np.random.default_rng([seed, 5]), huge)))
        low = max(SMALL_EXPONENTS[0], math.ceil(math.log2(dtype_tiny * 2.0**10 / typical)))
        if wanted("small") and low < SMALL_EXPONENTS[1]:
            variants.append(("small", row_scaled(x32, np.random.default_rng([seed, 2]), 1.0, (low, SMALL_EXPONENTS[1]))))
        if wanted("large"):
            variants += large_rows(x32, dtype_max, np.random.default_rng([seed, 8]))
        if wanted("masked"):
            variants.append(("masked", masked_rows(x32, np.random.default_rng([seed, 3]))))
        if wanted("lowest"):
            variants.append(("lowest", masked_rows(x32, np.random.default_rng([seed, 6]), lowest_fill(dtype_max))))
    return variants


EDGE_KINDS = ("slices", "offset", "negative", "spikes", "scales", "rows", "columns", "small", "large", "masked", "lowest")


def edge_kinds(floating_inputs: int) -> tuple[str, ...] | None:
    """The edges made for a probe whose inputs hold `floating_inputs` floating arrays (None: every
    one). The `lowest` edge only where there is one: a logit's mask is its own input there, while
    among several (attention's queries, keys and values) a row far below zero is a value no honest
    kernel need survive (jax's own Pallas flash attention returns NaN for a query row at -1e10)."""
    return None if floating_inputs <= 1 else tuple(k for k in EDGE_KINDS if k != "lowest")

# The lowest edge's fill, a fraction of the dtype's lowest value: below every finite sentinel a kernel
# writes in place of -inf (-1e30 or -1e9 in float32 and bfloat16; -1e4 in float16), yet so far above
# the lowest value that 2**16 of them summed (an accumulation not yet normalized, a flash attention's
# over its keys) stay finite: a value input there is not a mask, and an honest kernel may sum it so
LOWEST_HEADROOM = 2.0**16
SENTINEL_BELOW = 1e31  # float32 and bfloat16: the fill is below -1e31 (float16's range has no such room)


def lowest_fill(dtype_max: float) -> float:
    """The `lowest` edge's value for a dtype whose largest finite value is `dtype_max` (in
    float32, the edges' own dtype): -dtype_max / 2**16 (-5.2e33 for float32 and bfloat16), or
    -dtype_max / 4 where that is not below -1e31 (-16376 for float16)."""
    top = min(float(dtype_max), float(np.finfo(np.float32).max))
    return -(top / LOWEST_HEADROOM if top / LOWEST_HEADROOM > SENTINEL_BELOW else top / 4.0)


# The edges that treat each row on its own, dealt among the rows of the probes at other shapes
ROW_EDGES = ("spikes", "scales", "columns", "small", "rows")
MIXED_PLAIN_SHARE = 4  # one row in this many stays as the reference drew it


def mixed_rows(x32: np.ndarray, dtype_max: float, seed: int,
               dtype_tiny: float = float(np.finfo(np.float32).tiny)) -> np.ndarray:
    """`x32` (a probe's input at a shape of its own: the odd or a drawn shape) with three rows in
    four (along the last axis; drawn from the run's `seed`, at most `STRUCTURED_ROWS_MAX`) taken
    from the edges that treat each row on its own (`ROW_EDGES`): a spike, a drawn scale, the same
    few columns standing out, a tiny scale, and each of the `rows` edge's structures (`ROW_STRUCTURES`)
    as a treatment of its own, dealt evenly in a drawn order; the other rows as the reference
    drew them. The edge battery runs at the first seed's shapes alone: a kernel whose arithmetic
    is wrong on such rows only at other sizes (switched on by the shape it sees) meets them here.
    The edges that fill rows with -inf, the dtype's lowest value or a common offset are left out:
    they make many references non-finite, and a probe at another shape whose reference is not
    finite is not graded."""
    out = x32.copy()
    if x32.ndim < 2 or x32.shape[-1] < 2 or x32.size // x32.shape[-1] < 2:
        return out
    rows = out.reshape(-1, x32.shape[-1])
    count = rows.shape[0]
    rng = np.random.default_rng([seed, 7, *x32.shape])
    chosen = np.sort(rng.permutation(count)[: min(count - count // MIXED_PLAIN_SHARE, STRUCTURED_ROWS_MAX)])
    sub = rows[chosen]
    made = dict(edge_values(sub, dtype_max, seed, dtype_tiny, kinds=ROW_EDGES[:-1]))
    treatments = [*made, *["rows"] * len(ROW_STRUCTURES)]  # each structure weighs as much as an edge
    dealt = np.array(treatments)[rng.permutation(len(chosen)) % len(treatments)]
    for kind, value in made.items():
        rows[chosen[dealt == kind]] = value[dealt == kind]
    structured = chosen[dealt == "rows"]
    if structured.size:
        rows[structured] = dict(edge_values(rows[structured], dtype_max, seed, dtype_tiny, kinds=("rows",)))["rows"]
    return out


def masked_rows(x32: np.ndarray, rng: np.random.Generator, fill: float = -np.inf) -> np.ndarray:
    """`x32` with a span of every row (along the last axis) set to -inf, as a mask does to a
    logit; never the whole row. Half the rows, drawn, mask a leading span of the largest power of
    two short of the row, then half that, and so on in turn (a whole leading block of every
    power-of-two tile, whatever the kernel's, where there are rows enough); the others a span drawn on a log scale from one element to all but one, at
    a drawn place. A kernel that carries a running maximum from -inf, unguarded, turns a row whose
    first block is all masked into NaN where the reference's answer is finite; where the reference
    itself is not finite, the probe is skipped.

    With a finite `fill` (the `lowest` edge: `lowest_fill`, far below zero as a mask a model
    writes as a finite value), a quarter of the rows (drawn; with one row, a drawn half of the
    runs) are filled whole, since a finite mask leaves the reference's answer finite there (a
    softmax of a row wholly masked is uniform): a maximum started at, or floored at, a finite
    sentinel above the fill (-1e30, -1e9), a mask recognised only as -inf, a clamp of the inputs
    to a range, are wrong on those rows."""
    out = x32.copy()
    rows = out.reshape(-1, x32.shape[-1])
    count, n = rows.shape
    order = rng.permutation(count)
    whole = order[: (count + 3) // 4 if count > 1 else int(rng.random() < 0.5)] if np.isfinite(fill) else order[:0]
    order = order[len(whole):]
    levels = int(math.log2(n - 1))  # the largest power of two short of the whole row
    lengths = np.maximum(np.minimum(np.exp2(rng.random(count) * math.log2(max(n - 1, 1))).astype(np.int64), n - 1), 1)
    starts = (rng.random(count) * (n - lengths + 1)).astype(np.int64)
    leading = order[: (len(order) + 1) // 2]
    lengths[leading] = 1 << (levels - np.arange(len(leading)) % (levels + 1))  # 2**levels <= n - 1, halved in turn
    starts[leading] = 0
    starts[whole], lengths[whole] = 0, n
    columns = np.arange(n)
    rows[(columns[None, :] >= starts[:, None]) & (columns[None, :] < (starts + lengths)[:, None])] = np.float32(fill)
    return out


SMALL_EXPONENTS = (-24, -6)  # the `small` edge's rows: times 2**e, e in [-24, -6)
# The `large` edge's rows: times 2**e, e from 6 to 24, or up to the largest that keeps a row's sum of
# squares LARGE_HEADROOM below the dtype's largest value where that is less; made only where that spans
# at least LARGE_OCTAVES. Not past 2**24: jax's own Pallas flash attention returns NaN from a query row
# 2**30 times the inputs' size (logits near 1e10), a size no honest kernel need survive.
LARGE_EXPONENTS = (6.0, 24.0)
LARGE_OCTAVES = 8.0
LARGE_HEADROOM = 2.0**8
SCALE_EXPONENTS = (-4.0, 6.0)  # the `scales` edge's rows: times 2**e, e in [-4, 6), never past the extreme edge's cap
# The `rows` edge: a row moved off zero by 2**-3 to 2**3 times its own root mean square; between one
# element and all but one of a row zero; two to a quarter of a row's elements 8 to 64 times its size.
SHIFT_EXPONENTS = (-3.0, 3.0)
OUTLIER_FACTORS = (8.0, 64.0)
ROW_STRUCTURES = ("shifted", "sparse", "outliers", "sorted", "levels")
STRUCTURED_ROWS_MAX = 4096  # rows given a structure, drawn (the rest as they are): seconds at any op-point
LEVELS = 4  # the `levels` rows: whole numbers 0 to LEVELS (counts, a 0/1 mask's sums)
COLUMN_COUNT = (2, 8)  # the `columns` edge: this many drawn columns (at most a quarter of a row) stand out in every row


def structured_rows(x32: np.ndarray, rng: np.random.Generator, most: float) -> np.ndarray:
    """`x32` with every row (along the last axis; at most `STRUCTURED_ROWS_MAX` drawn ones) given
    one of `ROW_STRUCTURES`, the rows dealt to them in a drawn order: `shifted`, the row plus a drawn multiple (a power of two from
    2**-3 to 2**3, drawn sign) of its own root mean square, so its mean is anywhere from a tenth
    of its size to all of it (draws centred on zero are near none of it, a common offset near
    all); `sparse`, a drawn share of its elements zero (one element to all but one, on a log
    scale, at drawn places: what a ReLU or padding leaves); `outliers`, two or more (up to a
    quarter of the row, on a log scale) of its elements, at drawn places, each 8 to 64 times the
    row's root mean square with a drawn sign (never past `most`, the extreme edge's magnitude);
    `sorted`, its values in ascending or descending order (drawn: what a top-k or top-p sampler
    hands a softmax); `levels`, whole numbers from 0 to `LEVELS` (its magnitudes rounded at the
    scale of its size: counts, a mask, quantized values; zeros among them). A kernel whose
    arithmetic changes with a row's statistics (its mean, its share of zeros, how many values
    stand out, its order, whether it is whole numbers), right on every row a random draw makes,
    is wrong on some row here."""
    out = x32.copy()
    n = x32.shape[-1]
    rows = out.reshape(-1, n)
    count = rows.shape[0]
    family = np.full(count, -1, dtype=np.int64)  # -1: a row left as drawn (past STRUCTURED_ROWS_MAX)
    # every structure in turn, from a drawn one, on rows in a drawn order: with fewer rows than
    # structures, which ones a run meets is drawn too
    chosen = rng.permutation(count)[:STRUCTURED_ROWS_MAX]
    family[chosen] = rng.permutation(len(ROW_STRUCTURES))[np.arange(len(chosen)) % len(ROW_STRUCTURES)]
    sizes = _row_sizes(rows)
    fallback = float(np.median(sizes[sizes > 0])) if np.any(sizes > 0) else 1.0
    sizes = np.where(sizes > 0, sizes, fallback)
    signs = np.where(rng.random(count) < 0.5, -1.0, 1.0)
    shifts = np.exp2(rng.uniform(*SHIFT_EXPONENTS, size=count)) * signs * sizes
    for r in np.sort(chosen):  # in row order: where rows are fewer than the cap, the draws of before
        row = rows[r]
        if family[r] == 0:
            row += np.float32(shifts[r])
        elif family[r] == 1 and n > 1:
            zeros = int(min(max(np.exp2(rng.random() * math.log2(n - 1)), 1), n - 1)) if n > 2 else 1
            row[rng.permutation(n)[:zeros]] = 0.0
        elif family[r] == 2 and n > 2:
            many = int(min(max(np.exp2(rng.random() * math.log2(max(n / 4, 2))), 2), n - 1))
            values = _outlier_values(rng, many, sizes[r], most)
            row[rng.permutation(n)[:many]] = values.astype(np.float32)
        elif family[r] == 3:
            row[:] = np.sort(row)[:: -1 if rng.random() < 0.5 else 1]
        elif family[r] == 4:
            row[:] = np.minimum(np.round(np.abs(row) / sizes[r] * LEVELS / 2), LEVELS)
    return out


def _row_sizes(rows: np.ndarray) -> np.ndarray:
    """Each row's root mean square, its non-finite values (a mask's -inf) counted as zero."""
    finite = np.where(np.isfinite(rows), rows.astype(np.float64), 0.0)
    return np.sqrt(np.mean(finite ** 2, axis=1))


def _outlier_values(rng: np.random.Generator, many: int, size: float, most: float) -> np.ndarray:
    """`many` values `OUTLIER_FACTORS` times `size` (drawn on a log scale), each with a drawn sign,
    never past `most` in magnitude."""
    factors = np.exp2(rng.uniform(math.log2(OUTLIER_FACTORS[0]), math.log2(OUTLIER_FACTORS[1]), size=many))
    return np.minimum(factors * size, most) * np.where(rng.random(many) < 0.5, -1.0, 1.0)


def outstanding_columns(x32: np.ndarray, rng: np.random.Generator, most: float) -> np.ndarray:
    """`x32` with the same drawn columns (along the last axis: `COLUMN_COUNT`, never more than a
    quarter of a row) 8 to 64 times the input's typical row size in every row, each column its
    own drawn factor and sign: the channels that stand out in every token of a model's activations.
    A kernel that treats columns standing out across a block of rows apart is wrong here, where the
    `rows` edge's outliers, at other places in every row, never line up."""
    out = x32.copy()
    n = x32.shape[-1]
    rows = out.reshape(-1, n)
    size = float(np.median(_row_sizes(rows))) or 1.0
    many = int(min(rng.integers(COLUMN_COUNT[0], COLUMN_COUNT[1] + 1), max(n // 4, 1)))
    columns = rng.permutation(n)[:many]
    values = _outlier_values(rng, many, size, most)
    jitter = np.clip(1.0 + 0.125 * rng.standard_normal((rows.shape[0], many)), 0.75, 1.0)  # never past `most`
    rows[:, columns] = values.astype(np.float32)[None, :] * jitter
    return out


def large_rows(x32: np.ndarray, dtype_max: float, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """The `large` edge of `x32` (`edge_values`), or none where the dtype leaves too few octaves
    (or the input has no finite value to scale by). Rows scaled as `row_scaled` does; an input of
    one row (a weight vector) by a drawn factor in the top octave, so that it reaches the range
    the edge is for on every run, not on the share of runs a draw over all of it would."""
    finite = np.abs(x32[np.isfinite(x32)])
    scale = float(finite.max()) if finite.size else 0.0
    if scale <= 0.0:
        return []
    top = min(LARGE_EXPONENTS[1], math.floor(math.log2(math.sqrt(dtype_max / (x32.shape[-1] * LARGE_HEADROOM)) / scale)))
    if top < LARGE_EXPONENTS[0] + LARGE_OCTAVES:
        return []
    one_row = x32.ndim < 2 or x32.size == x32.shape[-1]
    return [("large", row_scaled(x32, rng, 2.0**top, (top - 1.0 if one_row else LARGE_EXPONENTS[0], top)))]


def row_scaled(x32: np.ndarray, rng: np.random.Generator, most: float, span: tuple[float, float]) -> np.ndarray:
    """`x32` with every row (along the last axis) times 2**e, the exponents stratified over
    `span` (one uniform draw in each of n equal bands for n rows, shuffled), and no factor past
    `most` (the extreme edge's: nothing overflows that the extreme slice would not)."""
    n = int(np.prod(x32.shape[:-1], dtype=np.int64)) if x32.ndim > 1 else 1
    exponents = (np.arange(n) + rng.random(n)) / n * (span[1] - span[0]) + span[0]
    rng.shuffle(exponents)
    factors = np.minimum(np.exp2(exponents), max(most, 1.0)).astype(np.float32)
    return (x32.reshape(n, -1) * factors[:, None]).reshape(x32.shape)


def _isnan(a: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.inexact) or a.dtype.kind == "V" or "float" in str(a.dtype):
        return np.isnan(a.astype(np.float64))
    return np.zeros(a.shape, dtype=bool)


def output_moves(base: Sequence[Any], perturbed: Sequence[Sequence[Any]]) -> list[np.ndarray]:
    """Per output element, the most it moved under any perturbation (inf where NaN-ness changed)."""
    moves = [np.zeros(np.shape(b), dtype=np.float64) for b in base]
    for run in perturbed:
        for k, (b, p) in enumerate(zip(base, run)):
            b, p = np.asarray(b), np.asarray(p)
            nan_b, nan_p = _isnan(b), _isnan(p)
            with np.errstate(invalid="ignore", over="ignore"):
                d = np.abs(b.astype(np.float64) - p.astype(np.float64))
            d = np.where(nan_b & nan_p, 0.0, d)
            d = np.where(nan_b != nan_p, np.inf, d)
            d = np.where(np.isnan(d), np.inf, d)  # inf - inf: moved
            moves[k] = np.maximum(moves[k], d)
    return moves


def inputs_failed(problem: Any, exc: BaseException) -> Any:
    """The KgateError for a create_inputs (or get_inputs) that raised at this op-point."""
    from kgate.errors import KgateError, describe
    from kgate.problem.oppoint import shown

    return KgateError(
        f"{problem.path.name}'s {'get_inputs' if problem.model is not None else 'create_inputs'} failed at this "
        f"op-point ({shown(problem.config or {}) or 'as shipped'}): "
        f"{describe(exc)}",
        "fix the reference, or choose op-point values it accepts with --set (sizes are positive integers).",
    )


def cpu_flush_bytes() -> int:
    """4x the L2 size (or 2x the LLC when it is at most 64 MiB), from sysfs; 16 MiB if unknown."""
    sizes: dict[int, int] = {}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip().upper()
            mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1)
            sizes[level] = max(sizes.get(level, 0), int(text.rstrip("KMG")) * mult)
        except (OSError, ValueError):
            continue
    if not sizes:
        return 16 * 2**20
    last = max(sizes)
    if sizes[last] <= 64 * 2**20:
        return 2 * sizes[last]
    return 4 * sizes.get(2, 4 * 2**20)


def timed_take(take: Callable[[Callable[[], HostTree]], None] | None, out: Any,
               to_host: Callable[[Any], HostTree]) -> None:
    """Hand a timed call's output to `take` (a reader of it on the host: it reads it, or not) the
    moment the call's window closed, with the garbage collector held: before the call lets go of
    anything (an older output, its inputs), whose release runs what the candidate hung on it (a
    weakref callback, a finalizer), and before a collection can run its garbage's finalizers, any of
    which could finish an answer the clock never saw. Called with what the call already holds:
    nothing is allocated between the window's end and the hold."""
    if take is None:
        return
    held = kclock.hold_collector()
    try:
        take(lambda: to_host(out))
    finally:
        kclock.release_collector(held)


def cpu_cache_flusher() -> tuple[Any, str]:
    """On the CPU, the private caches overwritten with a host buffer of `cpu_flush_bytes()`
    before every timed call (untimed), and what it does."""
    size = cpu_flush_bytes()
    host = np.zeros(size // 8)

    def flush_cpu() -> None:
        np.add(host, 1.0, out=host)

    return flush_cpu, f"cache flush: a {size // 2**20} MiB host buffer rewritten before every timed call"


def host_memory() -> tuple[int, str] | None:
    """The host's MemAvailable, in bytes, and where it is; None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024, "this machine"
    except OSError:
        pass
    return None


ADDRESS_SLACK = 2**30  # address space that costs no memory: thread stacks and malloc arenas reserved while capped


@contextlib.contextmanager
def host_allocations_capped(what: Any) -> Iterator[None]:
    """Run the block with this process's address space capped at its present size plus the
    host's free memory (and ADDRESS_SLACK): code that allocates for real while kgate only sizes
    an op-point (numpy inside create_inputs runs even under `jax.eval_shape`) gets a MemoryError,
    which is refused as too big for the machine (`allocation_refused`), instead of filling memory
    until the kernel kills the process. Where a limit at least as tight is already set (`ulimit
    -v`), that one stands, and a MemoryError under it is refused the same way. Nothing is capped
    where the limits or the sizes cannot be read."""
    import resource

    from kgate.errors import describe

    free = host_memory()
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        size = next(int(line.split()[1]) * 1024 for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith("VmSize:"))
    except (OSError, ValueError, StopIteration, resource.error):
        free = None
    capped = False
    if free is not None:
        limit = size + free[0] + ADDRESS_SLACK
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or soft > limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
            capped = True
    refused = ""
    try:
        yield
    except MemoryError as exc:
        if free is None:
            raise
        refused = describe(exc)  # the text alone: the frames it holds (and their arrays) go with it
    finally:
        if capped:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    if refused:
        raise allocation_refused(what, free, refused) from None


def config_state_key(problem: Any, dtype: str | None) -> tuple[Any, ...]:
    """What a problem's inputs and entry, traced for their shapes, depend on: the module, its
    entry, the dtype, and CONFIG's values as they are now."""
    return (id(problem.module), problem.entry_name, dtype, repr(sorted((problem.config or {}).items())))


def sized_once(refused: dict[tuple[Any, ...], tuple[str, str]], problem: Any, dtype: str | None,
               make: Callable[[], Any]) -> Any:
    """`make()` (create_inputs traced or made on a meta device: its numpy code allocates for real)
    with the host's allocations capped; a refusal is remembered in `refused` per CONFIG state (the
    override check, the sizing and the odd shape ask for the same one) as its words only, so no
    frame of create_inputs stays alive, and given again without running it."""
    from kgate.errors import KgateError

    key = config_state_key(problem, dtype)
    if key in refused:
        raise KgateError(*refused[key])
    try:
        with host_allocations_capped(problem):
            return make()
    except KgateError as exc:
        refused[key] = (exc.problem, exc.fix)
        raise


def allocation_refused(problem: Any, free: tuple[int, str], why: str) -> Any:
    """The KgateError for inputs that asked for more memory than the host has free while sized."""
    from kgate.errors import KgateError
    from kgate.problem.oppoint import shown

    return KgateError(
        f"{problem.path.name}'s {'get_inputs' if problem.model is not None else 'create_inputs'} asked for more memory "
        f"than {free[1]} has free ({free[0] / 2**30:.1f} GiB) at this op-point "
        f"({shown(problem.config or {}) or 'as shipped'}), while kgate was only sizing it: {why}; what it "
        "had made was let go, and nothing else was allocated.",
        "choose a smaller op-point with --set, or run where more memory is free.",
    )


def fits(footprint: Footprint | None, available: tuple[int, str] | None, probes: int, values: dict[str, Any]) -> bool:
    """Refuse (`refuse_if_too_big`) what cannot fit, and an op-point whose outputs hold no
    element (nothing would be compared: every candidate would agree); False when the footprint
    is unknown (nothing was checked)."""
    if footprint is not None and footprint.output_elements == 0:
        from kgate.errors import KgateError
        from kgate.problem.oppoint import shown

        zero = [k for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool) and v == 0]
        raise KgateError(
            f"the op-point ({shown(values)}) makes outputs with no elements: nothing would be computed or compared "
            f"(nothing was allocated){'; sizes at 0: ' + ', '.join(zero) if zero else ''}.",
            "give every size a positive value (--set, or the module's CONFIG / TINY).",
        )
    if footprint is not None and available is not None:
        refuse_if_too_big(footprint, probes, available[0], available[1], values)
    return footprint is not None


# -- compiled programs shared between reference legs (kgate.verify.refcache) -----------------
_PROGRAM_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,200}")


def valid_program_name(name: object) -> bool:
    """A compilation-cache key usable as a file name (jax's are `jit_NAME-HEX`)."""
    return isinstance(name, str) and bool(_PROGRAM_NAME.fullmatch(name)) and not name.startswith(".")


def program_file(folder: Path, name: str, digest: str) -> Path:
    """Where a compiled program lives: named by its digest too, so two legs that compiled one
    name to different bytes never overwrite each other's file."""
    return folder / f"{name}.{digest[:32]}"
