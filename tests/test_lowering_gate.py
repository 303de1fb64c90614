"""The lowering gate: a kernel the device's host would reject FAILs on any machine.

Each candidate passes interpret-mode parity on the CPU; only the lowering (the real
Pallas-to-Mosaic lowering, from abstract shapes) shows what a TPU would do with it.
"""

import json

import jax
import jax.numpy as jnp
import pytest

from conftest import failed, gate
from kgate.backends.base import LoweredKernel, LoweredProgram
from kgate.backends.jax_backend import JaxBackend
from kgate.errors import KgateError
from kgate.gates import lowering
from kgate.gates.firing import FiringSpec

S = jax.ShapeDtypeStruct


def _lowering_checks(report):
    return {c.name: c for c in report.gates["lowering"].checks}


@pytest.mark.full
def test_a_pallas_kernel_lowers_for_tpu_at_tiny_and_at_the_op_point_with_its_custom_call_reaching_the_output():
    report = gate("rmsnorm/reference.py", "rmsnorm/pallas.py")
    assert report.status == "PASS", failed(report)
    checks = _lowering_checks(report)
    assert {name: c.status for name, c in checks.items()} == {
        **{f"{at}.{what}": "PASS" for at in ("TINY", "op-point")
           for what in ("lowers", "custom_calls", "reaches_output", "output_covered")},
        **{f"{at}.vmem_fits": "SKIPPED" for at in ("TINY", "op-point")}}  # no chip named here, no limit declared
    assert "--chip-kind" in checks["op-point.vmem_fits"].detail and "192 KiB" in checks["op-point.vmem_fits"].detail
    programs = report.gates["lowering"].details["programs"]
    assert [p["shapes"] for p in programs] == ["bfloat16[1, 16, 256], bfloat16[256]", "bfloat16[4, 512, 1024], bfloat16[1024]"]
    assert programs[1]["kernels"][0]["name"] == "rmsnorm_kernel"
    assert programs[1]["kernels"][0]["location"].endswith("rmsnorm/pallas.py:23")


@pytest.mark.full
def test_a_block_off_the_tpu_tiling_passes_interpret_parity_and_fails_lowering_naming_the_rule_and_the_fix():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_block_off_tpu_tiling.py")
    assert report.gates["parity"].status == "PASS"
    assert failed(report) == {"lowering.TINY.lowers", "lowering.op-point.lowers"}
    check = _lowering_checks(report)["op-point.lowers"]
    assert "divisible by 8 and 128" in check.detail and "bfloat16[4, 512, 1024]" in check.detail
    assert "multiples of 8 and 128" in check.fix and check.gotcha == "TPU-BLOCK-TILING"  # the gotcha table's row
    from rich.console import Console

    from kgate.report import render_report

    console = Console(record=True, width=200)
    render_report(report, console)
    shown = console.export_text()
    assert "gotcha for lowering.op-point.lowers: make the last two dimensions" in shown
    assert "[gotcha TPU-BLOCK-TILING: a block's last two dimensions break the TPU's (8, 128) tiling]" in shown
    assert json.loads(json.dumps(report.to_json()))["gates"]["lowering"]["checks"][0]["gotcha"] == "TPU-BLOCK-TILING"


@pytest.mark.full
def test_a_block_that_fits_only_at_tiny_fails_lowering_at_the_op_point_alone():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_block_fits_only_tiny.py")
    assert report.gates["parity"].status == "PASS"
    assert failed(report) == {"lowering.op-point.lowers"}


@pytest.mark.full
def test_a_primitive_mosaic_cannot_lower_inside_a_kernel_fails_naming_it():
    report = gate("cumsum/reference.py", "cumsum/bad_cumsum_in_kernel.py")
    assert report.gates["parity"].status == "PASS"
    check = _lowering_checks(report)["TINY.lowers"]
    assert check.status == "FAIL" and "cumsum" in check.detail
    assert "outside the pallas_call" in check.fix


