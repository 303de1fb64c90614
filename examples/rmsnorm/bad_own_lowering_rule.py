"""KNOWN-BAD (hostile: its own lowering rule): 4-row blocks (a TPU host rejects them), with
compiler parameters of the candidate's own class, for which its import registers a TPU
lowering rule (a dict entry in jax, no module attribute changes) that tries Mosaic and, when
Mosaic refuses, emits a bare tpu_custom_call named after the kernel. kgate snapshots jax's
lowering registries before the candidate is imported and FAILs a rule added from outside jax;
compiler parameters of a class the candidate defined FAIL too."""
import dataclasses, functools
import jax, jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax._src.pallas import core as pallas_core
from jax._src.pallas.mosaic import pallas_call_registration as reg
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
import reference
from pallas import rmsnorm_kernel

@dataclasses.dataclass(frozen=True)
class Params(pltpu.CompilerParams):
    pass

def _rule(ctx, *args, **params):
    try:
        return reg.pallas_call_tpu_lowering_rule(ctx, *args, **params)
    except Exception:
        types = [mlir.aval_to_ir_type(ctx.module_context, a) for a in ctx.avals_out]
        op = mlir.custom_call("tpu_custom_call", result_types=types, operands=list(args),
                              extra_attributes={"kernel_name": ir.StringAttr.get(params["name"] or "rmsnorm_kernel")})
        return op.results

pallas_core.register_lowering_rule(Params, _rule, "tpu")

@functools.partial(jax.jit, static_argnames=("eps",))
def _rms(x, w, *, eps):
    d = x.shape[-1]; x2 = x.reshape(-1, d); rows = x2.shape[0]; br = 4
    out = pl.pallas_call(functools.partial(rmsnorm_kernel, eps=eps),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype), grid=(pl.cdiv(rows, br),),
        in_specs=[pl.BlockSpec((br, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((br, d), lambda i: (i, 0)), compiler_params=Params())(x2, w.reshape(1, d))
    return out.reshape(x.shape)

def workload(x, w):
    return _rms(x, w, eps=reference.CONFIG["eps"])
