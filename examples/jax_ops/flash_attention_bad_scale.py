"""KNOWN-BAD (wrong math): jax's flash attention called with the default softmax scale
(1.0) instead of 1/sqrt(head_dim)."""

from jax.experimental.pallas.ops.tpu import flash_attention as fa


def workload(q, k, v, *, block=128):
    s = q.shape[2]
    sizes = fa.BlockSizes(block_q=min(block, s), block_k_major=min(block, s), block_k=min(block, s), block_b=1)
    return fa.flash_attention(q, k, v, block_sizes=sizes)
