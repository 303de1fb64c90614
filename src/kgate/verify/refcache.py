"""Compiled programs reused across reference legs, loaded only by a digest the parent holds.

Every reference leg compiles the same programs again (the reference's `create_inputs`, op by
op, the reference itself, its oracle), and on a CPU that is most of a gate's time. A
leg may load a compiled program only when it is byte for byte one that an earlier reference
leg of this parent compiled itself: the leg writes each program it compiles into this
parent's private folder and reports the program's sha256 in its result; the parent, which
never runs candidate code, keeps those digests, and hands them to the next reference leg,
which loads a file only when its bytes hash to the digest the parent holds. A candidate's
process may write, delete or replace any file in the folder (it runs as the same user): the
worst it can cause is a miss, and a recompile. No leg that runs candidate code is given the
folder (measure legs compile fresh, on purpose), and the digests live only as long as this
process: a second `kgate` command starts empty.

`KGATE_REFERENCE_CACHE=0` turns it off. No framework import: the parent imports this module.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kgate.backends.base import valid_program_name

ENV = "KGATE_REFERENCE_CACHE"  # 0: every reference leg compiles everything itself
_DIGEST = re.compile(r"[0-9a-f]{64}")
_MAX_ENTRIES = 4096  # per environment; past it new programs are compiled, not remembered


class ReferenceCache:
    """The digests of the programs this parent's reference legs compiled, per environment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._approved: dict[str, dict[str, str]] = {}
        self.hits = self.misses = 0

    @property
    def folder(self) -> Path | None:
        return self._folder

    def offer(self, env: Mapping[str, str] | None) -> dict[str, Any] | None:
        """What a reference leg's request carries: the folder and the digests it may load; None when off."""
        if os.environ.get(ENV, "1") == "0":
            return None
        with self._lock:
            if self._folder is None:
                self._folder = Path(tempfile.mkdtemp(prefix="kgate-reference-programs-"))
                atexit.register(shutil.rmtree, self._folder, True)
            return {"folder": str(self._folder), "approved": dict(self._approved.get(_key(env), {}))}

    def accept(self, env: Mapping[str, str] | None, report: Any) -> None:
        """Remember the programs a reference leg says it compiled (`written`: name -> sha256),
        and count its hits and misses. Anything malformed is ignored: a miss costs a compile."""
        if not isinstance(report, Mapping):
            return
        written = report.get("written")
        with self._lock:
            approved = self._approved.setdefault(_key(env), {})
            if isinstance(written, Mapping):
                for name, digest in written.items():
                    if len(approved) >= _MAX_ENTRIES:
                        break
                    if valid_program_name(name) and isinstance(digest, str) and _DIGEST.fullmatch(digest):
                        approved[name] = digest
            for field in ("hits", "misses"):
                value = report.get(field)
                if isinstance(value, int) and value >= 0:
                    setattr(self, field, getattr(self, field) + value)


def _key(env: Mapping[str, str] | None) -> str:
    """Programs compiled under one environment are offered only to legs of the same one (a
    flag setting of `kgate flags` compiles other programs under the same names)."""
    return hashlib.sha256(json.dumps(sorted((env or {}).items())).encode()).hexdigest()


SHARED = ReferenceCache()
