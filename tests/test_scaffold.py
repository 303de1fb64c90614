"""`kgate new`: the scaffolded problem is in the protocol and its candidate passes the gate
as generated; nothing is ever overwritten."""

import subprocess
import sys

import pytest

from conftest import gate
from kgate.scaffold import TEMPLATES


def kgate(cwd, *args):
    return subprocess.run([sys.executable, "-m", "kgate", *map(str, args)], cwd=cwd, capture_output=True, text=True)


@pytest.mark.full
@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_a_new_problem_passes_the_gate_as_generated(tmp_path, template):
    proc = kgate(tmp_path, "new", "my_op", "--from", template)
    assert proc.returncode == 0, proc.stderr
    assert "next: kgate gate -r my_op/reference.py -c my_op/candidate.py" in proc.stdout
    reference = (tmp_path / "my_op" / "reference.py").read_text()
    for name in ("CONFIG = ", "TINY = ", "def create_inputs(seed=0, dtype=", "def workload(", "def get_flops(", "def get_bytes("):
        assert name in reference, name
    assert "pl.BlockSpec(" in (tmp_path / "my_op" / "candidate.py").read_text()
    report = gate(str(tmp_path / "my_op" / "reference.py"), str(tmp_path / "my_op" / "candidate.py"))
    assert report.status == "PASS" and report.exit_code == 0, report.to_json()
    assert report.context["odd_op_point"]  # an odd shape was probed too, and passed


def test_new_never_overwrites_and_names_the_templates(tmp_path):
    assert kgate(tmp_path, "new", "my_op").returncode == 0
    (tmp_path / "my_op" / "candidate.py").write_text("# my work\n")
    again = kgate(tmp_path, "new", "my_op")
    assert again.returncode == 2 and "never overwrites" in again.stderr
    assert (tmp_path / "my_op" / "candidate.py").read_text() == "# my work\n"
    unknown = kgate(tmp_path, "new", "other", "--from", "conv")
    assert unknown.returncode == 2 and "rowwise" in unknown.stderr and "elementwise" in unknown.stderr
    assert not (tmp_path / "other").exists()
