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


def outside_share(reference: str, candidate: str) -> float:
    backend = get_backend("jax")
    with load_pair(EXAMPLES / reference, EXAMPLES / candidate, use_tiny=True) as pair:
        inputs, _ = backend.create_inputs(pair.reference, 42, None)

        def count(fn):
            bound, args = bind_static(fn, inputs)
            return arithmetic(jax.make_jaxpr(bound)(*args))

        ref, cand = count(pair.reference.entry), count(pair.candidate.entry)
    assert not ref.error and not cand.error and ref.outside > 0 and cand.kernel_calls > 0
    return cand.outside / ref.outside


HONEST = [
    ("rmsnorm/reference.py", "rmsnorm/pallas.py"),
    ("rmsnorm/reference.py", "rmsnorm/pallas_tiles.py"),
    ("softmax/reference.py", "softmax/pallas.py"),
    ("cumsum/reference.py", "cumsum/pallas.py"),
    ("jax_ops/matmul_reference.py", "jax_ops/matmul_pallas.py"),
    ("jax_ops/attention_reference.py", "jax_ops/flash_attention_pallas.py"),
    ("model_jax/reference.py", "model_jax/pallas.py"),
]
CHEAP_STEP = [
    ("rmsnorm/reference.py", "rmsnorm/bad_kernel_negates.py"),
    ("rmsnorm/reference.py", "rmsnorm/bad_kernel_only_applies_weight.py"),
    ("rmsnorm/reference.py", "rmsnorm/bad_kernel_copies_result.py"),
    ("rmsnorm/reference.py", "rmsnorm/bad_cancels_kernel.py"),
    ("softmax/reference.py", "softmax/bad_kernel_only_exponentiates.py"),
    ("jax_ops/matmul_reference.py", "jax_ops/matmul_bad_kernel_transposes.py"),
]


def test_honest_kernels_leave_little_arithmetic_outside_and_cheap_steps_leave_the_answer_outside():
    honest = {c: outside_share(r, c) for r, c in HONEST}
    cheats = {c: outside_share(r, c) for r, c in CHEAP_STEP}
    assert max(honest.values()) < OUTSIDE_WORK_LIMIT / 1.5, honest
    assert min(cheats.values()) >= OUTSIDE_WORK_LIMIT, cheats


@pytest.mark.parametrize("reference, candidate", [
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
