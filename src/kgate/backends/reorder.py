"""The reference's program with its sums taken in another honest order: sequentially.

A floating-point sum's rounding depends on the order its terms are added in, and the order is
the kernel's to choose: XLA's reduce adds in a tree of vector lanes, a GEMM in blocks of eight, a
hand-written kernel often one column (or one block) after another. The reference's error against
the oracle measures only its own order, and can be lucky: on a 256 x 2048 row softmax whose row
sums are a few large terms and many small ones, XLA's reduce is off by 2e-7 where the same sums
taken left to right are off by 1e-5, and an honest rewrite that sums through a GEMM by 1.5e-6
(7x the reference's error, past the floor's default multiplier).

Here the reference's traced program is evaluated again with every floating sum taken in
sequence, accumulated in at least float32 (never narrower than the reference's own type):
`reduce_sum` and `cumsum` along the reduced axis, and `dot_general` along its contraction, in at
most `MAX_STEPS` steps (a longer sum is cut into that many chunks, each summed in the library's
own order: a blocked loop, as a tiled kernel runs) and, for a contraction, at most
`DOT_UPDATES` element updates in all. Its error against the oracle is a second measurement of
the floor: what an honest kernel summing in the worst order a real kernel uses can be off by.
Calls, branches and loops are evaluated through their own programs (`kgate.backends.reeval`);
every other equation is bound as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.extend import core as jcore

from kgate.backends import reeval

LANES = 8  # partial sums kept side by side, each taken in sequence: the narrowest vector a real kernel sums in
MAX_STEPS = 4096  # a sequential loop's steps at most: longer sums are taken in this many chunks
DOT_UPDATES = 2**27  # a contraction's element updates at most (lanes x output elements x steps)
DOT_LANES_AT_MOST = 2**25  # a contraction keeps its lanes only where lanes x output elements stay under this


SUMS = ("reduce_sum", "cumsum", "dot_general")


def reordered(fn: Callable[..., Any], args: Sequence[Any]) -> Any | None:
    """`fn(*args)` with every floating sum taken in sequence (see the module's docstring); None
    where no sum's order can show in an output (`order_shows`): nothing to measure."""
    closed, shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    if not order_shows(closed):
        return None
    return reeval.run_closed(closed, shape, args, REORDER)


def _sum_types(jaxpr: Any) -> list[Any]:
    """The type each floating sum in the program (its calls, branches and loops included) adds in."""
    found = []
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in SUMS:
            dtype = eqn.outvars[0].aval.dtype if name == "dot_general" else eqn.invars[0].aval.dtype
            if _floating(dtype):
                found.append(dtype)
        for sub in jcore.jaxprs_in_params(eqn.params):
            found.extend(_sum_types(sub))
    return found


def order_shows(closed: Any) -> bool:
    """Whether the order of the program's sums can show in its outputs beyond one rounding: it has
    a floating sum, and either an output of 32 bits or more, or a sum added in fewer. A float32
    sum written as bfloat16 or float16 is off by about sqrt(n) x 2^-24 of itself in one order or
    another, under half an ulp of the output (2^-9) until n passes 2^30."""
    types = _sum_types(closed.jaxpr)
    if not types:
        return False
    outputs = [v.aval.dtype for v in closed.jaxpr.outvars if _floating(getattr(v.aval, "dtype", None))]
    return any(jnp.dtype(t).itemsize >= 4 for t in outputs) or any(jnp.dtype(t).itemsize < 4 for t in types)


def _floating(dtype: Any) -> bool:
    try:
        return bool(jnp.issubdtype(dtype, jnp.floating))
    except TypeError:  # an extended dtype (a PRNG key's)
        return False


def _accumulator(dtype: Any) -> Any:
    """At least float32: an honest kernel never sums in less than the reference does."""
    return jnp.promote_types(dtype, jnp.float32)


def _front(x: Any, axes: Sequence[int]) -> Any:
    """`x` with `axes` moved to the front and flattened into one."""
    rest = [d for d in range(x.ndim) if d not in axes]
    n = math.prod(x.shape[a] for a in axes)
    return jnp.transpose(x, (*axes, *rest)).reshape((n, *(x.shape[d] for d in rest)))


def _cut(y: Any, lanes: int, steps: int) -> Any:
    """The terms along `y`'s first axis as (steps, chunk, lanes, rest...): term i goes to lane
    i % lanes, each lane's terms in order, `chunk` of them per step; zeros pad the end."""
    n = y.shape[0]
    per_lane = math.ceil(n / lanes)
    count = max(1, min(per_lane, steps))
    chunk = math.ceil(per_lane / count)
    count = math.ceil(per_lane / chunk)
    padded = count * chunk * lanes
    if padded > n:
        y = jnp.concatenate([y, jnp.zeros((padded - n, *y.shape[1:]), y.dtype)])
    return y.reshape((count, chunk, lanes, *y.shape[1:]))


def _sequential_sum(x: Any, axes: Sequence[int]) -> Any:
    acc = _accumulator(x.dtype)
    y = _front(x.astype(acc), sorted(axes))
    parts = _cut(y, min(LANES, y.shape[0]), MAX_STEPS)
    lanes, _ = jax.lax.scan(lambda s, part: (s + jnp.sum(part, axis=0), None), jnp.zeros(parts.shape[2:], acc), parts)
    return jnp.sum(lanes, axis=0).astype(x.dtype)


def _sequential_cumsum(x: Any, axis: int, reverse: bool) -> Any:
    """A running sum is taken in one lane: each prefix is the one before plus the next term."""
    acc = _accumulator(x.dtype)
    y = _front((jnp.flip(x, axis) if reverse else x).astype(acc), [axis])
    parts = _cut(y, 1, MAX_STEPS)[:, :, 0]

    def step(carry: Any, part: Any) -> tuple[Any, Any]:
        sums = carry + jnp.cumsum(part, axis=0)
        return sums[-1], sums

    _, sums = jax.lax.scan(step, jnp.zeros(parts.shape[2:], acc), parts)
    out = jnp.moveaxis(sums.reshape((-1, *sums.shape[2:]))[: x.shape[axis]], 0, axis)
    return (jnp.flip(out, axis) if reverse else out).astype(x.dtype)


def _contraction_first(x: Any, contract: Sequence[int], batch: Sequence[int], k: int) -> Any:
    free = [d for d in range(x.ndim) if d not in contract and d not in batch]
    y = jnp.transpose(x, (*contract, *batch, *free))
    return y.reshape((k, *(x.shape[d] for d in (*batch, *free))))


def _sequential_dot(eqn: Any, lhs: Any, rhs: Any) -> Any:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    out = eqn.outvars[0].aval
    acc = _accumulator(out.dtype)
    size = max(1, math.prod(out.shape))
    # each operand as (contraction, batch..., free...), the contraction flattened into one axis
    k = math.prod(lhs.shape[d] for d in lc)
    left, right = _contraction_first(lhs, lc, lb, k), _contraction_first(rhs, rc, rb, k)
    lanes = min(LANES, k) if LANES * size <= DOT_LANES_AT_MOST else 1
    steps = max(1, DOT_UPDATES // (lanes * size))
    left, right = _cut(left, lanes, steps), _cut(right, lanes, steps)
    batch = tuple(range(1, len(lb) + 2))  # the lane axis, then the batch axes
    numbers = (((0,), (0,)), (batch, batch))

    def step(total: Any, parts: tuple[Any, Any]) -> tuple[Any, None]:
        part = jax.lax.dot_general(parts[0], parts[1], numbers, precision=eqn.params.get("precision"),
                                   preferred_element_type=acc)
        return total + part, None

    total, _ = jax.lax.scan(step, jnp.zeros((lanes, *out.shape), acc), (left, right))
    return jnp.sum(total, axis=0).astype(out.dtype)


def _reorder_leaf(eqn: Any, ins: list[Any]) -> list[Any]:
    name, params = eqn.primitive.name, eqn.params
    if name == "reduce_sum" and _floating(ins[0].dtype) and params["axes"] and ins[0].size:
        return [_sequential_sum(ins[0], params["axes"])]
    if name == "cumsum" and _floating(ins[0].dtype) and ins[0].size:
        return [_sequential_cumsum(ins[0], params["axis"], params["reverse"])]
    if name == "dot_general" and _floating(eqn.outvars[0].aval.dtype) and ins[0].size and ins[1].size:
        return [_sequential_dot(eqn, *ins)]
    return reeval.bind(eqn, ins)


REORDER = reeval.Rewrite(value=lambda v: v, leaf=_reorder_leaf)
