"""`kgate new`: a problem folder in the protocol, ready to grade.

Each template is a reference module (CONFIG, TINY, create_inputs(seed, dtype), workload,
get_flops, get_bytes) and a Pallas candidate skeleton (a grid over row blocks, BlockSpecs,
float32 inside) that passes `kgate gate` as generated. Pure file writing: no framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kgate.errors import KgateError
from kgate.jsonio import write_atomic


@dataclass(frozen=True)
class Template:
    name: str
    what: str
    reference: str
    candidate: str


_ROWWISE_REFERENCE = '''"""{title}: y = x / rms(x) * w along the last axis, computed in float32 (a kgate problem module).

Replace the body of `workload` with the operation you want to speed up; keep the protocol:
CONFIG is the op-point, TINY the small one `kgate gate` uses, `create_inputs` makes the
inputs from `seed` in `dtype`, `workload` is what the candidate must reproduce."""

import jax
import jax.numpy as jnp

CONFIG = {{"rows": 4096, "cols": 1024, "eps": 1e-6}}
TINY = {{"rows": 16, "cols": 256}}


def create_inputs(seed=0, dtype=jnp.bfloat16):
    kx, kw = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(kx, (CONFIG["rows"], CONFIG["cols"]), dtype=jnp.float32)
    w = 1.0 + 0.1 * jax.random.normal(kw, (CONFIG["cols"],), dtype=jnp.float32)
    return x.astype(dtype), w.astype(dtype)


def workload(x, w):
    x32 = x.astype(jnp.float32)
    ms = jnp.mean(x32 * x32, axis=-1, keepdims=True)
    return (x32 * jax.lax.rsqrt(ms + CONFIG["eps"]) * w.astype(jnp.float32)).astype(x.dtype)


def get_flops():
    return 4 * CONFIG["rows"] * CONFIG["cols"]


def get_bytes():
    n = CONFIG["rows"] * CONFIG["cols"]
    return 2 * (2 * n + CONFIG["cols"])
'''

_ROWWISE_CANDIDATE = '''"""{title}: the reference's row-wise op as a Pallas TPU kernel (a kgate candidate).

One block of `block_rows` rows per grid step, the whole row in VMEM, float32 inside. The grid
is the ceiling of rows / block_rows, so a partial last block is computed too (the gate
probes an odd shape to check). On a CPU it runs in TPU interpret mode."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def _kernel(x_ref, w_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = (x * jax.lax.rsqrt(ms + eps) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows", "eps"))
def _call(x, w, *, block_rows, eps):
    rows, cols = x.shape
    return pl.pallas_call(
        functools.partial(_kernel, eps=eps),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[
            pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
            pl.BlockSpec((1, cols), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
    )(x, w.reshape(1, cols))


def workload(x, w, *, block_rows=8):
    return _call(x, w, block_rows=block_rows, eps=reference.CONFIG["eps"])
'''

_ELEMENTWISE_REFERENCE = '''"""{title}: y = x * sigmoid(1.702 x) * scale, elementwise in float32 (a kgate problem module).

Replace the body of `workload` with the operation you want to speed up; keep the protocol:
CONFIG is the op-point, TINY the small one `kgate gate` uses, `create_inputs` makes the
inputs from `seed` in `dtype`, `workload` is what the candidate must reproduce."""

import jax
import jax.numpy as jnp

CONFIG = {{"rows": 2048, "cols": 2048, "scale": 1.5}}
TINY = {{"rows": 16, "cols": 256}}


def create_inputs(seed=0, dtype=jnp.float32):
    x = jax.random.normal(jax.random.key(seed), (CONFIG["rows"], CONFIG["cols"]), dtype=jnp.float32) * 3.0
    return (x.astype(dtype),)


def workload(x):
    x32 = x.astype(jnp.float32)
    return (x32 * jax.nn.sigmoid(1.702 * x32) * CONFIG["scale"]).astype(x.dtype)


def get_flops():
    return 6 * CONFIG["rows"] * CONFIG["cols"]


def get_bytes():
    return 2 * CONFIG["rows"] * CONFIG["cols"] * 4
'''

_ELEMENTWISE_CANDIDATE = '''"""{title}: the reference's elementwise op as a Pallas TPU kernel (a kgate candidate).

A 2-D grid of (block_rows, block_cols) tiles, float32 inside; both grid sizes are ceilings,
so partial edge tiles are computed too (the gate probes an odd shape to check). On a CPU it
runs in TPU interpret mode."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import reference


def _kernel(x_ref, o_ref, *, scale):
    x = x_ref[...].astype(jnp.float32)
    o_ref[...] = (x * jax.nn.sigmoid(1.702 * x) * scale).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows", "block_cols", "scale"))
def _call(x, *, block_rows, block_cols, scale):
    rows, cols = x.shape
    return pl.pallas_call(
        functools.partial(_kernel, scale=scale),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows), pl.cdiv(cols, block_cols)),
        in_specs=[pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j)),
    )(x)


def workload(x, *, block_rows=8, block_cols=128):
    return _call(x, block_rows=block_rows, block_cols=block_cols, scale=reference.CONFIG["scale"])
'''

TEMPLATES = {
    t.name: t
    for t in (
        Template("rowwise", "a reduction along each row (an RMSNorm), bfloat16 in and out", _ROWWISE_REFERENCE,
                 _ROWWISE_CANDIDATE),
        Template("elementwise", "an elementwise op (a GELU-like activation), float32, 2-D tiles", _ELEMENTWISE_REFERENCE,
                 _ELEMENTWISE_CANDIDATE),
    )
}


def new_problem(folder: Path, template: str = "rowwise") -> list[Path]:
    """Write `reference.py` and `candidate.py` into `folder` (made if missing; refused when it
    already holds either file). Returns the files written."""
    if template not in TEMPLATES:
        known = ", ".join(f"{t.name} ({t.what})" for t in TEMPLATES.values())
        raise KgateError(f"there is no template {template!r}.", f"use --from with one of: {known}.")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise KgateError(f"{folder} exists and is not a folder.", "name a new folder for the problem.")
    taken = [p for p in (folder / "reference.py", folder / "candidate.py") if p.exists()]
    if taken:
        raise KgateError(f"{', '.join(map(str, taken))} already exist: kgate new never overwrites a file.",
                         "name a new folder, or remove those files first.")
    if not folder.parent.is_dir():
        raise KgateError(f"the folder {folder.parent} does not exist.", "create it first, or name a folder in one that exists.")
    title = folder.name.replace("_", " ").replace("-", " ").strip() or "problem"
    chosen = TEMPLATES[template]
    folder.mkdir(exist_ok=True)
    written = []
    for name, text in (("reference.py", chosen.reference), ("candidate.py", chosen.candidate)):
        path = folder / name
        write_atomic(path, text.format(title=title))
        written.append(path)
    return written
