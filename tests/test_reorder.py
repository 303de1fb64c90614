"""The floor's second measurement: the reference with its sums taken in sequence."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kgate.backends import reorder
from kgate.backends.base import HostTree
from kgate.backends.jax_backend import JaxBackend
from kgate.gates import parity
from kgate.gates.parity import ParitySpec, Probe

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def sums(x, y, b):
    return (jnp.sum(x, axis=1), jnp.sum(x, axis=(0, 2)), jnp.cumsum(x, axis=1),
            jax.lax.cumsum(x, axis=2, reverse=True), x @ y, jnp.einsum("bij,bjk->bik", x, b),
            jax.jit(lambda a: jnp.mean(a))(x), jax.lax.fori_loop(0, 2, lambda i, c: c + jnp.sum(x, axis=2), x[..., 0]))


@pytest.mark.parametrize("cut", [False, True])
def test_every_sum_taken_in_sequence_is_the_same_sum(monkeypatch, cut):
    if cut:  # sums longer than the loop's steps are taken in chunks; contractions over budget in blocks
        monkeypatch.setattr(reorder, "MAX_STEPS", 3)
        monkeypatch.setattr(reorder, "DOT_UPDATES", 1000)
        monkeypatch.setattr(reorder, "DOT_LANES_AT_MOST", 100)
    args = [jax.random.normal(jax.random.key(i), s) for i, s in enumerate([(5, 37, 6), (6, 7), (5, 6, 3)])]
    with jax.enable_x64(True):
        exact = jax.jit(sums)(*(a.astype(jnp.float64) for a in args))
    got = reorder.reordered(sums, args)
    for g, e in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(exact)):
        assert g.dtype == jnp.float32 and g.shape == e.shape
        assert np.abs(np.asarray(g, np.float64) - np.asarray(e)).max() < 1e-5


def test_narrow_sums_are_accumulated_in_float32_and_other_operations_kept():
    x = jax.random.normal(jax.random.key(0), (4, 300)).astype(jnp.bfloat16)

    def program(a):
        return jnp.sum(a, axis=-1, dtype=jnp.bfloat16), jnp.max(a, axis=-1), jnp.argmax(a, axis=-1)

    total, top, where = reorder.reordered(program, [x])
    exact = np.asarray(x, np.float64).sum(axis=-1)
    assert total.dtype == jnp.bfloat16  # the reference's output type, from a float32 running sum
    assert np.abs(np.asarray(total, np.float64) - exact).max() <= 2 * 2.0**-8 * np.abs(exact).max()
    assert np.array_equal(np.asarray(top), np.asarray(program(x)[1]))
    assert np.array_equal(np.asarray(where), np.asarray(program(x)[2]))


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _long_rows() -> jax.Array:
    """The softmax example's heavy-tailed logits, 2048 to a row: row sums of a few large terms
    and many small ones, where XLA's tree of lanes is lucky and a sum in another order is not."""
    return (jax.random.t(jax.random.key(2), 3.0, (32, 2048)) * 2.0).astype(jnp.float32)


def _probe(backend: JaxBackend, reference, candidate, x, with_reordered: bool) -> Probe:
    inputs = (x,)
    reordered = backend.run_reordered(reference.workload, inputs) if with_reordered else None
    return Probe(seed=1, inputs=backend.to_host(inputs), reference=backend.run(reference.workload, inputs),
                 oracle=backend.run_oracle(reference.workload, inputs, "float64"), oracle_kind="float64",
                 candidate=backend.run(candidate.workload, inputs), reordered=reordered)


def test_an_honest_rewrite_that_sums_another_way_passes_once_the_order_is_measured():
    """softmax/xla_rewrite.py sums each row through a GEMM. On long rows where XLA's reduce is
    lucky it was off by 6x to 15x the reference's error (a false FAIL, first seen on the scales
    edge; here 9x on one probe); the reference with its sums in sequence is off by as much, and
    the floor counts it."""
    backend = JaxBackend()
    reference = _module(EXAMPLES / "softmax" / "reference.py", "softmax_reference_for_reorder")
    honest = _module(EXAMPLES / "softmax" / "xla_rewrite.py", "softmax_rewrite_for_reorder")
    x = _long_rows()
    spec = ParitySpec("floor")
    before = parity.evaluate(spec, [_probe(backend, reference, honest, x, with_reordered=False)])
    assert before.status == "FAIL"  # the reference's own order only: the false alarm
    after = parity.evaluate(spec, [_probe(backend, reference, honest, x, with_reordered=True)])
    assert after.status == "PASS", [c.detail for c in after.checks if c.status == "FAIL"]
    floor = after.details["probes"][0]["outputs"][0]["floor"]
    assert floor["reordered"]["elements"] > 0 and floor["max_abs"] > floor["reordered"]["reference_max_abs"]


