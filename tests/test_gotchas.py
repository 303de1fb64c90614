"""The gotcha table: every row is reproduced here by a tiny kernel against the real message of
the installed jax (TPU lowering from shapes on the CPU, TPU interpret mode, or tracing), and
`kgate gotcha` names it."""

import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from kgate import gotchas

F32 = jnp.float32


def _call(kernel, x, *, grid=(), in_specs=None, out_specs=None, out_shape=None, **kwargs):
    spec = pl.BlockSpec(x.shape, lambda *_: (0,) * x.ndim)
    return pl.pallas_call(
        kernel, out_shape=out_shape or jax.ShapeDtypeStruct(x.shape, x.dtype), grid=grid,
        in_specs=in_specs if in_specs is not None else [spec], out_specs=out_specs or spec, **kwargs)(x)


def lowering_error(f, *shapes):
    """The message the TPU lowering raises, from abstract shapes."""
    specs = [jax.ShapeDtypeStruct(s, d) for s, d in shapes]
    with pytest.raises(Exception) as caught:
        jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",))
    return str(caught.value)


def interpret_error(f, *arrays):
    """The message TPU interpret mode raises, running on real arrays."""
    with pytest.raises(Exception) as caught:
        with pltpu.force_tpu_interpret_mode():
            jax.block_until_ready(jax.jit(f)(*arrays))
    return str(caught.value)


def trace_error(f, *shapes):
    specs = [jax.ShapeDtypeStruct(s, d) for s, d in shapes]
    with pytest.raises(Exception) as caught:
        jax.jit(f).trace(*specs)
    return str(caught.value)


def raised(thunk):
    with pytest.raises(Exception) as caught:
        thunk()
    return str(caught.value)


def double(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def _block_tiling():
    f = lambda x: _call(double, x, grid=(2, 2), in_specs=[pl.BlockSpec((4, 100), lambda i, j: (i, j))],
                        out_specs=pl.BlockSpec((4, 100), lambda i, j: (i, j)))
    return [lowering_error(f, ((8, 200), F32))]


def _index_map_offset():
    f = lambda x: _call(double, x, grid=(4,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i * 8, 0))],
                        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    return [interpret_error(f, jnp.ones((32, 128), F32))]


def _any_ref_load():
    f = lambda x: _call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] + 1.0), x,
                        in_specs=[pl.BlockSpec(memory_space=pl.ANY)], out_specs=pl.BlockSpec(memory_space=pltpu.VMEM))
    return [lowering_error(f, ((8, 128), F32)), interpret_error(f, jnp.ones((8, 128), F32))]


def _any_with_blocks():
    f = lambda x: _call(double, x, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0), memory_space=pl.ANY)],
                        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    return [lowering_error(f, ((16, 128), F32))]


def _memspace_name():
    f = lambda x: _call(double, x, in_specs=[pl.BlockSpec(memory_space="vmem")])
    return [raised(lambda: pl.VMEM), raised(lambda: pltpu.ANY), lowering_error(f, ((8, 128), F32))]


def _api_drift():
    return [raised(lambda: pltpu.repeat), raised(lambda: pltpu.TPUCompilerParams),
            raised(lambda: pltpu.CompilerParams(vmem_limit=1 << 20))]


