"""The leg side of kgate.verify.refcache: jax's persistent compilation cache, opened in a
reference leg over a folder whose files are loaded only when they hash to a digest the
parent handed over (programs an earlier reference leg compiled), and whose new programs are
reported back with their digests. Only a process that never runs candidate code opens it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax

from kgate.backends.base import program_file, valid_program_name

try:  # jax's cache hooks are not public API: without them every program is compiled, as before
    from jax._src import compilation_cache as _cc
    from jax._src.compilation_cache_interface import CacheInterface as _Base
except ImportError:  # pragma: no cover (another jax layout)
    _cc, _Base = None, object  # type: ignore[assignment,misc]


class VerifiedPrograms(_Base):  # type: ignore[misc,valid-type]
    """A jax compilation cache that loads only programs with an approved digest."""

    def __init__(self, folder: Path, approved: Mapping[str, str]) -> None:
        self._path = folder
        self.approved = {k: v for k, v in approved.items() if isinstance(k, str) and isinstance(v, str)}
        self.written: dict[str, str] = {}
        self.hits = self.misses = 0

    def get(self, key: str) -> bytes | None:
        digest = self.written.get(key) or self.approved.get(key)
        data = None
        if digest is not None and valid_program_name(key):
            data = _read_regular(program_file(self._path, key, digest))  # read once, then checked
            if data is not None and hashlib.sha256(data).hexdigest() != digest:
                data = None  # replaced since a reference leg wrote it: compiled again
        if data is None:
            self.misses += 1
        else:
            self.hits += 1
        return data

    def put(self, key: str, value: bytes) -> None:
        if not valid_program_name(key):
            return
        digest = hashlib.sha256(value).hexdigest()
        path = program_file(self._path, key, digest)
        try:  # a fresh file of a name no one could plant a link under, then renamed over whatever is there
            fd, scratch = tempfile.mkstemp(prefix=".", dir=self._path)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(value)
            os.replace(scratch, path)
        except OSError:
            Path(scratch).unlink(missing_ok=True)
            return
        self.written[key] = digest

    def clear(self) -> None:
        self.written.clear()

    def report(self) -> dict[str, Any]:
        return {"written": dict(self.written), "hits": self.hits, "misses": self.misses}


_MAX_PROGRAM_BYTES = 1 << 30


def _read_regular(path: Path) -> bytes | None:
    """A plain file's bytes; None for anything else (a link, a pipe that would block, a folder)
    or past the size cap: whatever a candidate's process put there costs a compile, no more."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_PROGRAM_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(_MAX_PROGRAM_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def open_verified(offer: Mapping[str, Any] | None) -> VerifiedPrograms | None:
    """Open the cache a reference leg was offered (before it compiles anything); None when none
    was offered or this jax has no such hooks."""
    if not offer or _cc is None or not hasattr(_cc, "_cache"):
        return None
    folder = Path(str(offer.get("folder", "")))
    if not folder.is_dir():
        return None
    cache = VerifiedPrograms(folder, offer.get("approved") or {})
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")  # XLA's own caches check nothing
    _cc.reset_cache()
    _cc._cache = cache
    _cc._cache_initialized = True
    return cache
