"""`make demo`'s loop, run as the tests run it: the verdict demo drives an experiment from an empty
repository to a filed verdict and an HTML report, checking every command's exit code and, at
each step, that `kgate status` named that step's stage and command."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_the_verdict_demo_runs_the_whole_loop_and_kgate_status_names_each_step(tmp_path):
    kgate = Path(sys.executable).parent / "kgate"
    if not kgate.is_file():
        pytest.skip(f"no kgate script beside {sys.executable} (install the project: make venv)")
    proc = subprocess.run(["bash", str(ROOT / "examples" / "verdict_demo.sh")], capture_output=True, text=True,
                          env={**os.environ, "KGATE": str(kgate), "TMPDIR": str(tmp_path)}, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    for stage in ("workspace", "family", "stub", "loaded", "candidates", "verdict", "report"):
        assert f": {stage}" in out, stage  # each stage was named by kgate status on the way
    assert "kgate verdict: committed" in out and "K7(cumsum v001): " in out
    assert "kgate report: wrote" in proc.stderr and "report.html" in proc.stderr
