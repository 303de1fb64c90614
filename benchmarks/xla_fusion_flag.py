"""Should kgate set XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type= in its legs? That flag
turns off the XLA:CPU fusion that, on jaxlib 0.10.2, sometimes returns NaN for a softmax of a
matmul against all-zero weights. This measures both sides in one run, interleaved: how often
the fault shows (fresh processes, each compiling the program once) and what the flag costs
on three ordinary workloads (p50 of compiled calls, per process). Run by hand:

    .venv/bin/python benchmarks/xla_fusion_flag.py [--runs 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

FLAG = "--xla_cpu_experimental_ynn_fusion_type="

CHILD = r"""
import json, time
import jax, jax.numpy as jnp, numpy as np
zeros = jnp.zeros((256, 512), jnp.float32)
x = jax.random.normal(jax.random.key(0), (64, 256), jnp.float32)
faulty = not bool(np.isfinite(np.asarray(jax.jit(lambda x: jax.nn.softmax(x @ zeros, axis=-1))(x))).all())
w = jax.random.normal(jax.random.key(1), (1024, 1024))
X = jax.random.normal(jax.random.key(2), (512, 1024))
work = {
    "matmul+softmax": jax.jit(lambda x: jax.nn.softmax(x @ w, axis=-1)),
    "rmsnorm": jax.jit(lambda x: x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6)),
    "gelu mlp": jax.jit(lambda x: jax.nn.gelu(x @ w) @ w),
}
p50 = {}
for name, fn in work.items():
    jax.block_until_ready(fn(X))
    times = []
    for _ in range(40):
        t = time.perf_counter(); jax.block_until_ready(fn(X)); times.append(time.perf_counter() - t)
    p50[name] = 1e3 * float(np.median(times))
print(json.dumps({"faulty": faulty, "p50_ms": p50}))
"""


def child(flag: bool) -> dict:
    env = dict(os.environ)
    if flag:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + FLAG).strip()
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    runs = parser.parse_args().runs
    results: dict[bool, list[dict]] = {False: [], True: []}
    for i in range(runs):
        for flag in ((False, True) if i % 2 == 0 else (True, False)):  # interleaved, alternating order
            results[flag].append(child(flag))
    for flag in (False, True):
        faults = sum(r["faulty"] for r in results[flag])
        print(f"{'with' if flag else 'without'} the flag: NaN from the zero-weight softmax in {faults} of {runs} processes")
    for name in results[False][0]["p50_ms"]:
        off = statistics.median(r["p50_ms"][name] for r in results[False])
        on = statistics.median(r["p50_ms"][name] for r in results[True])
        print(f"{name:15s} p50 {off:8.3f} ms without, {on:8.3f} ms with the flag: {on / off:.2f}x")


if __name__ == "__main__":
    main()
