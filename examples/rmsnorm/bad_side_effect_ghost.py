"""KNOWN-BAD (ghost kernel that survives dead-code elimination): the kernel is declared to
have side effects, so the compiler keeps its custom call although its result is discarded,
and a count of kernel custom calls in the compiled program finds one. The output is the
reference's jnp code. Dataflow (over the jaxpr and over the lowered program) and the
ablation show that the kernel's result reaches nothing."""

import functools

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

import reference
from pallas import rmsnorm_kernel


@jax.jit
def workload(x, w):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(pl.cdiv(x2.shape[0], 8),),
        in_specs=[pl.BlockSpec((8, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((8, d), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(has_side_effects=True),
    )(x2, w.reshape(1, d))
    return reference.workload(x, w)
