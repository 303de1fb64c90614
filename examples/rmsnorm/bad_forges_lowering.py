"""KNOWN-BAD (forged evidence): a kernel with 4-row blocks, which a TPU host rejects, whose
import rewrites what kgate's own process uses to lower it: the lowering method reports
every program as lowered, with one live kernel custom call, and the StableHLO dataflow
finds a live kernel everywhere. Whatever that process then reports about the lowering is
forged; the watch over kgate's modules sees the rebinding and the run is an ANOMALY."""

import sys

import reference
from pallas import rmsnorm

flow = sys.modules.get("kgate.backends.stablehlo_flow")
backend = sys.modules.get("kgate.backends.jax_backend")
if flow is not None and backend is not None:
    from kgate.backends.base import LoweredKernel, LoweredProgram

    def kernel_calls(*args, **kwargs):
        return [LoweredKernel("tpu_custom_call", "rmsnorm_kernel", "pallas.py:23", True, True)]

    def lower_for(self, fn, inputs, platform, op_point, *args, _original=backend.JaxBackend.lower_for, **kwargs):
        result = _original(self, fn, inputs, platform, op_point, *args, **kwargs)
        return LoweredProgram(platform, op_point, result.shapes, kernels=tuple(kernel_calls()),
                              kernel_sites=result.kernel_sites)

    flow.kernel_calls = kernel_calls
    backend.JaxBackend.lower_for = lower_for


def workload(x, w):
    return rmsnorm(x, w, block_rows=4, eps=reference.CONFIG["eps"])
