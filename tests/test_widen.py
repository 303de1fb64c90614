"""The float64 oracle of a reference that works in float32 on purpose: its program widened."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from kgate.backends.widen import Unwidenable, widened


def in_float32(x):  # a reference that computes in float32 whatever it is given, written to x's dtype
    upper = jnp.triu(jnp.ones((x.shape[-1],) * 2, jnp.float32))
    return (x.astype(jnp.float32) @ upper).astype(x.dtype)


def test_a_reference_that_casts_to_float32_is_widened_to_a_float64_answer():
    with jax.enable_x64(True):
        x = jax.random.normal(jax.random.key(0), (4, 256), jnp.float64) + 100.0  # a large offset: float32 sums drift
        true = np.cumsum(np.asarray(x), axis=-1)
        plain = np.asarray(in_float32(x))  # the float64 inputs cast straight back: float32 arithmetic
        wide = widened(in_float32, [x])
    assert np.abs(plain - true).max() > 1e-3  # the reference's own float32 error, invisible against itself
    assert wide.dtype == np.float64 and np.abs(np.asarray(wide) - true).max() < 1e-9


def test_loops_branches_and_calls_are_widened_and_narrower_types_kept():
    def program(x):
        y = jax.lax.fori_loop(0, 3, lambda i, c: c * 1.1, x.astype(jnp.float32))  # float32 through a loop
        y = jax.lax.cond(y.sum() > 0, lambda a: a + 1.0, lambda a: a - 1.0, y)
        y = jax.jit(lambda a: jax.lax.reduce_precision(a, exponent_bits=8, mantissa_bits=23))(y)  # float32's format
        q = jax.lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7)  # bfloat16 emulated: the algorithm's
        return y, x.astype(jnp.bfloat16), q, jnp.argmax(y)

    with jax.enable_x64(True):
        x = jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float64) + 1 / 3
        y, b, q, i = widened(program, [x])
        expected = np.asarray(x) * float(np.float32(1.1)) ** 3 + 1.0  # its constants as written: float32's 1.1
        assert y.dtype == np.float64 and np.abs(np.asarray(y) - expected).max() < 1e-12
        assert b.dtype == jnp.bfloat16 and np.array_equal(np.asarray(q), np.asarray(program(x)[2]))
        assert q.dtype == np.float64 and not np.array_equal(np.asarray(q), np.asarray(x))  # kept: still rounded
        assert int(i) == 7


def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


@pytest.mark.parametrize("program", [
    lambda x: jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.int32),  # a float's bits
    lambda x: pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32), interpret=True)(
        x.astype(jnp.float32)),  # a kernel carries a program of its own
])
def test_what_cannot_be_widened_faithfully_raises(program):
    with jax.enable_x64(True):
        with pytest.raises(Unwidenable):
            widened(program, [jnp.ones((8, 128), jnp.float64)])


def test_the_backend_says_when_its_float64_oracle_is_not_the_widened_program():
    from kgate.backends.jax_backend import JaxBackend

    backend = JaxBackend()
    x = np.linspace(-1.0, 1.0, 8 * 128, dtype=np.float32).reshape(8, 128)
    out = backend.run_oracle(in_float32, [x], "float64")
    assert backend.oracle_fallback == "" and out.leaves[0].dtype == np.float64  # widened
    backend.run_oracle(lambda a: pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, jnp.float32),
                                                interpret=True)(a.astype(jnp.float32)), [x], "float64")
    assert "pallas_call carries a program of its own" in backend.oracle_fallback  # the reason, for the report
    backend.run_oracle(in_float32, [x], "float64")
    assert backend.oracle_fallback == ""  # said per call, never left over from the last
