"""DESIGN.md's layering: nothing above `backends` imports jax or torch."""

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "kgate"
FRAMEWORKS = {"jax", "jaxlib", "torch", "triton"}


def test_no_module_outside_backends_imports_a_framework():
    offenders = []
    for path in SRC.rglob("*.py"):
        if "backends" in path.relative_to(SRC).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FRAMEWORKS]
    assert offenders == []


def test_importing_the_cli_and_gates_does_not_load_jax():
    code = (
        "import sys, kgate.cli, kgate.verify, kgate.gates.parity, kgate.gates.firing, kgate.report, kgate.problem,"
        " kgate.verify.screen, kgate.verify.check_receipt, kgate.verify.lock, kgate.verify.receipt,"
        " kgate.verify.measured;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'jax', 'torch'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
