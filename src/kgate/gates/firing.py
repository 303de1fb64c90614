"""The firing audit: is the mechanism the author claims what actually ran?

kernel-authored: a kernel call is in the traced program, every kernel's result reaches
the workload's outputs (static dataflow), perturbing the kernels' results moves the
outputs (ablation), and on an accelerator the compiled program holds the matching
custom call. xla-rewrite / flag: the candidate's optimized program must differ from the
reference's. Optional declarative assertions come from the stub or the command line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kgate.backends.base import Ablation, Arithmetic, KernelSite, ProgramFacts, graded_differences
from kgate.errors import KgateError, article
from kgate.gates.common import Check, GateResult

InterventionClass = Literal["kernel-authored", "xla-rewrite", "flag"]
CLASSES: tuple[str, ...] = ("kernel-authored", "xla-rewrite", "flag")

# Exact custom-call targets of authored kernels per platform. Matched whole: the bare
# word "triton" also names XLA's own fusions and must never count as a kernel.
KERNEL_TARGETS: dict[str, frozenset[str]] = {
    "tpu": frozenset({"tpu_custom_call"}),
    "gpu": frozenset({"__gpu$xla.gpu.triton", "mosaic_gpu_v2", "mosaic_gpu"}),
}

# What the lowering gate lowers a kernel-authored candidate for: auto (the platform the
# kernels' compiler parameters name, else this machine's accelerator, else TPU), a platform,
# or none (not lowered; said in the report).
LOWER_FOR: tuple[str, ...] = ("auto", "tpu", "cuda", "none")
# The TPU generations jax's table (pltpu.ChipVersion) names; a device kind ("TPU v5 lite") is taken too.
TPU_GENERATIONS: tuple[str, ...] = ("v2", "v3", "v4i", "v4", "v5e", "v5p", "v6e", "7", "7x", "8i")

_SHAPE = re.compile(r"^(?:([a-z]+[0-9]*)\s*)?\[\s*(\d+(?:\s*,\s*\d+)*)?\s*\]$")


@dataclass(frozen=True)
class FiringSpec:
    """Declarative assertions on the candidate's programs."""

    expect_hlo: tuple[str, ...] = ()
    forbid_hlo: tuple[str, ...] = ()
    kernel_calls: int | None = None
    forbid_shapes: tuple[str, ...] = ()
    kernel_share: float | None = None  # declared: the kernels own at least this share of the output
    lower_for: str = "auto"  # the device platform the lowering gate lowers for ("auto": the kernels' own)
    chip_kind: str | None = None  # the TPU generation VMEM estimates are compared with (v5e, v6e, ...)

    def __post_init__(self) -> None:
        if self.chip_kind is not None and self.chip_kind not in TPU_GENERATIONS and not self.chip_kind.startswith("TPU"):
            raise KgateError(f"--chip-kind {self.chip_kind!r} is not a TPU generation.",
                             f"use one of: {', '.join(TPU_GENERATIONS)}, or the device kind a TPU reports "
                             "(e.g. 'TPU v5 lite').")
        if self.lower_for not in LOWER_FOR:
            raise KgateError(f"--lower-for {self.lower_for!r} is not a lowering target.",
                             f"use one of: {', '.join(LOWER_FOR)} (auto: the platform the kernels are written for).")
        for pattern in (*self.expect_hlo, *self.forbid_hlo):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise KgateError(
                    f"HLO pattern {pattern!r} is not a valid regular expression ({exc}).",
                    "quote it and escape regex metacharacters, e.g. 'custom-call\\(' .",
                ) from exc
        for shape in self.forbid_shapes:
            if not _SHAPE.match(shape.strip()):
                raise KgateError(
                    f"forbidden shape {shape!r} is not an HLO shape.",
                    "write it as DTYPE[D0,D1,...] or [D0,D1,...], e.g. f32[8,4096,4096].",
                )
        if self.kernel_calls is not None and self.kernel_calls < 0:
            raise KgateError("--kernel-calls must be >= 0.", "give the exact number of kernel calls expected.")
        if self.kernel_share is not None and not 0.0 < self.kernel_share <= 1.0:
            raise KgateError(
                f"--kernel-share {self.kernel_share:g} is not a share of the output.",
                "give the fraction of output elements the kernels compute, in (0, 1], e.g. 0.5.",
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "expect_hlo": list(self.expect_hlo),
            "forbid_hlo": list(self.forbid_hlo),
            "kernel_calls": self.kernel_calls,
            "forbid_shapes": list(self.forbid_shapes),
            "kernel_share": self.kernel_share,
            "lower_for": self.lower_for,
            "chip_kind": self.chip_kind,
        }