@pytest.mark.full
def test_a_ghost_kernel_is_dropped_from_the_lowered_program_and_fails_lowering_too():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_ghost.py")
    assert {"lowering.TINY.custom_calls", "lowering.op-point.custom_calls"} <= failed(report)


@pytest.mark.full
def test_lowering_is_for_kernel_authored_candidates_and_can_be_turned_off_with_the_reason_said():
    rewrite = gate("rmsnorm/reference.py", "rmsnorm/xla_rewrite.py", klass="xla-rewrite")
    assert "lowering" not in rewrite.gates
    off = gate("rmsnorm/reference.py", "rmsnorm/bad_block_off_tpu_tiling.py",
               firing_spec=FiringSpec(lower_for="none"))
    assert off.status == "PASS"
    assert off.gates["lowering"].status == "SKIPPED"
    assert "--lower-for none" in off.gates["lowering"].skipped_reason


def test_an_unknown_lowering_target_is_refused_with_the_choices():
    with pytest.raises(KgateError) as info:
        FiringSpec(lower_for="tpu-v5e")
    assert "auto, tpu, cuda, none" in info.value.fix


@pytest.mark.full
@pytest.mark.skipif(any(d.platform == "gpu" for d in jax.devices()), reason="needs a machine without the CUDA plugin")
def test_lowering_for_a_platform_this_machine_cannot_lower_for_is_skipped_with_the_reason_never_passed():
    try:
        import jax_cuda12_plugin  # noqa: F401
        pytest.skip("the CUDA plugin is installed: GPU lowering can run here")
    except ImportError:
        pass
    report = gate("rmsnorm/reference.py", "rmsnorm/pallas.py", firing_spec=FiringSpec(lower_for="cuda"))
    result = report.gates["lowering"]
    assert result.status == "SKIPPED"
    assert "cannot be tried on this machine" in result.skipped_reason and "GPU" in result.skipped_reason
    assert [c.status for c in result.checks if c.name.endswith(".lowers")] == ["ADVISORY", "ADVISORY"]
    assert report.exit_code == 1  # not lowered is said: a pass with advisories, never a plain 0
    # what the grid writes does not depend on the platform: told all the same
    assert [c.status for c in result.checks if c.name.endswith(".output_covered")] == ["PASS", "PASS"]
    proc, alone = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas.py", "--lower-for", "cuda")
    assert proc.returncode == 2 and alone["gates"]["lowering"]["checks"][0]["name"] == "lowering_evaluated"


# -- jax's own TPU kernels, lowered on this CPU (abstract shapes: no memory spent) ----------------

def _lowered(fn, *shapes):
    backend = JaxBackend()
    platform = backend.kernel_platform(fn, shapes)
    return backend.lower_for(fn, shapes, platform, "op-point")


def test_jax_tpu_matmul_and_flash_attention_lower_with_their_custom_calls_reaching_the_outputs():
    from jax.experimental.pallas.ops.tpu import flash_attention, matmul

    programs = [
        _lowered(lambda x, y: matmul.matmul(x, y, block_shape=(256, 256)), S((1024, 512), jnp.float32),
                 S((512, 1024), jnp.float32)),
        _lowered(lambda q, k, v: flash_attention.flash_attention(q, k, v), *[S((2, 4, 512, 128), jnp.float32)] * 3),
    ]
    for program in programs:
        assert program.platform == "tpu" and not program.error
        assert lowering.evaluate([program]).status == "PASS"
        assert len(program.kernels) == program.kernel_sites == 1 and program.kernels[0].reaches_output


def test_jax_tpu_grouped_matmul_and_paged_attention_lower_with_their_custom_calls_reaching_the_outputs():
    from jax.experimental.pallas.ops.tpu.megablox import gmm
    from jax.experimental.pallas.ops.tpu.paged_attention import paged_attention

    grouped = _lowered(lambda lhs, rhs, sizes: gmm(lhs, rhs, sizes, tiling=(128, 128, 128)),
                       S((512, 256), jnp.bfloat16), S((4, 256, 512), jnp.bfloat16), S((4,), jnp.int32))
    paged = _lowered(
        lambda q, k, v, lengths, pages: paged_attention(q, k, v, lengths, pages, pages_per_compute_block=4),
        S((2, 8, 128), jnp.float32), S((8, 64, 16, 128), jnp.float32), S((8, 64, 16, 128), jnp.float32),
        S((2,), jnp.int32), S((2, 16), jnp.int32))
    for program in (grouped, paged):
        assert not program.error, program.error
        assert lowering.evaluate([program]).status == "PASS"
        assert program.kernels and all(k.reaches_output for k in program.kernels)


