"""Segment sum (embedding-bag style): out[s] = sum of x rows with ids == s."""
import jax, jax.numpy as jnp
CONFIG = {"n": 4096, "d": 256, "s": 64}
TINY = {"n": 512, "d": 128, "s": 16}
def create_inputs(seed=0, dtype=jnp.float32):
    k1, k2 = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(k1, (CONFIG["n"], CONFIG["d"]), dtype=dtype)
    ids = jax.random.randint(k2, (CONFIG["n"],), 0, CONFIG["s"])
    return x, ids
def workload(x, ids):
    return jax.ops.segment_sum(x, ids, num_segments=CONFIG["s"])
