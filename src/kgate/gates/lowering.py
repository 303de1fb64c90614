"""The lowering gate: does the candidate's kernel survive the device's own lowering?

A Pallas kernel can pass interpret-mode parity on a CPU and still be rejected the moment a
TPU host lowers it (a block shape off the (8, 128) tiling, a primitive Mosaic has no rule
for). The workload is lowered for the device platform from abstract shapes, at TINY and at
the op-point, on any machine; the lowered module must hold a kernel custom call for every
traced kernel, and each one's result must reach the outputs. From the same shapes: the
grid must write every block of every kernel output, and each kernel's VMEM working set must
fit its own limit and the chip's VMEM.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgate import gotchas
from kgate.backends.base import LoweredProgram
from kgate.gates.common import Check, GateResult, skipped

# kgate's own lowering findings (what kgate itself says about a candidate's lowering), each with
# its fix; the errors jax and Mosaic raise are matched against the gotcha table (kgate.gotchas).
OWN_FINDINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"different program for the device"),
     "trace the same program however kgate traces it: a kernel that looks at interpret mode or the call stack "
     "shows parity one program and the device another."),
    (re.compile(r"lowering rules changed after kgate started"),
     "register no lowering rule and replace none of jax's: the device's host lowers the kernel with jax's own rules."),
    (re.compile(r"of a class the candidate defined"),
     "use jax's own compiler-parameter classes (pltpu.CompilerParams and the like), not a subclass of your own."),
    (re.compile(r"compiler parameters are for"),
     "write the kernel for the target's platform (its compiler parameters too), or name the platform it is for "
     "with --lower-for if that is the target."),
)
GENERAL_FIX = ("fix the kernel so the device's lowering accepts it: the error above is what the device's host "
               "raises at compile time; interpret-mode parity alone does not show it.")

PLATFORM_NAMES = {"tpu": "TPU", "cuda": "GPU (CUDA)"}


def fix_for(error: str) -> tuple[str, str]:
    """(the fix for a lowering error, the gotcha row's id or ""): kgate's own findings first, then
    the gotcha table; an error no row matches gets the general fix and a request for a row."""
    own = next((fix for pattern, fix in OWN_FINDINGS if pattern.search(error)), None)
    if own is not None:
        return own, ""
    return gotchas.fix_for(error, GENERAL_FIX)


def _coverage_check(program: LoweredProgram) -> Check | None:
    """Every block of every kernel output written by some grid step, at this op-point's shapes."""
    if not program.coverage:
        return None
    name = f"{program.op_point}.output_covered"
    gaps = [c for c in program.coverage if not c.not_evaluated and c.blocks_written < c.blocks_total]
    if gaps:
        return Check(name, "FAIL", "; ".join(
            f"output {c.output} of {c.kernel}, shape {list(c.shape)}: the grid {list(c.grid)} writes "
            f"{c.blocks_written} of its {c.blocks_total} blocks of {list(c.block)}, and no step writes element "
            f"{list(c.first_unwritten or ())} (on a device it holds whatever the memory held)" for c in gaps),
            "make the grid cover every block (pl.cdiv(size, block), not size // block, masking the partial last "
            "block in the kernel), or choose blocks that divide the shape.")
    unknown = [c for c in program.coverage if c.not_evaluated]
    if len(unknown) == len(program.coverage):
        return Check(name, "SKIPPED", "what the grid writes could not be told from shapes: "
                     + "; ".join(f"output {c.output} of {c.kernel}: {c.not_evaluated}" for c in unknown))
    told = len(program.coverage) - len(unknown)
    if unknown:  # part told is not all told: said as an advisory, never a plain pass
        return Check(name, "ADVISORY", f"the grid writes every block of {told} kernel output(s) at {program.op_point}; "
                     "not told for " + "; ".join(f"output {c.output} of {c.kernel} ({c.not_evaluated})" for c in unknown))
    return Check(name, "PASS", f"the grid writes every block of {told} kernel output(s) at {program.op_point}")


def size_text(n: int) -> str:
    return f"{n / 2**20:.3g} MiB" if n >= 2**20 else f"{n / 2**10:.3g} KiB"


def _vmem_check(program: LoweredProgram) -> Check | None:
    """Each kernel's estimated VMEM working set against its own vmem_limit_bytes and the
    chip's VMEM per core. Nothing to compare with is said, never passed."""
    if not program.vmem:
        return None
    name = f"{program.op_point}.vmem_fits"
    over: list[str] = []
    told: list[str] = []
    for k in program.vmem:
        parts = ", ".join(f"{what} {size_text(n)}" for what, n in k.parts)
        estimate = f"{k.kernel} needs about {size_text(k.total)} ({parts})"
        if k.declared_limit is not None and k.total > k.declared_limit:
            over.append(f"{estimate}, over its own vmem_limit_bytes of {size_text(k.declared_limit)}")
        elif program.chip_vmem is not None and k.total > program.chip_vmem:
            over.append(f"{estimate}, over the {program.chip_vmem // 2**20} MiB of VMEM per core of a TPU {program.chip}")
        elif k.declared_limit is not None and program.chip_vmem is not None and k.declared_limit > program.chip_vmem:
            over.append(f"{k.kernel} sets vmem_limit_bytes to {size_text(k.declared_limit)}, more than the "
                        f"{program.chip_vmem // 2**20} MiB a TPU {program.chip} has per core")
        else:
            told.append(estimate + (f" (its vmem_limit_bytes: {size_text(k.declared_limit)})"
                                    if k.declared_limit is not None else ""))
    if over:
        cap = f" (a TPU {program.chip} has {program.chip_vmem // 2**20} MiB per core)" if program.chip_vmem else ""
        return Check(name, "FAIL", "the kernel's blocks and scratch do not fit in VMEM: " + "; ".join(over),
                     f"use smaller blocks (or fewer buffers), or raise vmem_limit_bytes in pltpu.CompilerParams up to the "
                     f"chip's VMEM{cap}.")
    if program.chip_vmem is not None:
        return Check(name, "PASS", "; ".join(told) + f": within a TPU {program.chip}'s {program.chip_vmem // 2**20} MiB "
                     "per core" + (" and the kernels' own vmem_limit_bytes" if any(
                         k.declared_limit is not None for k in program.vmem) else ""))
    bounded = [k for k in program.vmem if k.declared_limit is not None]
    if not bounded:
        return Check(name, "SKIPPED", "; ".join(told) + ": no chip named (--chip-kind) and no vmem_limit_bytes "
                     "declared, so nothing to compare with")
    if len(bounded) < len(program.vmem):  # some kernels compared with nothing
        return Check(name, "ADVISORY", "; ".join(told) + ": within their own vmem_limit_bytes, but "
                     + ", ".join(k.kernel for k in program.vmem if k.declared_limit is None)
                     + " declares none and no chip is named (--chip-kind): not compared")
    return Check(name, "PASS", "; ".join(told) + ": within the kernels' own vmem_limit_bytes")


def _checks(program: LoweredProgram) -> list[Check]:
    device = PLATFORM_NAMES.get(program.platform, program.platform)
    at = f"{program.op_point} ({program.shapes})"
    prefix = f"{program.op_point}."
    covered = [c for c in (_coverage_check(program), _vmem_check(program)) if c is not None]
    if program.unavailable:  # not evaluated: an advisory, so a run that lowered nothing never exits 0 unsaid
        return [Check(prefix + "lowers", "ADVISORY", f"lowering for {device} cannot be tried on this machine: "
                      f"{program.unavailable}"), *covered]
    if program.error:
        where = f" (at {program.where})" if program.where else ""
        fix, row = fix_for(program.error)
        return [Check(prefix + "lowers", "FAIL", f"the {device} lowering rejects the candidate at {at}: "
                      f"{program.error}{where}", fix, row), *covered]
    checks = [Check(prefix + "lowers", "PASS", f"lowered for {device} at {at}: {len(program.kernels)} kernel "
                    "custom call(s)")]
    lowered_names = {k.name for k in program.kernels}
    missing = sorted(set(program.kernel_names) - lowered_names) if all(lowered_names) and program.kernel_names else []
    dropped = missing or (not program.kernel_names and len(program.kernels) < program.kernel_sites) or (
        program.kernel_sites and not program.kernels)
    if dropped:
        which = f" ({', '.join(missing)})" if missing else ""
        checks.append(Check(
            prefix + "custom_calls", "FAIL",
            f"the traced program calls {program.kernel_sites} kernel(s) but the {device} lowering holds "
            f"{len(program.kernels)} kernel custom call(s): kernels were dropped as dead code{which} (a kernel whose "
            "result is discarded never reaches the device).",
            "return the kernel's result (or something computed from it); a discarded kernel proves nothing.",
        ))
    else:
        names = ", ".join(sorted({k.name or k.target for k in program.kernels}))
        checks.append(Check(prefix + "custom_calls", "PASS",
                            f"{len(program.kernels)} custom call(s) for {program.kernel_sites} traced kernel(s): {names}"))
    ghosts = [k for k in program.kernels if not k.reaches_output]
    if ghosts:
        checks.append(Check(
            prefix + "reaches_output", "FAIL",
            "ghost kernel in the lowered program: the result of "
            + ", ".join(f"{k.name or k.target} ({k.location})" for k in ghosts) + " never reaches the outputs.",
            "return the kernel's result (or something computed from it); a discarded kernel proves nothing.",
        ))
    elif program.kernels:
        inexact = any(not k.exact for k in program.kernels)
        note = " (conservatively, inside a loop or a branch)" if inexact else ""
        checks.append(Check(prefix + "reaches_output", "PASS",
                            f"every kernel custom call's result reaches the outputs{note}"))
    return checks + covered


def evaluate(programs: Sequence[LoweredProgram], not_run: str = "") -> GateResult:
    """Grade the lowered programs (one per op-point). `not_run`: why no lowering was tried."""
    if not programs:
        return skipped("lowering", not_run or "no lowering was run")
    checks = [check for program in programs for check in _checks(program)]
    details = {"platform": programs[0].platform, "programs": [p.to_json() for p in programs]}
    if all(p.unavailable for p in programs) and not any(c.status == "FAIL" for c in checks):
        return GateResult("lowering", tuple(checks), details, skipped_reason=checks[0].detail)
    return GateResult("lowering", tuple(checks), details)
