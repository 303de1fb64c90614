"""RMSNorm reference (JAXBench-style problem module): y = x / rms(x) * w, computed in float32."""

import jax
import jax.numpy as jnp

CONFIG = {"batch": 4, "seq_len": 512, "emb_dim": 1024, "eps": 1e-6}
TINY = {"batch": 1, "seq_len": 16, "emb_dim": 256}


def create_inputs(dtype=jnp.bfloat16):
    key = jax.random.key(42)
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (CONFIG["batch"], CONFIG["seq_len"], CONFIG["emb_dim"]), dtype=dtype)
    w = (1.0 + 0.1 * jax.random.normal(kw, (CONFIG["emb_dim"],))).astype(dtype)
    return x, w


def workload(x, w):
    x32 = x.astype(jnp.float32)
    ms = jnp.mean(x32 * x32, axis=-1, keepdims=True)
    y = x32 * jax.lax.rsqrt(ms + CONFIG["eps"]) * w.astype(jnp.float32)
    return y.astype(x.dtype)


def get_flops():
    return 4 * CONFIG["batch"] * CONFIG["seq_len"] * CONFIG["emb_dim"]


def get_bytes():
    n = CONFIG["batch"] * CONFIG["seq_len"] * CONFIG["emb_dim"]
    return 2 * (2 * n + CONFIG["emb_dim"])