def _dynamic_slice():
    def kernel(x_ref, o_ref):
        o_ref[...] = jax.lax.dynamic_slice(x_ref[...], (pl.program_id(0) * 8, 0), (8, 128))

    f = lambda x: _call(kernel, x, grid=(2,), in_specs=[pl.BlockSpec((16, 128), lambda i: (0, 0))],
                        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    return [lowering_error(f, ((16, 128), F32))]


def _gather():
    def kernel(x_ref, o_ref):
        idx = (jax.lax.broadcasted_iota(jnp.int32, (8,), 0) * 3) % 8
        o_ref[...] = jnp.take(x_ref[...], idx, axis=0)

    return [lowering_error(lambda x: _call(kernel, x), ((8, 128), F32))]


def _unimplemented():
    sort = lambda x: _call(lambda x_ref, o_ref: o_ref.__setitem__(..., jnp.sort(x_ref[...], axis=1)), x)
    cumsum = lambda x: _call(lambda x_ref, o_ref: o_ref.__setitem__(..., jnp.cumsum(x_ref[...], axis=1)), x)
    return [lowering_error(sort, ((8, 128), F32)), lowering_error(cumsum, ((8, 128), F32))]


def _sixty_four_bit():
    def kernel(x_ref, o_ref):
        o_ref[...] = (x_ref[...].astype(jnp.float64) * 2.0).astype(jnp.float32)

    with jax.enable_x64(True):
        return [lowering_error(lambda x: _call(kernel, x), ((8, 128), F32))]


def _dimension_semantics():
    f = lambda x: _call(double, x, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")))
    return [lowering_error(f, ((16, 128), F32))]


def _specs_pytree():
    spec = pl.BlockSpec((8, 128), lambda: (0, 0))
    two = lambda x, y: pl.pallas_call(lambda a, b, o: o.__setitem__(..., a[...] + b[...]),
                                      out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), in_specs=[spec], out_specs=spec)(x, y)
    bare = lambda x: pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), in_specs=spec,
                                    out_specs=spec)(x)
    return [trace_error(two, ((8, 128), F32), ((8, 128), F32)), trace_error(bare, ((8, 128), F32))]


def _index_map_arity():
    f = lambda x: _call(double, x, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i,))],
                        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    return [trace_error(f, ((16, 128), F32))]


def _ref_out_of_bounds():
    static = lambda x: _call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[pl.ds(4, 8), :]), x)

    def traced(x_ref, o_ref):
        o_ref[...] = x_ref[pl.ds(pl.program_id(0) * 8, 8), :]

    f = lambda x: _call(traced, x, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    return [trace_error(static, ((8, 128), F32)), interpret_error(f, jnp.ones((16, 128), F32))]


def _store_shape():
    summed = lambda x: _call(lambda x_ref, o_ref: o_ref.__setitem__(..., jnp.sum(x_ref[...], axis=0)), x)
    dtype = lambda x: _call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...].astype(F32)), x)
    return [trace_error(summed, ((8, 128), F32)), trace_error(dtype, ((8, 128), jnp.bfloat16))]


def _captured_constant():
    def f(x):
        table = jnp.arange(8 * 128, dtype=F32).reshape(8, 128)
        return _call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] + table), x)

    return [trace_error(f, ((8, 128), F32))]


def _kernel_returns():
    return [trace_error(lambda x: _call(lambda x_ref, o_ref: x_ref[...] * 2, x), ((8, 128), F32))]


