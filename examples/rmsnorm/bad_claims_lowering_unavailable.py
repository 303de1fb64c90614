"""KNOWN-BAD (hostile: dodges the lowering gate): 4-row blocks, which a TPU rejects, behind an
identity primitive of the candidate's own whose TPU lowering raises "Unknown backend tpu",
the words of a machine that cannot lower for TPU at all. Whether this machine can lower
kernels for a platform is decided by lowering a kernel of kgate's own, never by what the
candidate's lowering says; and a lowering rule registered from outside jax after kgate
started FAILs the lowering before that."""

import jax
from jax.extend.core import Primitive
from jax.interpreters import mlir

import reference
from pallas import rmsnorm

identity = Primitive("kgate_example_identity")
identity.def_impl(lambda x: x)
identity.def_abstract_eval(lambda x: x)
mlir.register_lowering(identity, lambda ctx, x: [x], platform="cpu")


def _refuse_tpu(ctx, x):
    raise NotImplementedError("Unknown backend tpu")


mlir.register_lowering(identity, _refuse_tpu, platform="tpu")


def workload(x, w):
    return rmsnorm(identity.bind(x), w, block_rows=4, eps=reference.CONFIG["eps"])
