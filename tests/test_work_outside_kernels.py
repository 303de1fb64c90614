"""The kernels do the arithmetic: the operations left to plain array code around a
candidate's kernels, against the reference's own, counted on the bundled examples.

A kernel that does one cheap step (negates, transposes, exponentiates, applies the weight)
while jnp around it computes the answer passes every stand-in of the bypass; the count of
what stays outside it does not. The honest bundled kernels stay far below the limit."""

from pathlib import Path

import jax
import pytest

from conftest import EXAMPLES, failed, gate
from kgate.backends import get_backend
from kgate.backends.jax_backend import bind_static
from kgate.backends.jaxpr_flow import arithmetic
from kgate.gates.firing import OUTSIDE_WORK_LIMIT
from kgate.problem.module import load_pair


COUNTING = Path(__file__).parent / "work_counting"  # candidates written against the count itself


def outside_share(reference: str, candidate: str, unknown_loops: int = 0) -> float:
    backend = get_backend("jax")
    with load_pair(EXAMPLES / reference, EXAMPLES / candidate, use_tiny=True) as pair:
        inputs, _ = backend.create_inputs(pair.reference, 42, None)

        def count(fn):
            bound, args = bind_static(fn, inputs)
            return arithmetic(jax.make_jaxpr(bound)(*args))

        ref, cand = count(pair.reference.entry), count(pair.candidate.entry)
    assert not ref.error and not cand.error and ref.outside > 0 and cand.kernel_calls > 0
    assert cand.unknown_loops == unknown_loops
    return cand.outside / ref.outside


HONEST = [
    ("rmsnorm/reference.py", "rmsnorm/pallas.py"),
    ("rmsnorm/reference.py", "rmsnorm/pallas_tiles.py"),
    ("softmax/reference.py", "softmax/pallas.py"),
    ("cumsum/reference.py", "cumsum/pallas.py"),
    ("jax_ops/matmul_reference.py", "jax_ops/matmul_pallas.py"),
    ("jax_ops/attention_reference.py", "jax_ops/flash_attention_pallas.py"),
    ("model_jax/reference.py", "model_jax/pallas.py"),
    # glue the count must not weigh: stack, tile, a loop of run-time length whose only glue is its counter
    ("rmsnorm/reference.py", str(COUNTING / "rms_stack_good.py")),
    ("rmsnorm/reference.py", str(COUNTING / "rms_tile_good.py")),
    ("rmsnorm/reference.py", str(COUNTING / "rms_while_good.py")),
    # a reference whose one scatter-add is weighed per update, not as its one-operation combiner
    (str(COUNTING / "segment_sum_reference.py"), str(COUNTING / "segment_sum_good.py")),
]
CHEAP_STEP = [
    ("rmsnorm/reference.py", "rmsnorm/bad_kernel_negates.py"),
    ("rmsnorm/reference.py", "rmsnorm/bad_kernel_only_applies_weight.py"),
    ("rmsnorm/reference.py", "rmsnorm/bad_kernel_copies_result.py"),
    ("rmsnorm/reference.py", "rmsnorm/bad_cancels_kernel.py"),
    ("softmax/reference.py", "softmax/bad_kernel_only_exponentiates.py"),
    ("jax_ops/matmul_reference.py", "jax_ops/matmul_bad_kernel_transposes.py"),
    # the work hidden where an earlier count under-weighed it: a reduction's or a scatter's
    # combiner, a table read by gather, ragged_dot, a triangular solve that multiplies
    ("rmsnorm/reference.py", str(COUNTING / "bad_rms_reduce.py")),
    ("softmax/reference.py", str(COUNTING / "bad_sm_reduce.py")),
    ("softmax/reference.py", str(COUNTING / "bad_sm_window_max.py")),
    ("rmsnorm/reference.py", str(COUNTING / "bad_rms_scatter.py")),
    ("jax_ops/matmul_reference.py", str(COUNTING / "bad_mm_ragged.py")),
    ("jax_ops/matmul_reference.py", str(COUNTING / "bad_mm_trisolve.py")),
]


def test_a_loop_that_looks_like_one_trip_but_never_counts_up_is_of_unknown_length():
    # `while c[0] < 1` with the counter set, not incremented: counted once, it would hide the rows
    outside_share("rmsnorm/reference.py", str(COUNTING / "bad_rms_while.py"), unknown_loops=1)


@pytest.mark.full
def test_honest_kernels_leave_little_arithmetic_outside_and_cheap_steps_leave_the_answer_outside():
    honest = {c: outside_share(r, c) for r, c in HONEST}
    cheats = {c: outside_share(r, c) for r, c in CHEAP_STEP}
    assert max(honest.values()) < OUTSIDE_WORK_LIMIT / 1.5, honest
    assert min(cheats.values()) >= OUTSIDE_WORK_LIMIT, cheats


def own_share(reference: str, candidate: str) -> float:
    """The share of the candidate's own arithmetic done outside its kernels."""
    backend = get_backend("jax")
    with load_pair(EXAMPLES / reference, EXAMPLES / candidate, use_tiny=True) as pair:
        inputs, _ = backend.create_inputs(pair.reference, 42, None)
        bound, args = bind_static(pair.candidate.entry, inputs)
        counted = arithmetic(jax.make_jaxpr(bound)(*args))
    assert counted.inside is not None and counted.inside > 0
    return counted.outside / (counted.outside + counted.inside)


def test_against_the_candidate_s_own_work_a_scan_around_a_negating_kernel_is_most_of_it():
    # cumsum's reference is an O(n^2) triangular matmul: next to it an O(n) scan outside is nothing
    cheats = {c: (outside_share("cumsum/reference.py", c), own_share("cumsum/reference.py", c))
              for c in ("cumsum/bad_kernel_negates.py", "cumsum/bad_kernel_doubles.py")}
    assert all(against_reference < 0.01 and own >= OUTSIDE_WORK_LIMIT for against_reference, own in cheats.values()), cheats
    honest = {c: own_share(r, c) for r, c in HONEST}
    assert max(honest.values()) < OUTSIDE_WORK_LIMIT / 1.5, honest


@pytest.mark.full
@pytest.mark.parametrize("reference, candidate", [
    ("cumsum/reference.py", "cumsum/bad_kernel_negates.py"),
    ("cumsum/reference.py", "cumsum/bad_kernel_doubles.py"),
    ("rmsnorm/reference.py", "rmsnorm/bad_kernel_negates.py"),
    ("softmax/reference.py", "softmax/bad_kernel_only_exponentiates.py"),
    ("jax_ops/matmul_reference.py", "jax_ops/matmul_bad_kernel_transposes.py"),
])
def test_a_kernel_doing_one_cheap_step_passes_the_bypass_and_fails_the_arithmetic(reference, candidate):
    report = gate(reference, candidate)
    assert failed(report) == {"firing.kernel_does_the_arithmetic"}
    checks = {c.name: c for c in report.gates["firing"].checks}
    assert checks["kernel_does_the_work"].status == "PASS"  # no stand-in models the step
    assert "the kernels do a small step" in checks["kernel_does_the_arithmetic"].detail
    assert Path(EXAMPLES / candidate).read_text().startswith('"""KNOWN-BAD')
