"""The reference's program evaluated with float32 widened to float64: the oracle of last resort.

The float64 oracle recomputes the reference from float64 inputs. A reference that works in
float32 on purpose (`x.astype(jnp.float32)`, `preferred_element_type=jnp.float32`) casts them
straight back, so that oracle is the reference itself and its floor says nothing: an honest
float32 kernel that sums in another order is then graded against half an ulp. Here the
reference's traced program is evaluated again with every float32 (and complex64) value, literal,
constant, cast and accumulation type widened to float64 (complex128). Narrower types (bfloat16,
float16, 8-bit floats) are kept where the reference writes them: a cast to one is part of what
it computes, as is a `reduce_precision` to a format narrower than float32's.

Calls, branches and loops are evaluated through their own programs, widened the same way; a
program holding anything else that carries a program of its own (a kernel, a custom solve), or
that reinterprets a float's bits, cannot be widened faithfully and raises `Unwidenable`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jcore

WIDER = {np.dtype(np.float32): np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.complex128)}
FLOAT32_MANTISSA = 23

# primitives whose only program is a call: evaluated through it
_CALLS = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
          "remat": "jaxpr", "checkpoint": "jaxpr"}


class Unwidenable(Exception):
    """The program holds an operation that cannot be widened faithfully."""


def widened(fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """`fn(*args)` with float32 widened to float64 throughout (call under `jax.enable_x64`, with
    float64 `args`); the same output structure. Raises `Unwidenable`."""
    closed, shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    flat = jax.jit(lambda *a: evaluate(closed.jaxpr, closed.consts, a))(*args)
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shape), flat)


def _wide_dtype(dtype: Any) -> Any:
    try:
        return WIDER.get(np.dtype(dtype), dtype)
    except TypeError:  # an extended dtype (a PRNG key's)
        return dtype


def _wide_value(value: Any) -> Any:
    dtype = getattr(value, "dtype", None)
    if dtype is not None and _wide_dtype(dtype) is not dtype:
        return jnp.asarray(value, _wide_dtype(dtype))
    return value


def _program(value: Any) -> tuple[Any, Sequence[Any]]:
    if isinstance(value, jcore.ClosedJaxpr):
        return value.jaxpr, value.consts
    return value, ()


def _has_program(value: Any) -> bool:
    return isinstance(value, (jcore.ClosedJaxpr, jcore.Jaxpr)) or (
        isinstance(value, (tuple, list)) and any(_has_program(v) for v in value))


def evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """`jaxpr` on `args`, widened (see the module's docstring)."""
    env: dict[Any, Any] = {}
    for var, value in zip(jaxpr.constvars, consts):
        env[var] = _wide_value(value)
    for var, value in zip(jaxpr.invars, args):
        env[var] = _wide_value(value)

    def read(v: Any) -> Any:
        return _wide_value(v.val) if isinstance(v, jcore.Literal) else env[v]

    for eqn in jaxpr.eqns:
        outs = _apply(eqn, [read(v) for v in eqn.invars])
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
    return [read(v) for v in jaxpr.outvars]


def _closed(program: Any) -> Callable[..., list[Any]]:
    body, consts = _program(program)
    return lambda *a: evaluate(body, consts, a)


def _apply(eqn: Any, ins: list[Any]) -> list[Any]:
    name, params = eqn.primitive.name, eqn.params
    if name in _CALLS and _CALLS[name] in params:
        return _closed(params[_CALLS[name]])(*ins)
    if name == "cond":
        return list(jax.lax.switch(ins[0], [_closed(b) for b in params["branches"]], *ins[1:]))
    if name == "while":
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        cond, body = _closed(params["cond_jaxpr"]), _closed(params["body_jaxpr"])
        cc, bc, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        return list(jax.lax.while_loop(lambda c: cond(*cc, *c)[0], lambda c: tuple(body(*bc, *c)), tuple(init)))
    if name == "scan":
        k, n = params["num_consts"], params["num_carry"]
        step = _closed(params["jaxpr"])
        consts, carry, xs = ins[:k], ins[k:k + n], ins[k + n:]

        def f(c: tuple[Any, ...], x: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            out = step(*consts, *c, *x)
            return tuple(out[:n]), tuple(out[n:])

        last, ys = jax.lax.scan(f, tuple(carry), tuple(xs), length=params["length"], reverse=params["reverse"])
        return [*last, *ys]
    if name == "reduce_precision" and params["mantissa_bits"] >= FLOAT32_MANTISSA:
        return [ins[0]]  # a rounding to float32's own format: nothing once widened
    if name == "bitcast_convert_type" and jnp.issubdtype(getattr(ins[0], "dtype", np.int32), jnp.inexact):
        raise Unwidenable("a float's bits reinterpreted (bitcast_convert_type)")
    if any(_has_program(v) for v in params.values()):
        raise Unwidenable(f"{name} carries a program of its own")
    wide = {k: _wide_dtype(v) if isinstance(v, np.dtype) else v for k, v in params.items()}
    result = eqn.primitive.bind(*ins, **wide)
    return list(result) if eqn.primitive.multiple_results else [result]
