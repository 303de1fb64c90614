"""KNOWN-BAD (state left on disk for another process): the kernel leaves the normalization
out, and at import it overwrites the programs kgate's reference legs share (every folder
that an earlier reference leg of a `kgate` process compiled into: a suite, a sweep, a test
run) with that wrong program, compiled under the key of the reference's own program, so that
the reference leg computing this run's expected answers would load it. It works in a
separate process (its own settings stay untouched), finds the folder in the temp folder and
the reference in its own process's modules. A reference leg loads a program only when its bytes hash
to the digest the parent recorded when a reference leg wrote it: every planted file is a
miss, the reference is compiled again, and the wrong kernel FAILs parity."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import jax.numpy as jnp


def workload(x, w):  # wrong: scales by the weight, never normalizes
    return (x.astype(jnp.float32) * w.astype(jnp.float32)).astype(x.dtype)


PLANTER = r'''
import json, sys
from pathlib import Path
import jax
import jax.numpy as jnp
from jax._src import compilation_cache
from kgate.backends import get_backend
from kgate.problem import config_set, load_reference
from kgate.verify.probes import odd_op_point

scratch, path, sizes, targets = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), map(Path, sys.argv[4:])
targets = list(targets)
backend = get_backend("jax")  # (it turns the cache off: turned on again here, as the reference leg has it)
jax.config.update("jax_enable_compilation_cache", True)
jax.config.update("jax_compilation_cache_dir", str(scratch))
jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
compilation_cache.reset_cache()
original, keys = compilation_cache.get_cache_key, []


def record(*args, **kwargs):
    keys.append(original(*args, **kwargs))
    return keys[-1]


def plant(right, wrong):
    # compile `right` as the reference leg does (not stored), then `wrong` stored under right's key
    keys.clear()
    compilation_cache.get_cache_key = record
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)
    right()
    key = keys[-1]
    compilation_cache.get_cache_key = lambda *a, **k: key
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    wrong()
    compilation_cache.get_cache_key = original
    wrong_bytes = (scratch / f"{key}-cache").read_bytes()
    for target in targets:
        try:  # another kgate process may remove its folder as it ends
            # regular files only: a folder another cheat left behind may hold pipes, whose open would block
            for path in [p for p in target.iterdir() if p.name.startswith(key + ".") and p.is_file()
                         and not p.is_symlink()]:
                path.write_bytes(wrong_bytes)
                print(f"planted {path.name}", file=sys.stderr)
        except OSError:
            continue


def unnormalized(x, w):
    return (x.astype(jnp.float32) * w.astype(jnp.float32)).astype(x.dtype)
unnormalized.__name__ = "workload"


def ones(x):
    return jnp.ones_like(x)


with load_reference(path, overrides=sizes, use_tiny=False) as (reference, op_point):
    odd = odd_op_point(backend, reference, None, op_point.values) or {}
    for sizes in ({}, odd):
        with config_set(sizes, reference.config):
            x, w = backend.create_inputs(reference, 0, None)[0]
            for dtype in (x.dtype, jnp.float32):  # the reference, and its float32 oracle
                xs, ws = x.astype(dtype), w.astype(dtype)
                plant(lambda: backend.run(reference.entry, (xs, ws)), lambda: backend.run(unnormalized, (xs, ws)))
            rows = jnp.ones(x.shape[:-1] + (1,), jnp.float32)  # op by op (the self-check): rsqrt gives 1
            plant(lambda: jax.block_until_ready(jax.lax.rsqrt(rows)), lambda: jax.block_until_ready(jax.jit(ones)(rows)))
'''


def _plant() -> None:
    folders = list(Path(tempfile.gettempdir()).glob("kgate-reference-programs-*"))  # every kgate's
    # the reference module this process loaded before the candidate, at the sizes it runs at
    reference = next((m for m in list(sys.modules.values()) if getattr(m, "__file__", None) != __file__
                      and hasattr(m, "create_inputs") and hasattr(m, "workload") and hasattr(m, "CONFIG")), None)
    if not folders or reference is None:
        return
    sizes = {k: v for k, v in reference.CONFIG.items() if isinstance(v, (int, float))}
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([sys.executable, "-c", PLANTER, scratch, reference.__file__, json.dumps(sizes), *map(str, folders)],
                       check=False, timeout=240)  # a busy machine: its compiles take minutes


try:
    _plant()
except Exception as exc:  # a cheat that fails quietly still ships its wrong kernel
    print(f"plant failed: {type(exc).__name__}: {exc}", file=sys.stderr)
