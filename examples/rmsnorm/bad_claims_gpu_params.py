"""KNOWN-BAD (hostile: names another device): 4-row blocks, which a TPU rejects, with Triton
compiler parameters, so that a lowering which follows the kernel's own word lowers it for a
GPU instead. When the target is a TPU (--lower-for tpu, --chip-kind, a family on a TPU
variant, or a TPU machine), kernels written for another platform FAIL the lowering gate."""

import functools

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

import reference
from pallas import rmsnorm_kernel


def workload(x, w):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    out = pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(pl.cdiv(x2.shape[0], 4),),
        in_specs=[pl.BlockSpec((4, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((4, d), lambda i: (i, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)
