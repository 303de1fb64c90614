"""scripts/device-check: the GPU checks in one run. Without a GPU it checks nothing and says so
(exit 2, never a pass); with --cpu it runs the example checks here with the CPU's expectations."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "device-check"


def _run(*args, **env):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=600)


def test_it_lists_every_check_with_what_it_must_show():
    done = _run("--list")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].startswith("tests marked accelerator") and len(lines) == 8
    assert all(": " in line for line in lines)


def test_without_a_gpu_nothing_is_checked_and_it_does_not_pass():
    done = _run(CUDA_VISIBLE_DEVICES="")  # a scheduler that gave this process no GPU
    assert done.returncode == 2
    assert all(line.startswith("skip  ") for line in done.stdout.splitlines()) and len(done.stdout.splitlines()) == 8
    assert "no CUDA GPU on this machine: nothing was checked" in done.stderr


@pytest.mark.full
def test_the_example_checks_come_out_as_expected_on_the_cpu():
    done = _run("--cpu", CUDA_VISIBLE_DEVICES="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("\nok    ") + done.stdout.startswith("ok    ") == 6
    assert "every check as expected (CPU" in done.stdout
