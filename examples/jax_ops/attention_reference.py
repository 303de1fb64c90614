"""Plain multi-head attention reference (softmax(q k^T * scale) v) for jax's Pallas TPU
flash attention."""

import math

import jax
import jax.numpy as jnp

CONFIG = {"batch": 2, "heads": 4, "seq_len": 1024, "head_dim": 128}
TINY = {"batch": 1, "heads": 2, "seq_len": 128, "head_dim": 128}


def create_inputs(seed=0, dtype=jnp.float32):
    shape = (CONFIG["batch"], CONFIG["heads"], CONFIG["seq_len"], CONFIG["head_dim"])
    kq, kk, kv = jax.random.split(jax.random.key(seed), 3)
    return tuple(jax.random.normal(k, shape, dtype=dtype) for k in (kq, kk, kv))


def workload(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k, precision=jax.lax.Precision.HIGHEST) * scale
    p = jax.nn.softmax(s.astype(jnp.float32), axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", p, v.astype(jnp.float32), precision=jax.lax.Precision.HIGHEST).astype(q.dtype)