def _program_id_axis():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + pl.program_id(1).astype(F32)

    f = lambda x: _call(kernel, x, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    return [trace_error(f, ((16, 128), F32))]


def _traced_condition():
    def branch(x_ref, o_ref):
        if pl.program_id(0) == 0:
            o_ref[...] = x_ref[...]

    def scalar(x_ref, o_ref):
        o_ref[...] = x_ref[...] * float(x_ref[0, 0])

    f = lambda x: _call(branch, x, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    return [trace_error(f, ((16, 128), F32)), trace_error(lambda x: _call(scalar, x), ((8, 128), F32))]


def _device_kind_query():
    f = lambda x: _call(double, x, grid=(2,), in_specs=[pl.BlockSpec((1024,), lambda i: (i,))],
                        out_specs=pl.BlockSpec((1024,), lambda i: (i,)))
    return [lowering_error(f, ((2048,), F32))]


def _vmem_oom():
    """Raised only by the TPU compiler on a TPU host: the texts quoted in the public reports."""
    return ["RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space vmem. "
            "Used 65.05M of 64.00M vmem. Exceeded vmem capacity by 1.05M",
            "CompileTimeScopedVmemOom: Scoped allocation with size 37.22M and limit 32.00M exceeded scoped vmem "
            "limit by 5.22M."]


REPRODUCE = {
    "TPU-BLOCK-TILING": _block_tiling, "TPU-INDEX-MAP-OFFSET": _index_map_offset, "TPU-ANY-REF-LOAD": _any_ref_load,
    "TPU-ANY-WITH-BLOCKS": _any_with_blocks, "PALLAS-MEMSPACE-NAME": _memspace_name, "PALLAS-API-DRIFT": _api_drift,
    "TPU-DYNAMIC-SLICE": _dynamic_slice, "TPU-GATHER": _gather, "TPU-UNIMPLEMENTED-PRIMITIVE": _unimplemented,
    "TPU-64-BIT": _sixty_four_bit, "TPU-DIMENSION-SEMANTICS": _dimension_semantics,
    "PALLAS-SPECS-PYTREE": _specs_pytree, "PALLAS-INDEX-MAP-ARITY": _index_map_arity,
    "PALLAS-REF-OUT-OF-BOUNDS": _ref_out_of_bounds, "PALLAS-STORE-SHAPE": _store_shape,
    "PALLAS-CAPTURED-CONSTANT": _captured_constant, "PALLAS-KERNEL-RETURNS": _kernel_returns,
    "PALLAS-PROGRAM-ID-AXIS": _program_id_axis, "PALLAS-TRACED-CONDITION": _traced_condition,
    "TPU-DEVICE-KIND-QUERY": _device_kind_query, "TPU-VMEM-OOM": _vmem_oom,
}


def test_every_row_is_reproduced_and_the_table_has_at_least_twelve_pallas_tpu_rows():
    rows = gotchas.table()
    assert set(REPRODUCE) == {r.id for r in rows}
    assert len([r for r in rows if r.platform == "pallas_tpu"]) >= 12
    assert all(r.seen_on and r.source and r.means and r.fix for r in rows)


@pytest.mark.parametrize("row_id", sorted(REPRODUCE))
def test_each_row_names_the_real_message_of_its_mistake(row_id):
    for message in REPRODUCE[row_id]():
        found = gotchas.match(message)
        assert found is not None and found.id == row_id, (row_id, found and found.id, message[:400])


def test_kgate_gotcha_names_the_row_from_a_log_and_asks_for_a_row_when_none_matches(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("Traceback (most recent call last):\n  ...\n" + _block_tiling()[0] + "\n")
    proc = subprocess.run([sys.executable, "-m", "kgate", "gotcha", str(log)], capture_output=True, text=True)
    assert proc.returncode == 0 and "TPU-BLOCK-TILING" in proc.stdout and "multiples of 8 and 128" in proc.stdout
    piped = subprocess.run([sys.executable, "-m", "kgate", "gotcha", "-", "--json"], input=_dynamic_slice()[0],
                           capture_output=True, text=True)
    data = json.loads(piped.stdout)
    assert piped.returncode == 0 and data["matches"][0]["id"] == "TPU-DYNAMIC-SLICE"
    unknown = subprocess.run([sys.executable, "-m", "kgate", "gotcha", "-"], input="Segmentation fault (core dumped)\n",
                             capture_output=True, text=True)
    assert unknown.returncode == 1 and "no gotcha row matches" in unknown.stdout
    listed = subprocess.run([sys.executable, "-m", "kgate", "gotcha", "--list", "--json"], capture_output=True, text=True)
    assert {r["id"] for r in json.loads(listed.stdout)["matches"]} == set(REPRODUCE)
    missing = subprocess.run([sys.executable, "-m", "kgate", "gotcha", str(tmp_path / "nope.log")], capture_output=True,
                             text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "fix:" in missing.stderr


def test_the_fix_for_an_error_names_its_row_or_asks_for_one():
    fix, row = gotchas.fix_for(_gather()[0], "fix the kernel.")
    assert row == "TPU-GATHER" and "[gotcha TPU-GATHER:" in fix
    fix, row = gotchas.fix_for("something new went wrong", "fix the kernel.")
    assert row == "" and fix.startswith("fix the kernel.") and "no gotcha row matches" in fix


def test_a_jit_error_outside_any_kernel_gets_no_kernel_advice():
    """Rows about kernels do not fire on the same jax error raised by plain jit code."""

    def plain(x):
        if x.sum() > 0:
            return x
        return -x

    message = trace_error(plain, ((8, 128), F32))
    assert "Attempted boolean conversion of traced array" in message and gotchas.match(message) is None


def test_the_interpreter_runs_what_only_the_lowering_rejects():
    """Why the table says `where`: these mistakes pass interpret-mode parity and fail on the TPU."""
    x = jnp.ones((8, 200), F32)
    f = lambda x: _call(double, x, grid=(2, 2), in_specs=[pl.BlockSpec((4, 100), lambda i, j: (i, j))],
                        out_specs=pl.BlockSpec((4, 100), lambda i, j: (i, j)))
    with pltpu.force_tpu_interpret_mode():
        np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), 2.0)
