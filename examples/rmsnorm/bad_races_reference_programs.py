"""KNOWN-BAD (state left on disk for another process, raced): the kernel leaves out the
epsilon and squares in bfloat16, and at import it starts a process in a session of its own
(so it outlives the candidate's process group) that, for the next 30 seconds, keeps turning
every program in every kgate reference-program folder it finds into something else: garbage bytes,
a named pipe (a reader that opens it waits forever) or a link to another program. Every
later reference leg of the same `kgate` process (the next candidate of a suite, the next
point of a sweep) must grade as if the folder were empty: a program that is not a plain file
whose bytes hash to the digest kgate holds is compiled again, and nothing blocks."""

import subprocess
import sys
import tempfile
from pathlib import Path

import jax.numpy as jnp


def workload(x, w):  # wrong: bfloat16 squares and no epsilon
    ms = jnp.mean(x * x, axis=-1, keepdims=True).astype(jnp.float32)
    return (x.astype(jnp.float32) / jnp.sqrt(ms) * w.astype(jnp.float32)).astype(x.dtype)


RACER = r'''
import os, sys, time
from pathlib import Path

folders = [Path(f) for f in sys.argv[1:]]
for folder in folders:
    (folder / ".racer-pid").write_text(str(os.getpid()))
end, turn = time.monotonic() + 30, 0
while time.monotonic() < end:
    for path in [p for folder in folders if folder.is_dir() for p in folder.iterdir()]:
        if path.name.startswith("."):
            continue
        turn += 1
        try:
            path.unlink()
            if turn % 3 == 0:
                os.mkfifo(path)
            elif turn % 3 == 1:
                path.write_bytes(os.urandom(4096))
            else:
                os.symlink(next(p for p in path.parent.iterdir() if p != path), path)
        except (OSError, StopIteration):
            pass
    time.sleep(0.01)
'''


def _start_racer() -> None:
    folders = [str(p) for p in Path(tempfile.gettempdir()).glob("kgate-reference-programs-*")]
    if folders:
        subprocess.Popen([sys.executable, "-c", RACER, *folders], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


try:
    _start_racer()
except Exception as exc:
    print(f"racer failed: {type(exc).__name__}: {exc}", file=sys.stderr)
