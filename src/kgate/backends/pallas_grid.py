"""What a Pallas kernel's grid writes, and what it holds in VMEM, from shapes alone: each
output's block index map evaluated over the whole grid, and every VMEM block and scratch
buffer sized, at whatever op-point, without running the kernel.

An output block no grid step writes is memory the kernel never fills: on a device it holds
whatever was there (zeros, a previous answer), which interpret parity at a small shape can
mistake for a right answer, and which running the kernel at the real op-point on a CPU is
too slow to find.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.extend import core as jcore

from kgate.backends.base import KernelVmem, OutputCoverage
from kgate.backends.jaxpr_flow import kernel_name

MAX_GRID_STEPS = 1 << 22  # beyond this the index maps are not evaluated (said, not passed)
MAX_BLOCKS = 1 << 24


def _pallas_calls(j: Any) -> list[Any]:
    body = j.jaxpr if isinstance(j, jcore.ClosedJaxpr) else j
    found = []
    for eqn in body.eqns:
        if eqn.primitive.name == "pallas_call":
            found.append(eqn)
        for sub in jcore.jaxprs_in_params(eqn.params):
            found.extend(_pallas_calls(sub))
    return found


def _block_sizes(block_shape: Any) -> tuple[int, ...] | str:
    sizes = []
    for dim in block_shape:
        kind = type(dim).__name__
        if dim is None or kind == "Squeezed":
            sizes.append(1)
        elif kind == "Blocked":
            sizes.append(int(dim.block_size))
        elif isinstance(dim, int):
            sizes.append(dim)
        else:
            return f"its block indexes by {kind}, not by whole blocks"
    return tuple(sizes)


def coverage(closed: Any) -> list[OutputCoverage]:
    """For every output of every pallas_call in `closed`: how many of its blocks the grid writes."""
    found: list[OutputCoverage] = []
    for eqn in _pallas_calls(closed):
        mapping = eqn.params["grid_mapping"]
        grid = tuple(int(g) for g in mapping.grid)
        aliased = {int(o) for _, o in eqn.params.get("input_output_aliases", ())}
        outputs = mapping.block_mappings[mapping.num_inputs:mapping.num_inputs + mapping.num_outputs]
        for index, block in enumerate(outputs):
            shape = tuple(int(d) for d in block.array_aval.shape)
            base = {"kernel": kernel_name(eqn), "output": index, "shape": shape, "grid": grid}
            sizes = _block_sizes(block.block_shape)
            reason = ""
            if isinstance(sizes, str):
                reason = sizes
            elif index in aliased:
                reason = "the output is aliased to an input, whose values stand where the kernel does not write"
            elif str(getattr(block.block_aval, "memory_space", "")).lower() not in ("default", "vmem", "none", ""):
                reason = "the kernel writes this output by its own DMAs, not through its blocks"
            elif mapping.num_index_operands:
                reason = "its index maps read scalar-prefetch values, known only when the kernel runs"
            elif int(np.prod(grid, dtype=np.int64)) > MAX_GRID_STEPS:
                reason = f"the grid has {int(np.prod(grid, dtype=np.int64))} steps, more than kgate evaluates"
            if reason:
                found.append(OutputCoverage(**base, block=(), blocks_total=0, blocks_written=0, not_evaluated=reason))
                continue
            assert not isinstance(sizes, str)
            found.append(_covered(block.index_map_jaxpr, grid, shape, sizes, base))
    return found


def _covered(index_map: Any, grid: tuple[int, ...], shape: tuple[int, ...], sizes: tuple[int, ...],
             base: dict[str, Any]) -> OutputCoverage:
    counts = tuple(-(-dim // size) for dim, size in zip(shape, sizes))
    total = int(np.prod(counts, dtype=np.int64))
    if total > MAX_BLOCKS:
        return OutputCoverage(**base, block=sizes, blocks_total=total, blocks_written=0,
                              not_evaluated=f"the output has {total} blocks, more than kgate evaluates")
    steps = np.indices(grid, dtype=np.int32).reshape(len(grid), -1) if grid else np.zeros((0, 1), np.int32)

    at = jcore.jaxpr_as_fun(index_map)

    with jax.default_device(jax.devices("cpu")[0]):
        if grid:
            blocks = jax.jit(jax.vmap(at))(*steps)
        else:
            blocks = [np.asarray(b)[None] for b in at()]
    idx = np.stack([np.asarray(b, dtype=np.int64).reshape(-1) for b in blocks], axis=1) if blocks else np.zeros((1, 0))
    inside = np.all((idx >= 0) & (idx < np.asarray(counts)), axis=1)
    written = np.zeros(total, dtype=bool)
    if idx.shape[1] == len(counts) and inside.any():
        written[np.ravel_multi_index(tuple(idx[inside].T), counts)] = True
    first = None
    if not written.all():
        missing = np.unravel_index(int(np.argmin(written)), counts)
        first = tuple(int(b) * s for b, s in zip(missing, sizes))
    return OutputCoverage(**base, block=sizes, blocks_total=total, blocks_written=int(written.sum()),
                          first_unwritten=first)


LANES = 128
SUBLANES = 8  # rows of 32-bit words per tile; narrower types pack 32 // bits rows into one


def padded_bytes(shape: tuple[int, ...], dtype: Any) -> int:
    """Bytes of an array laid out in VMEM: the last dimension padded to 128 lanes, the one
    before it to 8 rows of 32-bit words (16 for 16-bit types, 32 for 8-bit ones); a vector
    counts as a [1, n] block, so it takes a whole tile's rows too."""
    item = np.dtype(dtype).itemsize
    dims = [1, *shape] if len(shape) == 1 else list(shape) or [1, 1]
    rows = SUBLANES * max(1, 4 // item)
    dims[-1] = -(-dims[-1] // LANES) * LANES
    dims[-2] = -(-dims[-2] // rows) * rows
    return int(np.prod(dims, dtype=np.int64)) * item


def _space(aval: Any) -> str:
    return str(getattr(aval, "memory_space", "") or "").lower().rsplit(".", 1)[-1]


def _declared_limit(params: Any) -> int | None:
    values = params.values() if isinstance(params, dict) else [params]
    limits = [getattr(v, "vmem_limit_bytes", None) for v in values]
    return next((int(x) for x in limits if x is not None), None)


def vmem(closed: Any) -> list[KernelVmem]:
    """Every pallas_call's VMEM working set: each block in VMEM (the default space) times its
    buffers (the pipeline's two when the kernel has a grid, or what its pipeline_mode says;
    one without a grid), plus the kernel's VMEM scratch, each padded to whole tiles. Blocks
    left in HBM (`pl.ANY`) and SMEM are not counted."""
    found = []
    for eqn in _pallas_calls(closed):
        mapping = eqn.params["grid_mapping"]
        parts: list[tuple[str, int]] = []
        for i, block in enumerate(mapping.block_mappings):
            if _space(block.block_aval) not in ("default", "vmem", "none", ""):
                continue
            mode = getattr(block, "pipeline_mode", None)
            buffers = int(getattr(mode, "buffer_count", 0) or 0) or (2 if mapping.grid else 1)
            shape = tuple(int(d) for d in block.block_aval.shape)
            dtype = block.array_aval.dtype
            role = f"in {i}" if i < mapping.num_inputs else f"out {i - mapping.num_inputs}"
            parts.append((f"{role} block {list(shape)} {np.dtype(dtype).name} x{buffers}",
                          padded_bytes(shape, dtype) * buffers))
        kernel_args = eqn.params["jaxpr"].invars
        scratch = kernel_args[len(kernel_args) - mapping.num_scratch_operands:] if mapping.num_scratch_operands else []
        for j, var in enumerate(scratch):
            inner = getattr(var.aval, "inner_aval", var.aval)
            if _space(var.aval) != "vmem" or not hasattr(inner, "shape") or not hasattr(inner, "dtype"):
                continue
            try:
                item_dtype = np.dtype(inner.dtype)
            except TypeError:  # a semaphore or another non-array type
                continue
            shape = tuple(int(d) for d in inner.shape)
            parts.append((f"scratch {j} {list(shape)} {item_dtype.name}", padded_bytes(shape, item_dtype)))
        found.append(KernelVmem(kernel_name(eqn), sum(n for _, n in parts), tuple(parts),
                                _declared_limit(eqn.params.get("compiler_params"))))
    return found