def shape_pattern(shape: str) -> re.Pattern[str]:
    m = _SHAPE.match(shape.strip())
    assert m is not None
    dtype, dims = m.group(1), (m.group(2) or "")
    dims = ",".join(d.strip() for d in dims.split(",")) if dims else ""
    prefix = re.escape(dtype) if dtype else r"[a-z]+[0-9]*"
    return re.compile(rf"(?<![\w]){prefix}\[{re.escape(dims)}\]")


_METADATA = re.compile(r",?\s*(metadata|frontend_attributes)=\{[^{}]*\}")
_MODULE_LINE = re.compile(r"^HloModule\s+\S+", re.MULTILINE)
_DEBUG_TABLES = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\n(?:.+\n?)*", re.MULTILINE)
_NAME = re.compile(r"%?[A-Za-z_][\w.\-]*(?=[\s,)=:]|$)")


def normalize_hlo(text: str) -> str:
    """Optimized HLO with names, metadata and the module name canonicalized away."""
    text = _MODULE_LINE.sub("HloModule m", text)
    text = _DEBUG_TABLES.sub("", text)  # source locations: they differ for identical programs
    text = _METADATA.sub("", text)
    names: dict[str, str] = {}
    out_lines = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("//"):
            continue

        def rename(m: re.Match[str]) -> str:
            token = m.group(0)
            if not token.startswith("%") and "." not in token:
                return token  # opcodes, types, keywords
            return names.setdefault(token, f"%v{len(names)}")

        out_lines.append(_NAME.sub(rename, line))
    return "\n".join(out_lines)


def _kernel_count(facts: ProgramFacts) -> int:
    targets = KERNEL_TARGETS.get(facts.platform)
    if targets is None or facts.kernel_kind == "Triton launch":
        return len(facts.kernel_sites)
    return sum(1 for t in facts.custom_call_targets if t in targets)


def _assertions(spec: FiringSpec, facts: ProgramFacts) -> list[Check]:
    checks: list[Check] = []
    for pattern in spec.expect_hlo:
        found = re.search(pattern, facts.compiled_text, re.MULTILINE) is not None
        checks.append(
            Check(
                "expect_hlo",
                "PASS" if found else "FAIL",
                f"pattern {pattern!r} {'found' if found else 'not found'} in the compiled program",
                "" if found else "the compiled program lacks what the stub expects: check the lowering.",
            )
        )
    for pattern in spec.forbid_hlo:
        m = re.search(pattern, facts.compiled_text, re.MULTILINE)
        checks.append(
            Check(
                "forbid_hlo",
                "FAIL" if m else "PASS",
                f"forbidden pattern {pattern!r} " + (f"found: {m.group(0)[:80]!r}" if m else "absent"),
                "remove what produces the forbidden op from the candidate." if m else "",
            )
        )
    if spec.kernel_calls is not None:
        n = _kernel_count(facts)
        where = ("custom calls in the compiled program" if facts.platform in KERNEL_TARGETS
                 and facts.kernel_kind != "Triton launch" else "kernel calls in the traced program")
        checks.append(
            Check(
                "kernel_calls",
                "PASS" if n == spec.kernel_calls else "FAIL",
                f"{n} {where}, expected exactly {spec.kernel_calls}",
                "" if n == spec.kernel_calls else "the number of kernel launches differs from the stub's claim.",
            )
        )
    for shape in spec.forbid_shapes:
        pat = shape_pattern(shape)
        m = pat.search(facts.compiled_text) or pat.search(facts.program_text)
        checks.append(
            Check(
                "forbid_shape",
                "FAIL" if m else "PASS",
                f"shape {shape} " + (f"materialized ({m.group(0)})" if m else "never materialized"),
                "the candidate materializes a tensor the mechanism should avoid." if m else "",
            )
        )
    return checks