@pytest.mark.full
def test_a_ghost_kernel_kept_alive_by_side_effects_is_in_the_lowered_program_and_reaches_nothing():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_side_effect_ghost.py")
    assert report.gates["parity"].status == "PASS"
    assert {"firing.kernel_reaches_output", "lowering.TINY.reaches_output", "lowering.op-point.reaches_output"} <= failed(report)
    assert "lowering.TINY.custom_calls" not in failed(report)  # the custom call is there: only dataflow tells
    assert "bad_side_effect_ghost.py:" in _lowering_checks(report)["op-point.reaches_output"].detail


# -- the grading, from plain records -----------------------------------------------------------

LIVE = LoweredKernel("tpu_custom_call", "k", "k.py:3", True, True)


def _program(**kwargs):
    base = {"platform": "tpu", "op_point": "TINY", "shapes": "float32[8, 128]", "kernels": (LIVE,), "kernel_sites": 1}
    return LoweredProgram(**{**base, **kwargs})


def test_grading_passes_a_lowered_live_kernel_and_fails_each_way_a_lowering_goes_wrong():
    assert lowering.evaluate([_program()]).status == "PASS"
    dropped = lowering.evaluate([_program(kernels=(), kernel_sites=2)])
    assert [c.name for c in dropped.failures] == ["TINY.custom_calls"]
    ghost = lowering.evaluate([_program(kernels=(LoweredKernel("tpu_custom_call", "k", "k.py:3", False, True),))])
    assert [c.name for c in ghost.failures] == ["TINY.reaches_output"] and "k.py:3" in ghost.failures[0].detail
    broken = lowering.evaluate([_program(kernels=(), error="ValueError: something Mosaic says", where="k.py:9: x")])
    assert [c.name for c in broken.failures] == ["TINY.lowers"]
    assert "k.py:9" in broken.failures[0].detail and broken.failures[0].fix.startswith(lowering.GENERAL_FIX)
    assert "no gotcha row matches" in broken.failures[0].fix and broken.failures[0].gotcha == ""


def test_a_candidate_that_cannot_be_traced_at_an_op_point_fails_lowering_there_with_the_error():
    def asks_the_device(x):
        from jax.experimental.pallas import tpu as pltpu

        pltpu.get_tpu_info()  # raises off a TPU
        return x

    program = JaxBackend().lower_for(asks_the_device, (S((8, 128), jnp.float32),), "tpu", "op-point")
    result = lowering.evaluate([program])
    assert [c.name for c in result.failures] == ["op-point.lowers"]
    assert "Unsupported TPU device kind" in result.failures[0].detail
    assert "chip's values" in result.failures[0].fix and result.failures[0].gotcha == "TPU-DEVICE-KIND-QUERY"


def test_grading_a_gate_with_nothing_lowered_never_passes():
    assert lowering.evaluate([], "no kernel").status == "SKIPPED"
    unavailable = lowering.evaluate([_program(kernels=(), unavailable="no GPU lowering here")])
    assert unavailable.status == "SKIPPED" and "no GPU lowering here" in unavailable.skipped_reason
    half = lowering.evaluate([_program(kernels=(), unavailable="no shapes"), _program(op_point="op-point")])
    assert half.status == "PASS" and [c.status for c in half.checks][0] == "ADVISORY"


