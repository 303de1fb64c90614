"""The reference's traced program evaluated again, equation by equation, with some equations
replaced: the machinery shared by the float64 oracle (`kgate.backends.widen`) and the
reordered reference (`kgate.backends.reorder`).

Calls, branches and loops are evaluated through their own programs, with the same
replacements; every other equation goes to the `Rewrite`'s `leaf` rule, which binds it as it is
or computes its result another way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax.extend import core as jcore

# primitives whose only program is a call: evaluated through it
CALLS = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
         "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
         "remat": "jaxpr", "checkpoint": "jaxpr"}


@dataclass(frozen=True)
class Rewrite:
    """What changes: `value` maps every constant, input and literal; `leaf` computes the results
    of one equation that is not a call, a branch or a loop, from its (mapped) operands."""

    value: Callable[[Any], Any]
    leaf: Callable[[Any, list[Any]], list[Any]]


def run(fn: Callable[..., Any], args: Sequence[Any], rewrite: Rewrite) -> Any:
    """`fn(*args)` evaluated under `rewrite`, compiled; the same output structure."""
    closed, shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    return run_closed(closed, shape, args, rewrite)


def run_closed(closed: Any, shape: Any, args: Sequence[Any], rewrite: Rewrite) -> Any:
    """A traced program (`jax.make_jaxpr(fn, return_shape=True)(*args)`) evaluated under `rewrite`."""
    flat = jax.jit(lambda *a: evaluate(closed.jaxpr, closed.consts, a, rewrite))(*args)
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shape), flat)


def program(value: Any) -> tuple[Any, Sequence[Any]]:
    if isinstance(value, jcore.ClosedJaxpr):
        return value.jaxpr, value.consts
    return value, ()


def has_program(value: Any) -> bool:
    return isinstance(value, (jcore.ClosedJaxpr, jcore.Jaxpr)) or (
        isinstance(value, (tuple, list)) and any(has_program(v) for v in value))


def evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], rewrite: Rewrite) -> list[Any]:
    """`jaxpr` on `args`, under `rewrite`."""
    env: dict[Any, Any] = {}
    for var, value in zip(jaxpr.constvars, consts):
        env[var] = rewrite.value(value)
    for var, value in zip(jaxpr.invars, args):
        env[var] = rewrite.value(value)

    def read(v: Any) -> Any:
        return rewrite.value(v.val) if isinstance(v, jcore.Literal) else env[v]

    for eqn in jaxpr.eqns:
        outs = _apply(eqn, [read(v) for v in eqn.invars], rewrite)
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
    return [read(v) for v in jaxpr.outvars]


def _closed(body: Any, rewrite: Rewrite) -> Callable[..., list[Any]]:
    jaxpr, consts = program(body)
    return lambda *a: evaluate(jaxpr, consts, a, rewrite)


def _apply(eqn: Any, ins: list[Any], rewrite: Rewrite) -> list[Any]:
    name, params = eqn.primitive.name, eqn.params
    if name in CALLS and CALLS[name] in params:
        return _closed(params[CALLS[name]], rewrite)(*ins)
    if name == "cond":
        return list(jax.lax.switch(ins[0], [_closed(b, rewrite) for b in params["branches"]], *ins[1:]))
    if name == "while":
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        cond, body = _closed(params["cond_jaxpr"], rewrite), _closed(params["body_jaxpr"], rewrite)
        cc, bc, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        return list(jax.lax.while_loop(lambda c: cond(*cc, *c)[0], lambda c: tuple(body(*bc, *c)), tuple(init)))
    if name == "scan":
        k, n = params["num_consts"], params["num_carry"]
        step = _closed(params["jaxpr"], rewrite)
        consts, carry, xs = ins[:k], ins[k:k + n], ins[k + n:]

        def f(c: tuple[Any, ...], x: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            out = step(*consts, *c, *x)
            return tuple(out[:n]), tuple(out[n:])

        last, ys = jax.lax.scan(f, tuple(carry), tuple(xs), length=params["length"], reverse=params["reverse"])
        return [*last, *ys]
    return rewrite.leaf(eqn, ins)


def bind(eqn: Any, ins: Sequence[Any], params: dict[str, Any] | None = None) -> list[Any]:
    """The equation's primitive applied to `ins` (with `params` in place of its own)."""
    result = eqn.primitive.bind(*ins, **(eqn.params if params is None else params))
    return list(result) if eqn.primitive.multiple_results else [result]
