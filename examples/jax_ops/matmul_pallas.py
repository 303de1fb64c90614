"""Candidate: jax's own Pallas TPU matmul (jax.experimental.pallas.ops.tpu.matmul)."""

from jax.experimental.pallas.ops.tpu.matmul import matmul


def workload(x, y, *, block_m=128, block_n=128, block_k=128):
    return matmul(x, y, block_shape=(block_m, block_n), block_k=block_k)
