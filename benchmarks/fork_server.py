"""What the fork server saves: the same kgate commands with every leg forked from a warm server
(the default) and with every leg a fresh process (KGATE_FORKSERVER=0), interleaved, on the
bundled examples. Prints the median wall time and the median CPU time (the command and every
process it started, the server and its legs included) of each, and their ratios. Run by hand:

    .venv/bin/python benchmarks/fork_server.py [--runs 5]

CPU time is what a machine running many checks at once (a test suite, `kgate suite`) pays; wall
time is what one command's user waits, and the legs of one command already start side by side.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KGATE = [sys.executable, "-m", "kgate"]


def cases(scratch: Path) -> list[tuple[str, list[str]]]:
    rms, soft = ROOT / "examples" / "rmsnorm", ROOT / "examples" / "softmax"
    rewrite = ["-r", str(soft / "reference.py"), "-c", str(soft / "xla_rewrite.py"), "--class", "xla-rewrite"]
    return [
        ("gate rmsnorm/pallas.py", ["gate", "-r", str(rms / "reference.py"), "-c", str(rms / "pallas.py"), "--json"]),
        ("gate softmax/xla_rewrite.py", ["gate", *rewrite, "--json"]),
        ("verify (screen) softmax/xla_rewrite.py at 256x256",
         ["verify", *rewrite, "--set=rows=256", "--set=cols=256", "--budget", "4", "--lock-dir", str(scratch),
          "--receipt", str(scratch / "r.json"), "--json"]),
    ]


def run(argv: list[str], forked: bool) -> tuple[float, float]:
    """(wall s, CPU s of the command and all it started) for one run."""
    env = {**os.environ, "KGATE_FORKSERVER": "1" if forked else "0"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*KGATE, *argv], capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1) or '"status"' not in proc.stdout:
        raise SystemExit(f"kgate {argv[0]} failed (exit {proc.returncode}): {proc.stderr[-600:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgate-fork-bench-") as scratch:
        print(f"{'command':56}{'fresh wall':>11}{'forked':>8}{'ratio':>7}{'fresh CPU':>11}{'forked':>8}{'ratio':>7}")
        for name, argv in cases(Path(scratch)):
            fresh, forked = [], []
            for _ in range(args.runs):  # interleaved: the machine's drift hits both alike
                fresh.append(run(argv, forked=False))
                forked.append(run(argv, forked=True))
            fw, fc = (statistics.median(x[i] for x in fresh) for i in (0, 1))
            kw, kc = (statistics.median(x[i] for x in forked) for i in (0, 1))
            print(f"{name:56}{fw:10.2f}s{kw:7.2f}s{kw / fw:7.2f}{fc:10.2f}s{kc:7.2f}s{kc / fc:7.2f}")
        print(f"\n(median of {args.runs} interleaved runs each; ratio = forked / fresh)")


if __name__ == "__main__":
    main()