@pytest.mark.parametrize("error, words, row", [
    ("The Pallas TPU lowering currently requires that the last two dimensions of your block shape are divisible "
     "by 8 and 128 respectively", "multiples of 8 and 128", "TPU-BLOCK-TILING"),
    ("NotImplementedError: Unimplemented primitive in Pallas TPU lowering for tc: sort.", "outside the pallas_call",
     "TPU-UNIMPLEMENTED-PRIMITIVE"),
    ("RESOURCE_EXHAUSTED: scoped vmem limit exceeded", "vmem_limit_bytes", "TPU-VMEM-OOM"),
    ("ValueError: Unsupported TPU device kind: cpu", "take the chip's values as parameters", "TPU-DEVICE-KIND-QUERY"),
    ("the candidate lowers a different program for the device", "trace the same program", ""),
])
def test_each_common_lowering_error_gets_its_own_fix(error, words, row):
    fix, found = lowering.fix_for(error)
    assert words in fix and found == row


# -- `kgate lower`: the gate alone, from shapes, as a command -----------------------------------

def _lower(*args):
    from conftest import EXAMPLES, kgate

    proc = kgate(EXAMPLES, "lower", "--json", *args)
    return proc, (json.loads(proc.stdout) if proc.stdout.strip() else None)


@pytest.mark.full
def test_kgate_lower_passes_a_good_kernel_and_fails_one_the_tpu_rejects_at_the_op_point_in_seconds():
    proc, good = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas.py")
    assert proc.returncode == 0 and good["status"] == "PASS", proc.stderr
    assert good["op_point"]["values"]["seq_len"] == 512 and good["op_point"]["tiny"]["seq_len"] == 16
    proc, bad = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/bad_block_fits_only_tiny.py", "--set", "emb_dim=512")
    assert proc.returncode == 2 and bad["status"] == "FAIL"
    failed_names = [c["name"] for c in bad["gates"]["lowering"]["checks"] if c["status"] == "FAIL"]
    assert failed_names == ["op-point.lowers"]
    lowered = {c["name"]: c for c in bad["gates"]["lowering"]["checks"]}
    assert "bfloat16[1, 16, 512]" in lowered["TINY.lowers"]["detail"]  # --set applies at TINY and at the op-point
    assert "bfloat16[4, 512, 512]" in lowered["op-point.lowers"]["detail"]


@pytest.mark.full
def test_kgate_lower_fails_what_it_cannot_lower_and_refuses_bad_input_with_exit_2():
    proc, rewrite = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/xla_rewrite.py")
    assert proc.returncode == 2 and rewrite["gates"]["lowering"]["checks"][0]["name"] == "kernel_present"
    proc, none = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas.py", "--lower-for", "none")
    assert proc.returncode == 2 and none["status"] == "ERROR" and "would lower nothing" in none["error"]["problem"]
    proc, missing = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/no_such_candidate.py")
    assert proc.returncode == 2 and missing["status"] == "ERROR"


def test_kgate_lower_of_a_candidate_that_patches_kgate_at_import_is_an_anomaly():
    proc, report = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/bad_rebinds_kgate_parity.py")
    assert proc.returncode == 2 and report["status"] == "ANOMALY", proc.stderr


@pytest.mark.full
def test_a_candidate_that_rewrites_kgates_lowering_in_its_own_process_is_an_anomaly_in_gate_and_lower():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_forges_lowering.py")
    assert report.status == "ANOMALY"
    untouched = next(c for c in report.gates["integrity"].checks if c.name == "process_untouched")
    assert "lower_for" in untouched.detail and "kernel_calls" in untouched.detail
    proc, lowered = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/bad_forges_lowering.py")
    assert proc.returncode == 2 and lowered["status"] == "ANOMALY"


# -- static output coverage: what the grid writes, from the index maps, at any shape ------------