@dataclass(frozen=True)
class Transplant:
    """The output with every kernel's results taken from the run on another probe, graded twice:
    against that probe's answer (`carries`) and against this probe's own (`stays`). `strict`: an
    output that is neither FAILs, or is an advisory where the kernels' share is declared (torch,
    whose elementwise work outside the kernels is not counted); else it passes (JAX: an epilogue
    or a residual reads this probe's inputs, and `kernel_does_the_arithmetic` bounds the work done
    beside the kernels)."""

    carries: bool
    stays: bool
    strict: bool = True
    skipped: str = ""  # not made, and why (kernels two runs do not line up: other steps or branches taken)


def _transplant_check(transplant: Transplant | str | None, spec: FiringSpec) -> list[Check]:
    """Whether the kernels' results carry the answer: with every launch's writes taken from the
    run on another probe, the output must be that probe's answer. An output computed beside the
    kernels from the inputs, or one that cancels the kernels' results, stays the first probe's:
    that FAILs whatever share is declared (the kernels' results then change nothing that counts)."""
    name = "kernel_carries_the_answer"
    if transplant is None:
        return []
    if isinstance(transplant, str):  # a check that cannot be evaluated FAILs
        return [Check(name, "FAIL", f"could not be evaluated: {transplant}",
                      "launch the same kernels, in the same order, on every probe of the same shapes.")]
    if transplant.skipped:
        return [Check(name, "SKIPPED", f"not made: {transplant.skipped} (the ablation, the stand-ins and the "
                      "arithmetic count stand alone)")]
    if transplant.carries:
        return [Check(name, "PASS",
                      "with every launch's writes taken from the run on another probe, the output is that probe's "
                      "answer: the kernels' results carry it")]
    if transplant.stays:
        return [Check(
            name, "FAIL",
            "with every kernel's results taken from the run on another probe, the output is still this probe's own "
            "answer: it is computed beside the kernels from the inputs (what the kernels return is a constant, "
            "cancelled, or replaced wherever it is near an answer computed elsewhere)",
            "compute the answer in the kernels and return what they compute; a kernel whose result the output "
            "does not follow proves nothing.")]
    if not transplant.strict:  # JAX: what is done beside the kernels is counted (kernel_does_the_arithmetic)
        return [Check(name, "PASS",
                      "with every kernel's results taken from the run on another probe, the output is neither probe's "
                      "answer: it combines the kernels' results with values computed beside them from this probe's "
                      "inputs (an epilogue, a residual, a weight), whose arithmetic kernel_does_the_arithmetic bounds")]
    declared = spec.kernel_share is not None and spec.kernel_share < 1
    return [Check(
        name, "ADVISORY" if declared else "FAIL",
        "with every launch's writes taken from the run on another probe, the output is not that probe's answer: "
        "it is computed beside the kernels from the inputs, or it cancels what the kernels wrote"
        + (f" (the kernels' declared share is {spec.kernel_share:.1%})" if declared else ""),
        "" if declared else "compute the answer in the kernels; declare --kernel-share when part of the output is "
        "computed elsewhere on purpose.")]


def _bypass_check(bypass: Mapping[str, bool] | str | None) -> Check:
    if bypass is None or isinstance(bypass, str):
        return Check("kernel_does_the_work", "ADVISORY", f"bypass not evaluated: {bypass or 'no bypass run'}")
    passing = [name for name, passed in bypass.items() if passed]
    if passing:
        return Check(
            "kernel_does_the_work",
            "FAIL",
            "decoration: with every kernel replaced by a stand-in that does no work ("
            + ", ".join(_stand_in_text(n) for n in passing)
            + "), the output still passes parity: the answer is computed outside the kernels.",
            "compute the answer inside the kernel; a kernel that copies or is cancelled proves nothing.",
        )
    return Check(
        "kernel_does_the_work",
        "PASS",
        "with the kernels replaced by stand-ins that do no work (" + ", ".join(
            sorted({_stand_in_text(n) for n in bypass}))
        + "), parity fails: the kernels compute the answer",
    )


_STAND_INS = {"zeros": "zeros", "passthrough": "an operand passed through"}

