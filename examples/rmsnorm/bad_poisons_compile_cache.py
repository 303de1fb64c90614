"""KNOWN-BAD (state left on disk for another process): the kernel leaves the normalization
out, and at import it plants that wrong program in JAX's persistent compilation cache under
the key of the reference's own program, so that any process sharing the cache that
compiles the reference (the process that computes the expected answers, the one that times
the reference) loads the wrong program instead. No process may read what one that ran
candidate code could have written: kgate runs every leg with the persistent caches off."""

import os
import sys
import tempfile

import jax
import jax.numpy as jnp


def workload(x, w):  # wrong: scales by the weight, never normalizes
    return (x.astype(jnp.float32) * w.astype(jnp.float32)).astype(x.dtype)


def _plant() -> None:
    """Record the cache key kgate's own backend computes for the reference at this op-point,
    then compile `workload` and store it under that key."""
    from jax._src import compilation_cache

    from kgate.backends import get_backend
    from kgate.problem import load_reference

    # the reference module this process loaded before the candidate, at the sizes it runs at
    module = next((m for m in list(sys.modules.values()) if getattr(m, "__file__", None) != __file__
                   and hasattr(m, "create_inputs") and hasattr(m, "workload") and hasattr(m, "CONFIG")), None)
    if module is None:
        return
    sizes = {k: v for k, v in module.CONFIG.items() if isinstance(v, (int, float))}
    # the cache the processes share, or, where it is off, one it turns on here for later runs
    folder = os.environ.get("JAX_COMPILATION_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "shared-xla-cache")
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", folder)
    compilation_cache.reset_cache()  # this process decided on its cache already: decide again
    backend = get_backend("jax")
    original, keys = compilation_cache.get_cache_key, []

    def record(*args, **kwargs):
        keys.append(original(*args, **kwargs))
        return keys[-1]

    def reference_key(*args, **kwargs):
        original(*args, **kwargs)
        return next(k for k in keys if k.startswith("jit_workload"))

    with load_reference(module.__file__, overrides=sizes, use_tiny=False) as (reference, _):
        inputs, _ = backend.create_inputs(reference, 0, None)  # the shapes are what count
        compilation_cache.get_cache_key = record
        try:
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)  # the right program: not stored
            backend.run(reference.entry, inputs)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # the wrong one: stored, as the right
            compilation_cache.get_cache_key = reference_key
            backend.run(workload, inputs)
        finally:
            compilation_cache.get_cache_key = original


try:
    _plant()
except Exception as exc:  # a cheat that fails quietly still ships its wrong kernel
    print(f"plant failed: {type(exc).__name__}: {exc}", file=sys.stderr)