@pytest.mark.full
def test_a_grid_that_drops_the_last_block_at_the_op_point_alone_fails_static_coverage_there():
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_floor_grid_at_op_point.py")
    # the seeds at TINY pass (one block, the whole array); only the runs at other shapes and the static check see it
    at = {c.name.split(".")[0] for c in report.gates["parity"].failures}
    assert "odd-shape" in at and at <= {"odd-shape", "drawn-shape1", "drawn-shape2", "rows-at-a-shape"}
    assert "lowering.op-point.output_covered" in failed(report)
    assert _lowering_checks(report)["TINY.output_covered"].status == "PASS"
    detail = _lowering_checks(report)["op-point.output_covered"].detail
    assert "writes 85 of its 86 blocks of [24, 1024]" in detail and "element [2040, 0]" in detail


def _coverage(kernel_call, *shapes):
    from kgate.backends import pallas_grid

    return pallas_grid.coverage(jax.make_jaxpr(kernel_call)(*shapes))


def _copy(x, *, grid, block, index_map, **kwargs):
    from jax.experimental import pallas as pl

    def kernel(*refs):
        refs[-1][...] = refs[0][...]

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=grid,
                          in_specs=[pl.BlockSpec(block, index_map)], out_specs=pl.BlockSpec(block, index_map),
                          **kwargs)(x)


