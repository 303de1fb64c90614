"""KNOWN-BAD (hostile: breaks kgate's availability probe): 4-row blocks (a TPU rejects
them); its import registers a TPU-specific lowering for pallas_call that raises "Unknown
backend tpu" for a kernel whose body is named `copy` (kgate's own probe) and lowers every other
kernel as jax does, so that kgate would believe TPU cannot be lowered for here. The rule comes
from outside jax, registered after kgate started: the lowering FAILs on that."""
from jax._src.interpreters import mlir
from jax._src.pallas import pallas_call as pc
import reference
from pallas import rmsnorm

_generic = pc._pallas_call_lowering

def _rule(ctx, *args, **params):
    src = str(getattr(params["jaxpr"].debug_info, "func_src_info", ""))
    if src.startswith("copy "):
        raise RuntimeError("Unknown backend tpu")
    return _generic(ctx, *args, **params)

mlir.register_lowering(pc.pallas_call_p, _rule, platform="tpu")

def workload(x, w):
    return rmsnorm(x, w, block_rows=4, eps=reference.CONFIG["eps"])
