"""`make demo`'s loop, run as the tests run it: the loop demo drives a family from an empty repository
through a pivot, a gotcha-matched lowering error, a sweep, full verification, a filed verdict and
an HTML report, as the author skill orders it, checking every command's exit code and, at each
step, that `kgate status` named that step's stage and command."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.mark.full
def test_the_loop_demo_runs_the_skill_s_loop_and_kgate_status_names_each_step(tmp_path):
    kgate = Path(sys.executable).parent / "kgate"
    if not kgate.is_file():
        pytest.skip(f"no kgate script beside {sys.executable} (install the project: make venv)")
    proc = subprocess.run(["bash", str(ROOT / "examples" / "loop_demo.sh")], capture_output=True, text=True,
                          env={**os.environ, "KGATE": str(kgate), "TMPDIR": str(tmp_path)}, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    for stage in ("workspace", "family", "stub", "loaded", "candidates", "pivoted", "verdict", "report"):
        assert f": {stage}  (" in out or f": {stage}\n" in out, stage  # kgate status named it on the way
    # the escalation, the gotcha row and its fix, the sweep's points, the filed verdict and the page
    assert "pivot(rmsnorm v001): xla-rewrite→kernel-authored" in out
    assert "TPU-BLOCK-TILING" in out and "gate FAIL at lowering" in out
    assert "block_rows=4,sub_rows=8: gate FAIL" in out and "block_rows=16,sub_rows=8: gate PASS" in out
    for cand in ("cand2", "cand3", "cand4"):  # the sweep's points, one commit each (sweep --record)
        assert re.search(rf"^{cand}\(rmsnorm v002\): tile sweep block_rows 4, 8, 16, block_rows=\d+,sub_rows=8 — ", out, re.M)
    assert "K7(rmsnorm v002): inconclusive" in out
    assert "kgate report: wrote" in out + proc.stderr and "report.html" in out + proc.stderr
    assert out.rstrip().endswith("lint rmsnorm v002: clean")
