"""ADVERSARIAL (harness patching, across runs): at import, the candidate writes a `kgate/` and
a `jax/` package into the folder kgate runs in. Any later process that puts its working folder
first on sys.path (as `python -m` does) would import them instead of the real ones: a planted
kgate could rewrite the next run's reference, a planted jax its numbers. Its kernel is wrong
(it drops the weight), so this run FAILs parity; what it wants is the next one.

kgate starts every leg, fork server and suite worker with `python -P`: the working folder is
never on their path, so nothing planted there is imported. Each planted `__init__.py` writes
`planted-package-imported` when imported (and then fails), which the test looks for."""

import os
from pathlib import Path

import jax
import jax.numpy as jnp

import reference

_TROJAN = """from pathlib import Path
Path({canary!r}).write_text(__name__)
raise ImportError("a planted package was imported")
"""

for _package in ("kgate", "jax"):
    _folder = Path(os.getcwd()) / _package
    try:
        _folder.mkdir(exist_ok=True)
        (_folder / "__init__.py").write_text(_TROJAN.format(canary=str(Path(os.getcwd()) / "planted-package-imported")))
    except OSError:
        pass


def workload(x, w):
    x32 = x.astype(jnp.float32)
    inv = jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + reference.CONFIG["eps"])
    return (x32 * inv).astype(x.dtype)  # the weight is dropped
