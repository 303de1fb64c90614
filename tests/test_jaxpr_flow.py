"""Kernel reachability and ablation on real traced programs with real Pallas kernels."""

import jax
import jax.numpy as jnp
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
