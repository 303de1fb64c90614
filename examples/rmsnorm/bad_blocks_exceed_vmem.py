"""KNOWN-BAD (does not fit on the chip): the whole array as one block, under a declared
vmem_limit_bytes of 8 MiB. Interpret mode has no VMEM, so parity passes on a CPU; at the
op-point (2048 x 1024 bfloat16) the input and output blocks, double-buffered, need about
16 MiB, and the TPU compiler refuses the kernel (a scoped VMEM out-of-memory). The lowering
gate's VMEM estimate FAILs it on any machine."""

import functools

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

import reference
from pallas import rmsnorm_kernel


def workload(x, w):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    rows = x2.shape[0]
    out = pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=reference.CONFIG["eps"]),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(1,),
        in_specs=[pl.BlockSpec((rows, d), lambda i: (0, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((rows, d), lambda i: (0, 0)),
        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=8 * 2**20),
    )(x2, w.reshape(1, d))
    return out.reshape(x.shape)
