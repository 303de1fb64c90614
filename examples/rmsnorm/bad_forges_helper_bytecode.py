"""KNOWN-BAD (state left on disk for another process: Python's bytecode cache, one import
away): the kernel leaves the weight out, and at import it forges the cached bytecode of a
module the reference imports (`rms_helpers.py` beside a reference that calls
`rms_helpers.scale`), with a header carrying that file's real time and size, so that a later
process importing the reference would run a helper that drops the weight. Neither source file
changes. kgate's legs read no cached bytecode for anything they import once the array library
is loaded: the helper is compiled from its source, and the kernel FAILs parity."""

import importlib.util
import marshal
import os
import sys

import jax.numpy as jnp


def workload(x, w):  # wrong: no weight
    x32 = x.astype(jnp.float32)
    ms = jnp.mean(x32 * x32, axis=-1, keepdims=True)
    return (x32 * (1.0 / jnp.sqrt(ms + 1e-6))).astype(x.dtype)


helpers = sys.modules.get("rms_helpers")
if helpers is not None and helpers.__file__.endswith(".py"):
    source = open(helpers.__file__).read()
    code = compile(source.replace("return y * w", "return y"), helpers.__file__, "exec", dont_inherit=True)
    info = os.stat(helpers.__file__)
    header = (importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
              + (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (info.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    folder = os.path.join(os.path.dirname(helpers.__file__), "__pycache__")
    os.makedirs(folder, exist_ok=True)
    name = os.path.basename(importlib.util.cache_from_source(helpers.__file__)) if not sys.pycache_prefix else \
        f"rms_helpers.{sys.implementation.cache_tag}.pyc"
    with open(os.path.join(folder, name), "wb") as handle:
        handle.write(header + marshal.dumps(code))