class _Inline:
    def __init__(self, workload):
        self.workload = workload


def _softmax_sum_in(dtype):
    def workload(x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / jnp.sum(e.astype(dtype), axis=-1, keepdims=True, dtype=dtype).astype(jnp.float32)
    return workload


def _softmax_exp_in_float16(x):
    e = jnp.exp((x - jnp.max(x, axis=-1, keepdims=True)).astype(jnp.float16)).astype(jnp.float32)
    return e / jnp.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("bad", [_softmax_sum_in(jnp.bfloat16), _softmax_sum_in(jnp.float16), _softmax_exp_in_float16],
                         ids=["sum-in-bfloat16", "sum-in-float16", "exp-in-float16"])
def test_a_downgraded_softmax_still_fails_against_the_wider_floor(bad):
    backend = JaxBackend()
    reference = _module(EXAMPLES / "softmax" / "reference.py", "softmax_reference_for_reorder")
    result = parity.evaluate(ParitySpec("floor"), [_probe(backend, reference, _Inline(bad), _long_rows(), True)])
    assert result.status == "FAIL"
    assert result.details["probes"][0]["outputs"][0]["floor"]["reordered"]["elements"] > 0


def _tree(*leaves: np.ndarray) -> HostTree:
    return HostTree(structure="tuple", paths=tuple(f"out{i}" for i in range(len(leaves))), leaves=tuple(leaves))


def test_the_sequential_sum_counts_only_where_it_is_further_off_by_more_than_an_ulp():
    e = np.array([1.0, 1.0, 1.0, 2.0], np.float64)
    ulp = float(np.finfo(np.float32).eps)
    r = np.array([1.0, 1 + ulp, 1.0, 2.0], np.float32)
    twin = np.array([1 + 8 * ulp, 1.0, 1 + ulp, np.inf], np.float32)  # far; closer; within one ulp; not finite
    probe = Probe(seed=1, inputs=_tree(e), reference=_tree(r), oracle=_tree(e), oracle_kind="float64",
                  candidate=_tree(r), reordered=_tree(twin))
    measured = parity.floor_leaf(probe, 0)
    assert measured.dtype == np.float32
    assert list(measured) == [twin[0], r[1], r[2], r[3]]
    bf16 = jnp.bfloat16
    narrow = Probe(seed=1, inputs=_tree(e), reference=_tree(np.asarray(e, bf16)), oracle=_tree(e),
                   oracle_kind="float32", candidate=None, reordered=_tree(np.asarray(e + 2.0**-8, bf16)))
    # a bfloat16 output rounded the other way (one ulp) is rounding, not order: the floor stays the reference's
    assert parity.floor_leaf(narrow, 0) is narrow.reference.leaves[0]


def test_the_reference_is_measured_again_only_where_the_order_of_its_sums_can_show():
    x = jax.random.normal(jax.random.key(0), (8, 64)).astype(jnp.bfloat16)
    f32 = x.astype(jnp.float32)

    def summed_in_float32_written_narrow(a):
        return (a.astype(jnp.float32) / jnp.sum(a.astype(jnp.float32), axis=-1, keepdims=True)).astype(a.dtype)

    assert reorder.reordered(summed_in_float32_written_narrow, [x]) is None  # under one rounding of bfloat16
    assert reorder.reordered(lambda a: jnp.exp(a) * 2, [f32]) is None  # no sum at all
    assert reorder.reordered(lambda a: jnp.sum(a, axis=-1), [x]) is None  # jnp.sum adds bfloat16 in float32
    added_in_bfloat16 = reorder.reordered(lambda a: jax.lax.reduce_sum_p.bind(a, axes=(1,), out_sharding=None), [x])
    assert added_in_bfloat16 is not None and added_in_bfloat16.dtype == jnp.bfloat16
    assert reorder.reordered(lambda a: jnp.sum(a, axis=-1), [f32]) is not None  # a float32 output
    assert reorder.reordered(jax.jit(lambda a: jax.lax.fori_loop(0, 2, lambda i, c: c + a @ a.T, a @ a.T)), [f32]) \
        is not None  # sums inside a call and a loop
