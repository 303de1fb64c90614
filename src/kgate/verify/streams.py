"""Keep candidate output out of kgate's stdout when candidate code runs in this process.

`measure` and `calibrate` time both legs in one process; whatever the candidate prints (at
import or on a call) goes to stderr, so a `--json` report on stdout stays one JSON object.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 (and `sys.stdout`) at stderr until the block ends."""
    sys.stdout.flush()
    saved = os.dup(1)
    saved_stream = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)
        sys.stdout = saved_stream
