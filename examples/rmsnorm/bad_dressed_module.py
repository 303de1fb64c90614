"""KNOWN-BAD (hostile: a TPU kernel dressed as Triton's): 4-row blocks (a TPU rejects them),
with compiler parameters of a subclass of pltpu.CompilerParams defined in a module named
`triton_params`, so that judging by module names would target a GPU this machine cannot lower
for and skip the gate. kgate classifies by jax's own class and refuses a class the candidate
defined."""
import functools
import jax, jax.numpy as jnp
from jax.experimental import pallas as pl
import reference
from pallas import rmsnorm_kernel
from triton_params import Params

@functools.partial(jax.jit, static_argnames=("eps",))
def _rms(x, w, *, eps):
    d = x.shape[-1]; x2 = x.reshape(-1, d); rows = x2.shape[0]; br = 4
    out = pl.pallas_call(functools.partial(rmsnorm_kernel, eps=eps),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype), grid=(pl.cdiv(rows, br),),
        in_specs=[pl.BlockSpec((br, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((br, d), lambda i: (i, 0)),
        compiler_params=Params(dimension_semantics=("parallel",)))(x2, w.reshape(1, d))
    return out.reshape(x.shape)

def workload(x, w):
    return _rms(x, w, eps=reference.CONFIG["eps"])
