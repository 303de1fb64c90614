"""ADVERSARIAL (reading the expected answer, after the fact): the kernel drops the weight (wrong).
At import the candidate starts a process in a session of its own (so ending the leg's process
group misses it) that keeps the leg's beat channel open, so the parent waits, and, once the leg
has exited, rewrites the outputs file the leg wrote with the right answers, computed from the
probe inputs kgate handed the leg. Then it writes `rewrote` beside the outputs and lets go.

kgate hashes the outputs into the leg's result (itself bound by the digest the leg beats once),
and a leg whose channel is still held after it exited is a crash: the outputs are never graded.
"""

import gc
import os
import subprocess
import sys

import jax
import jax.numpy as jnp

import reference

_BEHIND = r"""
import glob, os, pickle, sys, time
import ml_dtypes  # bfloat16 by name
import numpy as np
folder, leg, eps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + 60
while os.path.exists(f"/proc/{leg}") and time.monotonic() < deadline:
    time.sleep(0.01)
path = os.path.join(folder, "candidate.npz")
if os.path.exists(path):
    right = {}
    for name in glob.glob(os.path.join(folder, "inputs-*.pkl")):
        with open(name, "rb") as handle:
            x, w = [np.asarray(a, dtype=np.float32) for a in pickle.load(handle)[:2]]
        right[os.path.basename(name)[len("inputs-"):-4]] = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    for key, value in right.items():
        if f"{key}-candidate/b0" in arrays:
            dtype = np.dtype(str(arrays[f"{key}-candidate/m0"][0]))
            arrays[f"{key}-candidate/b0"] = np.frombuffer(value.astype(dtype).tobytes(), np.uint8)
    with open(path + ".new", "wb") as handle:
        np.savez(handle, **arrays)
    os.replace(path + ".new", path)
    open(os.path.join(folder, "rewrote"), "w").close()
"""


def _left_behind() -> None:
    request = next((o for o in gc.get_objects() if isinstance(o, dict) and "probes_file" in o and "workdir" in o), None)
    beat = os.environ.get("KGATE_BEAT_FD")
    if request is None or beat is None:
        return
    subprocess.Popen([sys.executable, "-c", _BEHIND, str(request["workdir"]), str(os.getpid()),
                      str(reference.CONFIG["eps"])], pass_fds=(int(beat),), start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_left_behind()


def workload(x, w):
    x32 = x.astype(jnp.float32)
    inv = jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + reference.CONFIG["eps"])
    return (x32 * inv).astype(x.dtype)  # the weight is dropped
