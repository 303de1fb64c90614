"""Arrays between processes: what a leg hands its parent, in a format that cannot run code.

A leg that imported candidate code is hostile ground, so what it writes is read back
with numpy's loader with pickling off: raw bytes plus a dtype name from an allow-list and
a shape. No framework import: the grading parent reads these files.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

import ml_dtypes  # noqa: F401  (registers bfloat16 and the float8 types with numpy)
import numpy as np

from kgate.backends.base import HostTree
from kgate.errors import KgateError

_DTYPE = re.compile(r"(bool|u?int(8|16|32|64)|float(16|32|64)|complex(64|128)|bfloat16|float8_e[0-9a-z]+)")
_SHAPE = re.compile(r"(\d+(,\d+)*)?")


def write_trees(path: Path | BinaryIO, trees: Mapping[str, HostTree]) -> None:
    """Write named host trees as one .npz (no pickles) to a file or a stream."""
    arrays: dict[str, np.ndarray] = {}
    for name, tree in trees.items():
        arrays[f"{name}/structure"] = np.array(tree.structure)
        arrays[f"{name}/paths"] = np.array(list(tree.paths) or [""])
        arrays[f"{name}/n"] = np.array(len(tree.leaves))
        for i, leaf in enumerate(tree.leaves):
            a = np.asarray(leaf)
            arrays[f"{name}/b{i}"] = np.frombuffer(np.ascontiguousarray(a).tobytes(), dtype=np.uint8)
            arrays[f"{name}/m{i}"] = np.array([str(a.dtype), ",".join(map(str, a.shape))])
    if isinstance(path, Path):
        with open(path, "wb") as handle:
            np.savez(handle, **arrays)
    else:
        np.savez(path, **arrays)


def read_trees(source: Path | bytes) -> dict[str, HostTree]:
    """Read what `write_trees` wrote; a malformed file is an error, never executed."""
    name = source.name if isinstance(source, Path) else "stream"
    try:
        with np.load(source if isinstance(source, Path) else io.BytesIO(source), allow_pickle=False) as data:
            names = sorted({key.split("/", 1)[0] for key in data.files})
            return {name: _tree(data, name) for name in names}
    except (OSError, ValueError, KeyError) as exc:
        raise KgateError(
            f"a leg's result ({name}) is unreadable ({type(exc).__name__}: {exc}).",
            "re-run; a candidate that writes into kgate's hand-over files is an integrity failure.",
        ) from exc


def _tree(data: np.lib.npyio.NpzFile, name: str) -> HostTree:
    n = int(data[f"{name}/n"])
    paths = tuple(str(p) for p in data[f"{name}/paths"])[:n]
    leaves = []
    for i in range(n):
        dtype, shape = (str(v) for v in data[f"{name}/m{i}"])
        if not _DTYPE.fullmatch(dtype) or not _SHAPE.fullmatch(shape):
            raise ValueError(f"leaf {i} of {name} declares dtype {dtype!r}, shape {shape!r}")
        dims = tuple(int(d) for d in shape.split(",") if d)
        leaves.append(np.frombuffer(data[f"{name}/b{i}"].tobytes(), dtype=np.dtype(dtype)).reshape(dims).copy())
    return HostTree(str(data[f"{name}/structure"]), paths, tuple(leaves))
