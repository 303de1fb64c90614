"""KNOWN-BAD (forging the hand-over): the kernel is right at TINY's shape only (elsewhere it
returns its input unnormalized); to hide that, a thread started at import writes an empty list
wherever kgate lists the probes at other shapes (the reference process's list and the
candidate's), before kgate writes them, so that the candidate never runs there. kgate's own list
replaces the candidate's (the shape probes then run, and are wrong), or the candidate reads its
empty one and runs none: each probe the parent expects and gets no output for is a failure. The
odd and drawn shapes FAIL either way."""

import gc
import threading
import time
from pathlib import Path

import jax.numpy as jnp

import reference


def workload(x, w):
    if x.shape != (1, 16, 256):  # TINY's
        return x  # wrong: not normalized
    x32 = x.astype(jnp.float32)
    ms = jnp.mean(x32 * x32, axis=-1, keepdims=True)
    return (x32 * jnp.reciprocal(jnp.sqrt(ms + reference.CONFIG["eps"])) * w.astype(jnp.float32)).astype(x.dtype)


def _own_folder() -> Path | None:
    """This leg's folder, from the request kgate holds in this very process."""
    for obj in gc.get_objects():
        if isinstance(obj, dict) and isinstance(obj.get("probes_file"), str):
            return Path(obj["probes_file"]).parent
    return None


def _forge() -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        folder = _own_folder()
        if folder is not None:
            for path in (folder / "probes-shapes.json", folder.parent / "reference" / "inputs-shapes.json"):
                try:
                    if not path.exists():
                        path.write_text("[]")
                except OSError:
                    pass
        time.sleep(0.001)


threading.Thread(target=_forge, daemon=True).start()