# The kernels must do the work: arithmetic left to plain array code around them, as a share
# of the reference's own, FAILs from here (honest bundled kernels: at most 0.27; a kernel
# that copies, negates or shifts while jnp around it computes the answer: 1.0 and more).
OUTSIDE_WORK_LIMIT = 0.5


def _work_check(candidate: Arithmetic | None, reference: Arithmetic | None, spec: FiringSpec) -> Check:
    """Whether the arithmetic is done in the kernels: the operations the candidate's program
    does outside its kernels, against all the reference does. A kernel that does a cheap
    step (a copy, a negation, a scale, a cast) while plain array code around it computes the
    answer passes every stand-in; it cannot hide the work it leaves outside."""
    name = "kernel_does_the_arithmetic"
    if candidate is None or candidate.error:
        why = candidate.error if candidate is not None else "the candidate's program was not counted"
        return Check(name, "FAIL", f"could not be evaluated: {why}",
                     "write the entry in jax primitives kgate can trace; a program that cannot be counted "
                     "cannot pass.")
    if reference is None or reference.error:
        why = reference.error if reference is not None else "the reference's program was not counted"
        return Check(name, "ADVISORY", f"not compared: {why}")
    if reference.kernel_calls:
        return Check(name, "ADVISORY", f"not compared: the reference itself calls {reference.kernel_calls} "
                     "kernel(s), whose work is not counted")
    if reference.outside <= 0:
        return Check(name, "ADVISORY", "not compared: the reference does no arithmetic (it only moves data)")
    share = candidate.outside / reference.outside
    declared = spec.kernel_share is not None and spec.kernel_share < 1
    limit = 1 - spec.kernel_share / 2 if declared and spec.kernel_share is not None else OUTSIDE_WORK_LIMIT
    loops = (f"; {candidate.unknown_loops} loop(s) with a trip count kgate cannot read, counted once"
             if candidate.unknown_loops else "")
    shown = f"{share:.2f}" if f"{share:.2f}" != f"{limit:.2f}" else f"{share:.4f}"  # 0.4990x, not "0.50x, below 0.50x"
    text = (f"plain array code outside the kernels does {candidate.outside:,.0f} operations, {shown}x the "
            f"reference's {reference.outside:,.0f}" + loops)
    if share >= limit:
        return Check(name, "FAIL", text + f" (FAIL from {limit:.2f}x"
                     + (f", the declared share {spec.kernel_share:.1%} allowing for the rest)" if declared else ")")
                     + ": the kernels do a small step and the answer is computed around them.",
                     "compute the answer inside the kernels; a kernel that copies, negates, scales or casts "
                     "while jnp or torch does the arithmetic proves nothing (declare --kernel-share when part of the "
                     "output is computed elsewhere on purpose).")
    own = candidate.outside + (candidate.inside or 0.0)
    if candidate.inside is not None and own > 0 and candidate.outside / own >= limit:
        # Against the reference's work alone, an O(n) answer around a kernel is nothing next to an
        # O(n^2) reference (a triangular-matmul scan); against the candidate's own work it is all.
        return Check(name, "FAIL", text + f"; the kernels themselves do {candidate.inside:,.0f} (their bodies times "
                     f"their grids): {candidate.outside / own:.0%} of the candidate's own arithmetic is outside "
                     f"them (FAIL from {limit:.0%}): the kernels do a small step and the answer is computed around "
                     "them.",
                     "compute the answer inside the kernels; a kernel that copies, negates, scales or casts while "
                     "jnp or torch does the arithmetic proves nothing (declare --kernel-share when part of the output is "
                     "computed elsewhere on purpose).")
    if candidate.unknown_loops:  # a loop counted once may run many times: the count bounds nothing
        return Check(name, "FAIL", text + ": the work of a loop run an unknown number of times outside the "
                     "kernels cannot be bounded.",
                     "give the loop static bounds (lax.fori_loop with Python ints) or move it into the kernel.")
    return Check(name, "PASS", text + f" (below {limit:.2f}x): the kernels do the arithmetic")


def _stand_in_text(name: str) -> str:
    """`passthrough-2` (the second operand tried) reads as the first does."""
    return _STAND_INS.get(name.split("-")[0], name)