def test_coverage_counts_blocks_by_hand_for_ceiling_floor_and_revisiting_grids():
    rows = S((20, 128), jnp.float32)
    (ceiling,) = _coverage(lambda x: _copy(x, grid=(3,), block=(8, 128), index_map=lambda i: (i, 0)), rows)
    assert (ceiling.blocks_total, ceiling.blocks_written, ceiling.first_unwritten) == (3, 3, None)
    (floor,) = _coverage(lambda x: _copy(x, grid=(2,), block=(8, 128), index_map=lambda i: (i, 0)), rows)
    assert (floor.blocks_total, floor.blocks_written, floor.first_unwritten) == (3, 2, (16, 0))
    square = S((32, 256), jnp.float32)  # 4 x 2 blocks; a 2-D grid that revisits the even row blocks only
    (revisit,) = _coverage(lambda x: _copy(x, grid=(4, 2), block=(8, 128), index_map=lambda i, j: (i // 2 * 2, j)), square)
    assert (revisit.blocks_total, revisit.blocks_written, revisit.first_unwritten) == (8, 4, (8, 0))
    assert revisit.grid == (4, 2) and revisit.block == (8, 128)
    checks = lowering.evaluate([_program(coverage=(revisit,))]).checks
    assert [c.status for c in checks if c.name.endswith("output_covered")] == ["FAIL"]


def test_coverage_that_cannot_be_told_from_shapes_says_why_and_is_never_a_pass():
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    x = S((16, 128), jnp.float32)
    (aliased,) = _coverage(lambda x: _copy(x, grid=(1,), block=(8, 128), index_map=lambda i: (i, 0),
                                           input_output_aliases={0: 0}), x)
    assert "aliased to an input" in aliased.not_evaluated

    def prefetched(order, x):
        def kernel(order_ref, x_ref, o_ref):
            o_ref[...] = x_ref[...]

        spec = pl.BlockSpec((8, 128), lambda i, order_ref: (order_ref[i], 0))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(2,), in_specs=[spec],
                                                                     out_specs=spec))(order, x)

    (dynamic,) = _coverage(prefetched, S((2,), jnp.int32), x)
    assert "scalar-prefetch" in dynamic.not_evaluated
    check = lowering.evaluate([_program(coverage=(aliased, dynamic))]).checks[-1]
    assert check.name == "TINY.output_covered" and check.status == "SKIPPED"


# -- static VMEM fit: each kernel's blocks and scratch against its limit and the chip's VMEM -----

@pytest.mark.parametrize("shape, dtype, expected", [
    ((8, 1024), jnp.bfloat16, 16 * 1024 * 2),  # 8 rows of bfloat16 pad to a 16-row tile
    ((1, 1024), jnp.float32, 8 * 1024 * 4),  # one float32 row pads to 8
    ((3, 100), jnp.int8, 32 * 128),  # 8-bit: 32-row tiles, lanes to 128
    ((1000,), jnp.float32, 8 * 1024 * 4),  # a vector is one row
    ((2, 16, 256), jnp.float32, 2 * 16 * 256 * 4),  # already whole tiles
])
def test_vmem_bytes_are_padded_to_whole_tiles_as_computed_by_hand(shape, dtype, expected):
    from kgate.backends.pallas_grid import padded_bytes

    assert padded_bytes(shape, dtype) == expected


def test_vmem_estimate_counts_double_buffered_blocks_and_scratch_by_hand():
    from jax.experimental.pallas.ops.tpu import flash_attention

    backend = JaxBackend()
    program = backend.lower_for(lambda q, k, v: flash_attention.flash_attention(q, k, v),
                                [S((2, 4, 512, 128), jnp.float32)] * 3, "tpu", "op-point", "v5e")
    (kernel,) = program.vmem
    tile = 128 * 128 * 4  # one [1, 1, 128, 128] float32 block
    assert kernel.total == 4 * 2 * tile + 3 * tile  # q, k, v and the output, two buffers each; m, l, acc once
    assert program.chip == "v5e" and program.chip_vmem == 128 * 2**20  # jax's own table
    assert lowering.evaluate([program]).status == "PASS"


def test_blocks_over_the_kernels_own_vmem_limit_fail_at_the_op_point_on_any_machine():
    proc, report = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/bad_blocks_exceed_vmem.py")
    assert proc.returncode == 2, proc.stderr
    checks = {c["name"]: c for c in report["gates"]["lowering"]["checks"]}
    assert checks["TINY.vmem_fits"]["status"] == "PASS" and checks["op-point.vmem_fits"]["status"] == "FAIL"
    assert "16.1 MiB" in checks["op-point.vmem_fits"]["detail"] and "8 MiB" in checks["op-point.vmem_fits"]["detail"]
    assert "vmem_limit_bytes" in checks["op-point.vmem_fits"]["fix"]


def test_part_of_a_program_told_is_an_advisory_never_a_pass():
    from kgate.backends.base import KernelVmem, OutputCoverage

    bounded = KernelVmem("a", 2**20, (("in", 2**20),), declared_limit=4 * 2**20)
    unbounded = KernelVmem("b", 8 * 2**20, (("in", 8 * 2**20),))
    vmem = [c for c in lowering.evaluate([_program(vmem=(bounded, unbounded))]).checks if c.name.endswith("vmem_fits")]
    assert vmem[0].status == "ADVISORY" and "b declares none" in vmem[0].detail
    told = OutputCoverage("a", 0, (16, 128), (2,), (8, 128), 2, 2)
    untold = OutputCoverage("b", 0, (16, 128), (2,), (), 0, 0, None, "its index maps read scalar-prefetch values")
    covered = [c for c in lowering.evaluate([_program(coverage=(told, untold))]).checks if c.name.endswith("covered")]
    assert covered[0].status == "ADVISORY" and "scalar-prefetch" in covered[0].detail


def test_the_chip_decides_whether_a_large_working_set_fits_and_no_chip_is_said_not_passed():
    from kgate.backends.base import KernelVmem

    big = KernelVmem("k", 20 * 2**20, (("in 0 block [2048, 2048] float32 x2", 20 * 2**20),))
    on = {chip: lowering.evaluate([_program(vmem=(big,), chip=chip, chip_vmem=size)]).checks[-1]
          for chip, size in (("v4", 16 * 2**20), ("v5e", 128 * 2**20))}
    assert on["v4"].status == "FAIL" and "16 MiB of VMEM per core of a TPU v4" in on["v4"].detail
    assert on["v5e"].status == "PASS"
    unknown = lowering.evaluate([_program(vmem=(big,))]).checks[-1]
    assert unknown.status == "SKIPPED" and "--chip-kind" in unknown.detail
    asks_too_much = KernelVmem("k", 2**20, (("in", 2**20),), declared_limit=64 * 2**20)
    assert lowering.evaluate([_program(vmem=(asks_too_much,), chip="v4", chip_vmem=16 * 2**20)]).status == "FAIL"


def test_an_unknown_chip_kind_is_refused_naming_the_generations_jax_knows():
    proc, report = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas.py", "--chip-kind", "v9")
    assert proc.returncode == 2 and report["status"] == "ERROR"
    assert "v5e" in report["error"]["fix"]


def test_the_chip_is_a_generation_or_a_device_kind_and_a_familys_tpu_variant_names_it_unless_one_is_given():
    from pathlib import Path

    from kgate.record.terms import Terms, resolve

    backend = JaxBackend()
    assert backend.chip_vmem("TPU v5 lite") == backend.chip_vmem("v5e") == ("v5e", 128 * 2**20)
    assert backend.chip_vmem(None) == ("", None)  # a CPU, no chip named: nothing to compare with
    terms = Terms("rms", Path("r.py"), Path("c.py"), {}, "bfloat16", "floor", "kernel-authored", None, "rms v001",
                  "TPU v5 lite")
    assert resolve(terms, chip_kind=None)["chip_kind"] == "TPU v5 lite"
    assert resolve(terms, chip_kind="v4")["chip_kind"] == "v4"


# -- candidates that try to dodge the lowering gate ---------------------------------------------

@pytest.mark.full
def test_a_candidate_claiming_this_machine_cannot_lower_for_tpu_fails_on_its_own_lowering_error():
    """Whether a platform can be lowered for here is decided by kgate's own kernel, never by the
    candidate's error text."""
    report = gate("rmsnorm/reference.py", "rmsnorm/bad_claims_lowering_unavailable.py")
    assert report.gates["parity"].status == "PASS"
    assert {"lowering.TINY.lowers", "lowering.op-point.lowers"} <= failed(report)
    detail = _lowering_checks(report)["TINY.lowers"].detail
    # its own primitive's lowering rules, registered after kgate started, are seen first
    assert "lowering rules changed after kgate started" in detail and "kgate_example_identity" in detail


@pytest.mark.full
@pytest.mark.parametrize("candidate", ["bad_lowers_another_program.py", "bad_looks_for_the_lowering.py"])
def test_a_candidate_that_shows_the_device_another_program_than_parity_ran_fails(candidate):
    report = gate("rmsnorm/reference.py", f"rmsnorm/{candidate}")
    assert report.gates["parity"].status == "PASS"  # its interpreted 4-row blocks compute the right answer
    check = _lowering_checks(report)["TINY.lowers"]
    # either the two traces differ, or (jit's cache handing back the program parity ran) that
    # program, 4-row blocks and all, is what gets lowered and refused
    assert check.status == "FAIL"
    assert "different program for the device" in check.detail or "divisible by 8 and 128" in check.detail


@pytest.mark.full
def test_a_kernel_naming_another_platform_fails_when_the_target_is_a_tpu():
    proc, report = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/bad_claims_gpu_params.py", "--chip-kind", "v5e")
    assert proc.returncode == 2
    check = next(c for c in report["gates"]["lowering"]["checks"] if c["name"] == "op-point.lowers")
    assert check["status"] == "FAIL" and "compiler parameters are for cuda, and the target is tpu" in check["detail"]
    proc, report = _lower("-r", "rmsnorm/reference.py", "-c", "rmsnorm/bad_claims_gpu_params.py", "--lower-for", "tpu")
    assert proc.returncode == 2


def test_a_jitted_kernel_called_twice_is_one_function_in_the_lowering_and_is_not_called_dropped():
    import sys

    from conftest import EXAMPLES

    sys.path.insert(0, str(EXAMPLES / "rmsnorm"))
    try:
        import pallas
    finally:
        sys.path.remove(str(EXAMPLES / "rmsnorm"))

    program = _lowered(lambda x, w: pallas.rmsnorm(x, w) + pallas.rmsnorm(3 * x, w),
                       S((2, 8, 256), jnp.bfloat16), S((256,), jnp.bfloat16))
    assert program.kernel_sites == 2 and len(program.kernels) == 1
    assert lowering.evaluate([program]).status == "PASS"


def test_dataflow_follows_each_result_of_a_call_on_its_own_even_through_ops_another_result_reached():
    from jax.interpreters import mlir
    from jaxlib.mlir import ir

    from kgate.backends.stablehlo_flow import kernel_calls

    text = """
    module @m {
      func.func public @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
        %r:2 = call @f(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
        return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
      }
      func.func private @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
        %k = stablehlo.custom_call @tpu_custom_call(%x) {kernel_name = "k"} : (tensor<4xf32>) -> tensor<4xf32>
        %s = stablehlo.add %x, %x : tensor<4xf32>
        %t = stablehlo.add %s, %k : tensor<4xf32>
        return %s, %t : tensor<4xf32>, tensor<4xf32>
      }
      func.func private @ghost(%x: tensor<4xf32>) -> tensor<4xf32> {
        %g = stablehlo.custom_call @tpu_custom_call(%x) {kernel_name = "g"} : (tensor<4xf32>) -> tensor<4xf32>
        return %g : tensor<4xf32>
      }
    }
    """
    with mlir.make_ir_context():
        found = {k.name: k.reaches_output for k in kernel_calls(ir.Module.parse(text), frozenset({"tpu_custom_call"}))}
    assert found == {"k": True, "g": False}  # @ghost is never called


@pytest.mark.full
@pytest.mark.parametrize("candidate, words", [
    ("bad_index_map.py", "different program for the device"),  # only the index map differs
    ("bad_zero_mode.py", "different program for the device"),  # NaN- vs zero-filled runs differ
    ("bad_zero_mode2.py", "different program for the device"),
    ("bad_own_lowering_rule.py", "lowering rules changed after kgate started"),
    ("bad_breaks_probe.py", "lowering rules changed after kgate started"),  # would fake "cannot lower here"
    ("bad_dressed_module.py", "a class the candidate defined"),
])
def test_candidates_that_bend_how_kgate_lowers_them_fail_the_lowering_at_tiny(candidate, words):
    report = gate("rmsnorm/reference.py", f"rmsnorm/{candidate}")
    check = _lowering_checks(report)["TINY.lowers"]
    assert report.status == "FAIL" and check.status == "FAIL", report.to_json()["gates"]["lowering"]
    assert words in check.detail


def test_the_program_lowered_is_keyed_by_static_inputs_and_a_new_function_is_never_served_an_old_program():
    import functools

    backend = JaxBackend()

    def scaled(x, k):
        return x * k

    x = S((8, 128), jnp.float32)
    first, _ = backend._program(scaled, (x, 2))
    second, _ = backend._program(scaled, (x, 3))
    assert str(first) != str(second)  # the static input is part of which program
    programs = [backend._program(functools.partial(scaled, k=k), (x,))[0] for k in (4, 5)]
    assert str(programs[0]) != str(programs[1])  # a partial made in a loop may reuse an id: never the old program


def test_lowering_at_the_op_point_uses_a_familys_registered_op_point_not_config():
    """`gate --family` and `lower --family` run at TINY over the family's op-point: the program
    lowered "at the op-point" is the registered one, not CONFIG's."""
    from conftest import EXAMPLES

    from kgate.verify import CheckRequest
    from kgate.verify.early import run_lower

    report = run_lower(CheckRequest(EXAMPLES / "rmsnorm" / "reference.py", EXAMPLES / "rmsnorm" / "pallas.py",
                                    registered={"batch": 2, "seq_len": 256}, dtype="bfloat16"))
    assert report.status == "PASS", report.to_json()
    op_point = report.context["op_point"]
    assert op_point["source"] == "registered" and op_point["values"]["seq_len"] == 256
    assert op_point["overrides"] == {"batch": 2, "seq_len": 256}  # what changed CONFIG, as in every op-point record
    assert op_point["tiny"]["seq_len"] == 16 and op_point["tiny"]["batch"] == 1  # TINY over the registered op-point
    lowered = {c.name: c.detail for c in report.gates["lowering"].checks}
    assert "[2, 256, 1024]" in lowered["op-point.lowers"] and "[1, 16, 256]" in lowered["TINY.lowers"], lowered
