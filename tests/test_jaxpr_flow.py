"""Kernel reachability and ablation on real traced programs with real Pallas kernels."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from kgate.backends import get_backend
from kgate.backends.jaxpr_flow import kernel_sites


def _double_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


def double(x):
    return pl.pallas_call(_double_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


X = jnp.arange(16.0).reshape(2, 8)


def sites(fn, *args):
    return kernel_sites(jax.make_jaxpr(fn)(*args))


def test_kernel_inside_nested_jit_reaches_output():
    (site,) = sites(jax.jit(lambda x: jax.jit(double)(x) + 1), X)
    assert site.reaches_output and site.exact and "_double_kernel" in site.name


def test_kernel_dropped_inside_nested_jit_is_a_ghost():
    def inner(x):
        _ = double(x)
        return x + 1

    (site,) = sites(jax.jit(lambda x: jax.jit(inner)(x)), X)
    assert not site.reaches_output


def test_kernel_in_one_cond_branch_reaches_output():
    (site,) = sites(lambda p, x: jax.lax.cond(p, double, lambda y: y, x), True, X)
    assert site.reaches_output


def test_kernel_whose_cond_result_is_dropped_is_a_ghost():
    def f(p, x):
        _ = jax.lax.cond(p, double, lambda y: y, x)
        return x

    (site,) = sites(f, True, X)
    assert not site.reaches_output


def test_kernel_feeding_a_scan_carry_reaches_output_through_the_loop():
    def f(x):
        def body(carry, _):
            return carry + double(carry), None

        out, _ = jax.lax.scan(body, x, None, length=3)
        return out

    (site,) = sites(f, X)
    assert site.reaches_output


def test_kernel_feeding_a_dropped_scan_output_is_a_ghost():
    def f(x):
        def body(carry, _):
            return carry + 1, double(carry)

        out, _ys = jax.lax.scan(body, x, None, length=3)
        return out

    (site,) = sites(f, X)
    assert not site.reaches_output


def test_kernel_in_while_condition_taints_the_carry():
    def f(x):
        return jax.lax.while_loop(lambda c: jnp.sum(double(c)) < 100.0, lambda c: c + 1.0, x)

    (site,) = sites(f, X)
    assert site.reaches_output


def test_ablation_counts_the_elements_a_kernel_moves():
    backend = get_backend()
    whole = backend.inspect(lambda x: double(x) + 1, (X,)).ablation
    assert whole.evaluated and whole.changed_elements == whole.total_elements == 16
    half = backend.inspect(lambda x: jnp.concatenate([double(x[:1]), x[1:]]), (X,)).ablation
    assert (half.changed_elements, half.total_elements) == (8, 16)
    masked = backend.inspect(lambda x: jnp.where(jnp.zeros_like(x, bool), double(x), x), (X,)).ablation
    assert masked.changed_elements == 0


def test_ablation_reaches_kernels_inside_loops_and_branches():
    def f(x):
        return jax.lax.fori_loop(0, 2, lambda i, c: double(c), x)

    def g(p, x):
        return jax.lax.cond(p, lambda y: double(y) * 0, lambda y: y, x)

    backend = get_backend()
    loop = backend.inspect(f, (X,))
    assert loop.kernel_sites[0].reaches_output
    assert loop.ablation.evaluated and loop.ablation.changed_elements == 16, loop.ablation
    # Inside a branch, a kernel multiplied by zero is still a ghost.
    assert backend.inspect(g, (True, X)).ablation.changed_elements == 0


@pytest.mark.accelerator
def test_compiled_program_holds_the_kernel_custom_call_on_an_accelerator():
    backend = get_backend()
    if not backend.platform in ("tpu", "gpu"):
        pytest.skip("needs a TPU or GPU: the compiled custom call exists only there")
    facts = backend.inspect(lambda x: double(x), (jnp.ones((8, 128)),))
    assert facts.custom_call_targets


# -- the arithmetic done outside the kernels --------------------------------------------------


def work(fn, *args):
    from kgate.backends.jaxpr_flow import arithmetic

    return arithmetic(jax.make_jaxpr(fn)(*args))


A = jnp.ones((4, 8))
B = jnp.ones((8, 3))


def test_arithmetic_counts_dots_by_multiply_adds_and_everything_else_by_its_elements():
    assert work(lambda a, b: a @ b, A, B).outside == 2 * 4 * 3 * 8
    assert work(lambda a: jnp.exp(a) + 1, A).outside == 2 * 32
    assert work(lambda a: jnp.sum(a, axis=-1), A).outside == 32  # a reduction: its input's elements
    # Data movement and conversions are free: a candidate's reshapes and casts cost it nothing.
    assert work(lambda a: a.T.reshape(2, 16).astype(jnp.bfloat16)[:, ::-1], A).outside == 0


def test_arithmetic_leaves_the_kernels_and_dead_code_out_and_follows_calls_branches_and_loops():
    both = work(lambda x: double(x) + 1, X)
    assert both.outside == 16 and both.kernel_calls == 1  # the kernel's multiply is its own work
    assert work(lambda x: (jnp.exp(x), x + 1)[1], X).outside == 16  # the unused exp is not work
    assert work(jax.jit(lambda x: jax.nn.softmax(x)), X).outside > 0  # through jit and custom_jvp
    assert work(lambda p, x: jax.lax.cond(p, lambda y: y * y * y, lambda y: y + 1, x), True, X).outside == 32

    def scanned(x):
        return jax.lax.scan(lambda c, _: (c * 2, None), x, None, length=5)[0]

    assert work(scanned, X).outside == 5 * 16
    static = work(lambda x: jax.lax.fori_loop(0, 4, lambda i, c: c + 1, x), X)
    assert static.outside >= 4 * 16 and static.unknown_loops == 0


def test_a_loop_of_unknown_trip_count_outside_the_kernels_is_counted_once_and_said():
    def rows_one_by_one(x):
        n = jnp.int32(x.shape[0]) + (x[0, 0] * 0).astype(jnp.int32)  # a bound known only at run time
        return jax.lax.fori_loop(0, n, lambda i, c: c.at[i].set(jnp.exp(c[i])), x)

    counted = work(rows_one_by_one, X)
    assert counted.unknown_loops == 1


def test_operations_that_hand_back_an_operand_unchanged_are_left_out_of_the_essential_program():
    from kgate.backends.jaxpr_flow import without_identities

    x = jnp.linspace(0.5, 2.0, 16, dtype=jnp.float32).reshape(2, 8)

    def dressed(v):
        v = jax.lax.reduce_precision(v + 0.0, exponent_bits=8, mantissa_bits=23)
        y = jax.jit(lambda u: jax.lax.optimization_barrier(u))(jnp.exp(v))  # inside a nested jit
        return jnp.maximum(y, 0.0) * 2.0  # a ReLU on positive values does nothing here

    run, dropped = without_identities(jax.make_jaxpr(dressed)(x), [x])
    assert {"add", "max", "optimization_barrier", "reduce_precision"} <= set(dropped)
    assert "mul" not in dropped and "exp" not in dropped  # what computes stays
    (out,) = run(x)
    assert np.array_equal(np.asarray(out), np.asarray(dressed(x)))
    program = jax.jit(run).lower(x).as_text()
    assert "reduce_precision" not in program and "optimization_barrier" not in program and "exponential" in program


def test_a_loop_whose_used_results_are_its_operands_is_left_out_and_one_that_computes_stays():
    from kgate.backends.jaxpr_flow import without_identities

    x = jnp.linspace(0.5, 2.0, 16, dtype=jnp.float32).reshape(2, 8)

    def dressed(v):
        v = jax.lax.fori_loop(0, 3, lambda i, u: jnp.clip(u, -1e30, 1e30), v)  # a counter, and v handed back
        count, rows = jax.lax.scan(lambda n, row: (n + 1, jnp.where(jnp.isnan(row), 0.0, row)), 0, v)
        doubled = jax.lax.fori_loop(0, 2, lambda i, u: u * 2.0, rows)  # real work in a loop
        return doubled + count  # the scan's count is used: a value of its own

    run, dropped = without_identities(jax.make_jaxpr(dressed)(x), [x])
    assert dropped.count("scan") == 1  # the clamping loop; the counting scan's count is used, the doubling computes
    (out,) = run(x)
    assert np.array_equal(np.asarray(out), np.asarray(dressed(x)))
    assert "clamp" not in jax.jit(run).lower(x).as_text()


def test_a_branch_always_taken_and_a_round_trip_back_to_a_value_already_held_are_left_out():
    from kgate.backends.jaxpr_flow import without_identities

    x = jnp.linspace(0.5, 2.0, 16, dtype=jnp.float32).reshape(2, 8)
    reverse = jnp.arange(7, -1, -1)

    def dressed(v):
        v = jax.lax.cond(jnp.all(jnp.isfinite(v)), jnp.exp, jnp.zeros_like, v)  # always the first branch here
        v = jnp.real(v.astype(jnp.complex64))  # through another type and back
        v = jnp.take(jnp.take(v, reverse, axis=-1), reverse, axis=-1)  # a permutation undone
        return v * 3.0

    run, dropped = without_identities(jax.make_jaxpr(dressed)(x), [x])
    assert {"cond", "real"} <= set(dropped) and "mul" not in dropped
    (out,) = run(x)
    assert np.array_equal(np.asarray(out), np.asarray(dressed(x)))
    program = jax.jit(run).lower(x).as_text()
    assert "case" not in program and "gather" not in program and "complex" not in program and "exponential" in program


@pytest.mark.parametrize("inside", ["plain", "jit", "cond"])
def test_an_ffi_call_feeding_the_output_is_work_outside_the_program_and_fails_firing(inside):
    """Native code behind jax.ffi.ffi_call can keep state between calls (a cache that replays
    the last answer for the same buffer made a 2.7x slower kernel measure 2.2-2.8x faster): it
    is graded as a host callback is, wherever it sits. Traced only: nothing is registered."""
    from kgate.backends.base import Ablation, ProgramFacts
    from kgate.backends.jaxpr_flow import program_sites
    from kgate.gates.firing import _host_callback_checks

    def native(x):
        return jax.ffi.ffi_call("cached_rmsnorm", jax.ShapeDtypeStruct(x.shape, x.dtype))(x, eps=np.float32(1e-6))

    wrapped = {"plain": native, "jit": jax.jit(native),
               "cond": lambda x: jax.lax.cond(x[0] > 0, native, lambda y: y * 2, x)}[inside]
    _, callbacks = program_sites(jax.make_jaxpr(wrapped)(jnp.ones(8)))
    (site,) = callbacks
    assert site.name == "ffi_call: cached_rmsnorm" and site.reaches_output

    def facts(sites):
        return ProgramFacts(platform="cpu", kernel_sites=(), program_text="", compiled_text="", custom_call_targets=(),
                            ablation=Ablation(False, "no kernel"), host_callbacks=tuple(sites))

    (check,) = _host_callback_checks(facts(callbacks))
    assert check.status == "FAIL" and "FFI call" in check.detail and "cached_rmsnorm" in check.detail
    _, unused = program_sites(jax.make_jaxpr(lambda x: (native(x), x * 2)[1])(jnp.ones(8)))
    (advisory,) = _host_callback_checks(facts(unused))  # one that feeds nothing is said, not failed
    assert advisory.status == "ADVISORY"


def test_an_output_tree_of_anything_but_plain_containers_and_keys_is_refused():
    # jax rebuilds tuples, lists, dicts and None in C++; any other node, or a dict key of a class of its
    # own (its __hash__ runs as the dict is rebuilt), is Python code run on every compiled call
    import typing
    from collections import namedtuple

    import jax
    import jax.numpy as jnp

    from kgate.backends.base import KernelFailure
    from kgate.backends.jax_backend import refuse_foreign_nodes

    class Key(str):
        def __hash__(self):
            return str.__hash__(self)

    Pair = namedtuple("Pair", "a b")

    class Cached(Pair):  # a namedtuple whose constructor is its own
        def __new__(cls, a, b):
            return super().__new__(cls, a, a)

    class Typed(typing.NamedTuple):
        a: typing.Any
        b: typing.Any

    def tree(fn):
        return jax.jit(fn).lower(jnp.ones(2)).compile().out_tree

    refuse_foreign_nodes(tree(lambda x: {"a": x, "b": [x, None, (x,), {1: x}]}))  # plain: nothing raised
    refuse_foreign_nodes(tree(lambda x: (Pair(x, x), Typed(x, x))))  # stock namedtuples: their generated code
    for fn, named in ((lambda x: Cached(x, x), "Cached"), (lambda x: {Key("a"): x}, "dict keyed by .*Key")):
        with pytest.raises(KernelFailure, match=named):
            refuse_foreign_nodes(tree(fn))


def test_the_transplant_puts_another_runs_kernel_results_in_place_and_says_why_it_cannot():
    from jax.experimental.pallas import tpu as pltpu

    from kgate.backends.jaxpr_flow import NotTransplanted, transplant

    other = X + 100.0
    with pltpu.force_tpu_interpret_mode():
        closed = jax.make_jaxpr(jax.jit(lambda x: double(x) + x))(X)  # a kernel, and a residual beside it
        out, = transplant(closed, [X], [other])
        np.testing.assert_array_equal(np.asarray(out), np.asarray(other * 2 + X))  # the kernel's from the other run
        # a kernel in a loop or a branch: both runs stepped through, launch by launch
        looped = jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, _: (double(c), None), x, None, length=2)[0])(X)
        out, = transplant(looped, [X], [other])
        np.testing.assert_array_equal(np.asarray(out), np.asarray(other * 4))  # the other run's second launch
        taken = jax.make_jaxpr(lambda x: jax.lax.cond(x[0, 0] == x[0, 0], double, lambda v: v, x) + x)(X)
        out, = transplant(taken, [X], [other])
        np.testing.assert_array_equal(np.asarray(out), np.asarray(other * 2 + X))
        counted = jax.make_jaxpr(lambda x: jax.lax.while_loop(lambda c: c[0, 1] < 50.0, double, x))(X)
        with pytest.raises(NotTransplanted, match="do not line up|different numbers"):  # each run its own steps
            transplant(counted, [X], [other])