def _host_callback_checks(facts: ProgramFacts) -> list[Check]:
    feeding = [s for s in facts.host_callbacks if s.reaches_output]
    if feeding:
        return [
            Check(
                "no_host_work",
                "FAIL",
                "the output depends on code run outside the program kgate audits (Python on the host, or "
                "native code behind an FFI call): "
                + ", ".join(f"{s.name} ({s.site})" for s in feeding)
                + ". Work done there is neither the kernel's nor the device's, and kgate cannot see whether it "
                "keeps state between calls (a cache, a replay, the reference).",
                "remove pure_callback / io_callback / jax.ffi.ffi_call from the compute path: write the work as a "
                "kernel (Pallas, Triton) or in jax.",
            )
        ]
    if facts.host_callbacks:
        return [
            Check(
                "no_host_work",
                "ADVISORY",
                f"{len(facts.host_callbacks)} host callback(s) or FFI call(s) in the program, none feeding the "
                "output: "
                + ", ".join(s.name for s in facts.host_callbacks),
            )
        ]
    return [Check("no_host_work", "PASS", "no host callback or FFI call in the program")]


def _reads_inputs(sites: Sequence[KernelSite]) -> Check:
    """A kernel whose operands are all constants of the program (weights, tables) computes
    what could have been computed once ahead of time: the inputs' work is done elsewhere."""
    blind = [s for s in sites if not s.reads_inputs]
    named = ", ".join(f"{s.name} ({s.site})" for s in blind)
    if len(blind) == len(sites):
        return Check("kernel_reads_inputs", "FAIL",
                     f"no kernel reads the workload's inputs: {named} compute(s) only on constants the program holds "
                     "(weights, tables), so the work on the inputs is done elsewhere.",
                     "pass the inputs (or values computed from them) to the kernel; re-laying the weights is "
                     "preparation, not the kernel doing the work.")
    if blind:
        return Check("kernel_reads_inputs", "PASS", f"{len(sites) - len(blind)} of {len(sites)} kernel sites read the "
                     f"inputs; {named} compute(s) on constants only")
    return Check("kernel_reads_inputs", "PASS", "every kernel reads the workload's inputs")


@dataclass(frozen=True)
class EdgeAudit:
    """The firing audit's ablation run again on one edge probe, drawn once the graded runs were
    over (torch): `ablation` counted with that probe's parity allowance, or why it could not be
    (`reason`: not evaluated, SKIPPED; `error`: the experiment raised, a FAIL); `differs`: the
    audit's unperturbed run there gave other outputs than the graded run on the same inputs;
    `left_out`: output elements not counted, whose answer there is zero to the output's resolution
    (nothing a kernel returns moves them)."""

    label: str
    ablation: Ablation | None = None
    reason: str = ""
    error: str = ""
    differs: bool = False
    left_out: int = 0


def _edge_check(edges: Sequence[EdgeAudit], spec: FiringSpec) -> list[Check]:
    """One check over the edges the ablation ran on again: a FAIL where any says the answer comes
    from elsewhere there, or the audit's run there is not the graded one."""
    if not edges:
        return []
    failed, passed, skipped = [], [], []
    for edge in edges:
        ab = edge.ablation
        if edge.error:
            failed.append(f"the ablation on {edge.label} could not be held to the graded run: {edge.error}")
        elif edge.differs:
            failed.append(f"the audit's run on {edge.label} gave other outputs than the graded run on the same inputs: "
                          "the candidate computes differently when audited")
        elif ab is None:
            skipped.append(f"{edge.label} not evaluated: {edge.reason}")
        else:
            left = (f"; {edge.left_out} whose answer is zero to the output's resolution there left out"
                    if edge.left_out else "")
            if ab.changed_elements == ab.total_elements:
                passed.append(f"on {edge.label} perturbing the kernel results moves all {ab.total_elements} output "
                              f"elements (by more than its parity allowance {ab.moved_above:.3g}{left})")
                continue
            share = ab.changed_elements / ab.total_elements if ab.total_elements else 0.0
            uncovered = ab.total_elements - ab.changed_elements
            text = (f"on {edge.label} {uncovered} of {ab.total_elements} output elements ({uncovered / max(ab.total_elements, 1):.1%}) "
                    f"do not depend on any kernel result beyond its parity allowance ({ab.moved_above:.3g}{left})")
            if spec.kernel_share is not None and share >= spec.kernel_share:
                passed.append(text + f" (declared: at least {spec.kernel_share:.1%})")
            else:
                failed.append(text + ": there the answer comes from elsewhere (a fallback, or a repair where the kernel "
                              "gets the input wrong)")
    name, drawn = "kernel_result_matters_on_edge", "edge probes drawn once the graded runs were over"
    if failed:
        return [Check(name, "FAIL", f"{drawn}: " + "; ".join(failed + passed + skipped),
                      "make the kernel right on every input (an extreme value, a zero row) instead of handing those to "
                      "a library, and compute every call the same way.")]
    if passed:
        return [Check(name, "PASS", f"{drawn}: " + "; ".join(passed + skipped))]
    return [Check(name, "SKIPPED", f"{drawn}: " + "; ".join(skipped))]


