"""KNOWN-BAD (hostile: shows the device another index map): the same kernel, grid and blocks
everywhere, but outside interpret mode the output's index map sends every grid step to block
0, so on a TPU every other block of the output is never written. A program's text shows a
block by its shape only; kgate's comparison of the two traces spells in each block's index
map, memory space and pipeline mode, and the lowering FAILs."""
import functools
import jax, jax.numpy as jnp
from jax._src import config
from jax.experimental import pallas as pl
import reference
from pallas import rmsnorm_kernel

@functools.partial(jax.jit, static_argnames=("eps", "device"))
def _rms(x, w, *, eps, device):
    d = x.shape[-1]; x2 = x.reshape(-1, d); rows = x2.shape[0]; br = 8
    out_map = (lambda i: (0, 0)) if device else (lambda i: (i, 0))
    out = pl.pallas_call(functools.partial(rmsnorm_kernel, eps=eps),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype), grid=(pl.cdiv(rows, br),),
        in_specs=[pl.BlockSpec((br, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((br, d), out_map))(x2, w.reshape(1, d))
    return out.reshape(x.shape)

def workload(x, w):
    device = config.pallas_tpu_interpret_mode_context_manager.value is None
    return _rms(x, w, eps=reference.CONFIG["eps"], device=device)
