"""Dataflow over a lowered StableHLO module: which kernel custom calls it holds, and does
each one's result reach the module's outputs?

The walk goes backwards from the public `main` function's return, through `func.call`s
(a call's result i depends on what the callee's return operand i depends on), and
conservatively through ops with regions (a live `while` or `case` keeps everything inside
it live, and such a custom call's reachability is marked inexact).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from jaxlib.mlir import ir

from kgate.backends.base import LoweredKernel

CUSTOM_CALL = "stablehlo.custom_call"


def _str(attr: Any) -> str:
    try:
        return ir.StringAttr(attr).value
    except (TypeError, ValueError):
        text = str(attr)
        return text[1:-1] if text.startswith('"') and text.endswith('"') else text


def _ops(block: Any) -> Iterable[Any]:
    return (op.operation for op in block.operations)


def _nested(op: Any) -> Iterable[Any]:
    """Every operation inside `op`'s regions, at any depth."""
    for region in op.regions:
        for block in region.blocks:
            for inner in _ops(block):
                yield inner
                yield from _nested(inner)


class _Module:
    def __init__(self, module: Any) -> None:
        self.funcs = {_str(op.attributes["sym_name"]): op.operation for op in module.body.operations
                      if op.operation.name == "func.func"}
        self.live: set[Any] = set()  # live operations (custom calls are looked up here)
        self.inexact: set[Any] = set()  # operations live only because an enclosing region op is
        self._callee_cache: dict[tuple[str, int], set[int]] = {}

    def _return(self, func: Any) -> Any:
        block = func.regions[0].blocks[0]
        return [op for op in _ops(block) if op.name == "func.return"][-1]

    def callee_depends(self, name: str, index: int) -> set[int]:
        """The callee's argument indices its return operand `index` depends on (marking the
        callee's operations live on the way)."""
        key = (name, index)
        if key not in self._callee_cache:
            self._callee_cache[key] = set()  # recursion guard: a recursive call adds nothing new
            func = self.funcs.get(name)
            if func is None:
                return set()
            entry = func.regions[0].blocks[0]
            self._callee_cache[key] = self.backwards([self._return(func).operands[index]], entry)
        return self._callee_cache[key]

    def backwards(self, values: Iterable[Any], entry: Any) -> set[int]:
        """Mark live every operation `values` depend on; return the entry block's argument
        indices they depend on."""
        args: set[int] = set()
        work = list(values)
        seen_values: set[Any] = set()
        visited: set[Any] = set()  # this walk's own: an op another walk marked live still leads to its operands
        while work:
            value = work.pop()
            if value in seen_values:
                continue
            seen_values.add(value)
            owner = value.owner
            if isinstance(owner, ir.Block):
                if owner == entry:
                    args.add(ir.BlockArgument(value).arg_number)
                continue  # a region's own argument: its op is live, and its operands with it
            op = owner.operation if hasattr(owner, "operation") else owner
            if op.name == "func.call":
                callee = _str(op.attributes["callee"]).lstrip("@")
                self.live.add(op)
                for i in self.callee_depends(callee, ir.OpResult(value).result_number):
                    work.append(op.operands[i])
                continue
            if op in visited:
                continue
            visited.add(op)
            self.live.add(op)
            work.extend(op.operands)
            for inner in _nested(op):  # a region op: all inside is live, and what it reads
                self.live.add(inner)
                self.inexact.add(inner)
                work.extend(inner.operands)
                if inner.name == "func.call":
                    callee = _str(inner.attributes["callee"]).lstrip("@")
                    for i in range(len(inner.results)):
                        for j in self.callee_depends(callee, i):
                            work.append(inner.operands[j])
        return args


_FILE_LINE = re.compile(r'"([^"]+\.py)":(\d+)')


def _location(op: Any) -> str:
    """`path.py:LINE` of the innermost call site the lowering recorded (the pallas_call)."""
    m = _FILE_LINE.search(str(op.location))
    return f"{m.group(1)}:{m.group(2)}" if m else ""


def kernel_calls(module: Any, targets: frozenset[str]) -> list[LoweredKernel]:
    """Every custom call in `module` whose target is in `targets`, and whether its result
    reaches the public entry's outputs."""
    flow = _Module(module)
    main = flow.funcs.get("main") or next(iter(flow.funcs.values()), None)
    if main is not None:
        flow.backwards(flow._return(main).operands, main.regions[0].blocks[0])
    found: list[LoweredKernel] = []
    for func in flow.funcs.values():
        for op in _nested(func):
            if op.name != CUSTOM_CALL:
                continue
            target = _str(op.attributes["call_target_name"])
            if target not in targets:
                continue
            name = _str(op.attributes["kernel_name"]) if "kernel_name" in op.attributes else ""
            found.append(LoweredKernel(target, name, _location(op), op in flow.live, op not in flow.inexact))
    return found