def graded_record_differs(kernels: Sequence[str], launched: Sequence[Sequence[str]], audited_sha256: str,
                          graded_sha256: str) -> str:
    """What differs between the firing audit's run and the graded runs, by the record sealed in
    the candidate's process as each graded run ended (`kgate.verify.seals`): `graded_differences`,
    the outputs compared by digest where both are known."""
    return graded_differences(kernels, launched,
                              bool(audited_sha256 and graded_sha256 and audited_sha256 != graded_sha256))


def _kernel_checks(facts: ProgramFacts, spec: FiringSpec, bypass: Mapping[str, bool] | str | None,
                   transplant: Transplant | str | None = None,
                   reference_arithmetic: Arithmetic | None = None, edges: Sequence[EdgeAudit] = ()) -> list[Check]:
    checks: list[Check] = []
    sites = facts.kernel_sites
    if not sites:
        checks.append(
            Check(
                "kernel_present",
                "FAIL",
                f"no {facts.kernel_kind} in the candidate's program: the authored kernel never runs "
                "(a fallback path, or the reference under a new name).",
                "make the entry call its kernel on every path; remove try/except and shape-based fallbacks.",
            )
        )
        return checks
    names = sorted({s.name for s in sites})
    checks.append(Check("kernel_present", "PASS", f"{len(sites)} {facts.kernel_kind} site(s): {', '.join(names)}"))
    if facts.graded_consistency is not None:
        checks.append(Check(
            "audit_is_the_graded_run", "FAIL" if facts.graded_consistency else "PASS",
            f"the audit's run is not what was graded: {facts.graded_consistency}. A candidate that computes "
            "differently when audited (or on inputs it has seen before) proves nothing with its kernels."
            if facts.graded_consistency else
            "every graded run launched the audited kernels, and the audit's run reproduced the graded outputs",
            "compute every call the same way: launch the kernel on every call, never from a cache or a fallback."
            if facts.graded_consistency else ""))
    ghosts = [s for s in sites if not s.reaches_output]
    if ghosts:
        checks.append(
            Check(
                "kernel_reaches_output",
                "FAIL",
                "ghost kernel: the result of "
                + ", ".join(f"{s.name} ({s.site})" for s in ghosts)
                + " never reaches the workload's outputs.",
                "return the kernel's result (or something computed from it); a discarded kernel proves nothing.",
            )
        )
    else:
        inexact = [s for s in sites if not s.exact]
        note = " (conservatively, inside a construct kgate does not trace through)" if inexact else ""
        checks.append(Check("kernel_reaches_output", "PASS", f"every kernel result reaches an output{note}"))
    checks.append(_reads_inputs(sites))
    ab = facts.ablation
    if not ab.evaluated:
        checks.append(Check("kernel_result_matters", "ADVISORY", f"ablation not evaluated: {ab.reason}"))
    elif ab.changed_elements == 0:
        checks.append(
            Check(
                "kernel_result_matters",
                "FAIL",
                f"ghost kernel: perturbing every kernel result moves none of the {ab.total_elements} output "
                f"elements by more than the parity allowance ({ab.moved_above:.3g}): the result is masked, multiplied "
                "by zero, cancelled (k + stop_gradient(answer - k)) or otherwise discarded.",
                "compute the output from the kernel's result.",
            )
        )
    elif ab.changed_elements < ab.total_elements:
        share = ab.changed_elements / ab.total_elements
        uncovered = ab.total_elements - ab.changed_elements
        declared = spec.kernel_share
        ok = declared is not None and share >= declared
        text = (
            f"{uncovered} of {ab.total_elements} output elements ({uncovered / ab.total_elements:.1%}) do not depend on "
            f"any kernel result beyond the parity allowance ({ab.moved_above:.3g}): the kernels compute {share:.1%} of "
            "the output and the rest comes from elsewhere"
        )
        checks.append(
            Check(
                "kernel_result_matters",
                "PASS" if ok else "FAIL",
                text + (f" (declared: at least {declared:.1%})" if declared is not None else ""),
                ""
                if ok
                else "compute the whole output in the kernel, or declare the kernels' share with --kernel-share "
                "when part of the output is computed elsewhere on purpose.",
            )
        )
    else:
        checks.append(
            Check(
                "kernel_result_matters",
                "PASS",
                f"perturbing the kernel results moves all {ab.total_elements} output elements (by more than the "
                f"parity allowance {ab.moved_above:.3g})",
            )
        )
    checks.extend(_edge_check(edges, spec))
    checks.append(_bypass_check(bypass))
    if facts.kernel_kind == "pallas_call":  # counted on jax programs
        checks.append(_work_check(facts.arithmetic, reference_arithmetic, spec))
    elif facts.arithmetic is not None and reference_arithmetic is not None and reference_arithmetic.outside > 0:
        # torch: the heavy operators torch counts (matmuls, convolutions, attention) left outside the kernels;
        # a reference with none of them (a softmax) is graded by the launches alone (the transplant)
        checks.append(_work_check(facts.arithmetic, reference_arithmetic, spec))
    checks.extend(_transplant_check(transplant, spec))
    targets = KERNEL_TARGETS.get(facts.platform)
    if targets is not None and facts.kernel_kind == "Triton launch":  # no XLA program: the launches are the evidence
        n = len(facts.kernel_sites)
        checks.append(
            Check(
                "compiled_custom_call",
                "PASS" if n else "FAIL",
                f"{n} Triton kernel(s) launched through Triton's compiled launcher on the {facts.platform}: they ran "
                "as device code",
                "" if n else "no authored Triton kernel was launched on the device.",
            )
        )
    elif targets is None:
        checks.append(
            Check(
                "compiled_custom_call",
                "SKIPPED",
                f"on {facts.platform} the kernels run in interpret mode and lower to ordinary ops; the "
                "compiled-program check runs on TPU/GPU",
            )
        )
    else:
        n = _kernel_count(facts)
        checks.append(
            Check(
                "compiled_custom_call",
                "PASS" if n else "FAIL",
                f"{n} custom call(s) with target in {sorted(targets)} in the compiled program",
                "" if n else "the compiled program holds no kernel custom call: the kernel was not lowered to "
                "the device (or was optimized away).",
            )
        )
    return checks


