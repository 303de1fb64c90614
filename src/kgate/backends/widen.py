"""The reference's program evaluated with float32 widened to float64: the oracle of last resort.

The float64 oracle recomputes the reference from float64 inputs. A reference that works in
float32 on purpose (`x.astype(jnp.float32)`, `preferred_element_type=jnp.float32`) casts them
straight back, so that oracle is the reference itself and its floor says nothing: an honest
float32 kernel that sums in another order is then graded against half an ulp. Here the
reference's traced program is evaluated again with every float32 (and complex64) value, literal,
constant, cast and accumulation type widened to float64 (complex128). Narrower types (bfloat16,
float16, 8-bit floats) are kept where the reference writes them: a cast to one is part of what
it computes, as is a `reduce_precision` to a format narrower than float32's.

Calls, branches and loops are evaluated through their own programs, widened the same way
(`kgate.backends.reeval`); a program holding anything else that carries a program of its own
(a kernel, a custom solve), or that reinterprets a float's bits, cannot be widened faithfully
and raises `Unwidenable`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

from kgate.backends import reeval

WIDER = {np.dtype(np.float32): np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.complex128)}
FLOAT32_MANTISSA = 23


class Unwidenable(Exception):
    """The program holds an operation that cannot be widened faithfully."""


def widened(fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """`fn(*args)` with float32 widened to float64 throughout (call under `jax.enable_x64`, with
    float64 `args`); the same output structure. Raises `Unwidenable`."""
    return reeval.run(fn, args, WIDEN)


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


def _widen_leaf(eqn: Any, ins: list[Any]) -> list[Any]:
    name, params = eqn.primitive.name, eqn.params
    if name == "reduce_precision" and params["mantissa_bits"] >= FLOAT32_MANTISSA:
        return [ins[0]]  # a rounding to float32's own format: nothing once widened
    if name == "bitcast_convert_type" and jnp.issubdtype(getattr(ins[0], "dtype", np.int32), jnp.inexact):
        raise Unwidenable("a float's bits reinterpreted (bitcast_convert_type)")
    if any(reeval.has_program(v) for v in params.values()):
        raise Unwidenable(f"{name} carries a program of its own")
    return reeval.bind(eqn, ins, {k: _wide_dtype(v) if isinstance(v, np.dtype) else v for k, v in params.items()})


WIDEN = reeval.Rewrite(value=_wide_value, leaf=_widen_leaf)