def audit(
    klass: str,
    facts: ProgramFacts | None,
    *,
    spec: FiringSpec = FiringSpec(),
    reference_compiled: str | None = None,
    reference_essential: str = "",
    reference_uncompiled: str = "",
    trace_error: str = "",
    bypass: Mapping[str, bool] | str | None = None,
    transplant: Transplant | str | None = None,
    audit_error: str = "",
    reference_arithmetic: Arithmetic | None = None,
    edges: Sequence[EdgeAudit] = (),
) -> GateResult:
    """Grade the candidate's programs for its intervention class.

    `bypass`: for each stand-in kernel that does no work, whether the output still passed
    parity with it (graded by the caller), or why that was not evaluated.
    `reference_arithmetic`: what the reference computes, counted in its own process, against
    which the candidate's arithmetic outside its kernels is weighed. `edges`: the ablation again
    on edge probes drawn after the graded runs (torch)."""
    if klass not in CLASSES:
        raise KgateError(f"unknown intervention class {klass!r}.", f"use one of {', '.join(CLASSES)}.")
    if facts is None:
        return GateResult(
            "firing",
            (
                Check(
                    "traced",
                    "FAIL",
                    f"the candidate could not be traced and compiled: {trace_error}",
                    "fix the error; a program kgate cannot inspect cannot pass the firing audit.",
                ),
            ),
            {"class": klass},
        )
    checks: list[Check] = []
    details: dict[str, Any] = {
        "class": klass,
        "platform": facts.platform,
        "kernel_sites": [s.to_json() for s in facts.kernel_sites],
        "ablation": facts.ablation.to_json(),
        "custom_call_targets": sorted(set(facts.custom_call_targets)),
        "host_callbacks": [s.to_json() for s in facts.host_callbacks],
        "arithmetic": {"candidate_outside_kernels": facts.arithmetic.to_json() if facts.arithmetic else None,
                       "reference": reference_arithmetic.to_json() if reference_arithmetic else None},
        "bypass": bypass if not isinstance(bypass, str) else {"not_evaluated": bypass},
        "assertions": spec.to_json(),
    }
    checks.extend(_host_callback_checks(facts))
    if audit_error:
        checks.append(Check("audit_completed", "FAIL",
                            f"the firing audit's experiments on the candidate raised: {audit_error}",
                            "make the candidate run the same way on every call; an audit that cannot finish cannot "
                            "pass."))
    if klass == "kernel-authored":
        checks.extend(_kernel_checks(facts, spec, bypass, transplant, reference_arithmetic, edges))
    else:
        if reference_compiled is None and reference_uncompiled:
            checks.append(
                Check(
                    "program_differs",
                    "ADVISORY",
                    f"not compared: {reference_uncompiled}; the candidate's program differs from op-by-op "
                    "dispatch by construction, so part of any speedup is jit's alone",
                )
            )
        elif reference_compiled is None:
            checks.append(
                Check(
                    "program_differs",
                    "FAIL",
                    "the reference's compiled program was not available to compare against",
                    "re-run; this is a kgate bug if it persists.",
                )
            )
        else:
            reference_program = normalize_hlo(reference_compiled)
            same = reference_program == normalize_hlo(facts.compiled_text)
            # What each computes: its program with the operations that did nothing on the probe
            # left out. A candidate that added such operations and whose program is then the
            # reference's, so treated, changed nothing. (One that only dropped the reference's
            # own no-ops, adding none, changed its program for real.)
            bare = not same and bool(facts.essential_text) and normalize_hlo(
                reference_essential or reference_compiled) == normalize_hlo(facts.essential_text)
            details["programs_identical"] = same
            details["identities_left_out"] = list(facts.identities)
            what = ("mechanism absent: the candidate's optimized program is identical to the reference's "
                    "(modulo names and metadata)") if same else (
                    f"mechanism absent: with the {len(facts.identities)} operation(s) that computed nothing on the "
                    f"probe left out ({', '.join(sorted(set(facts.identities)))}: each gave back an operand or a value "
                    "the program already held, or was a branch always taken, inlined), the candidate's optimized "
                    "program is identical to the reference's (modulo names and metadata)")
            same = same or bare
            checks.append(
                Check(
                    "program_differs",
                    "FAIL" if same else "PASS",
                    what
                    if same
                    else "the candidate's optimized program differs from the reference's",
                    f"{article(klass)} {klass} candidate must change the compiled program; this one is a no-op."
                    if same
                    else "",
                )
            )
    checks.extend(_assertions(spec, facts))
    return GateResult("firing", tuple(checks), details)


# Other names a class is given: `rewrite` (plain framework code, no kernel of its own: torch or JAX).
SYNONYMS = {"rewrite": "xla-rewrite"}


def canonical_class(value: str | None) -> str | None:
    """The class's own name for a synonym (`rewrite` -> `xla-rewrite`); anything else as given."""
    return SYNONYMS.get(value, value) if value is not None else None


def parse_classes(value: str) -> str:
    value = SYNONYMS.get(value, value)
    if value not in CLASSES:
        raise KgateError(f"--class {value!r} is not an intervention class.",
                         f"use one of: {', '.join(CLASSES)} (or rewrite, the same as xla-rewrite).")
    return value
