"""Workspace and family records, against real git repositories made in temp dirs."""

import subprocess
import sys
import tomllib

import pytest

from kgate.errors import KgateError
from kgate.record import slug as slugs


def sh(cwd, *args):
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def kgate(cwd, *args):
    return subprocess.run([sys.executable, "-m", "kgate", *map(str, args)], cwd=cwd, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "code"
    root.mkdir()
    sh(root, "git", "init", "-q", "-b", "main")
    sh(root, "git", "config", "user.email", "t@example.invalid")
    sh(root, "git", "config", "user.name", "t")
    (root / "ops").mkdir()
    (root / "ops" / "rmsnorm_ref.py").write_text("CONFIG = {'n': 8}\n")
    sh(root, "git", "add", "-A")
    sh(root, "git", "commit", "-qm", "init")
    return root


@pytest.mark.parametrize("name,slug", [("1p_Flash_Attention", "flash-attention"), ("RMSNorm", "rmsnorm"), ("ops/layer_norm.py", "layer-norm"), ("softmaxV2", "softmax-v2")])
def test_slugs_are_derived_from_paths(name, slug):
    assert slugs.derive(name) == slug


@pytest.mark.parametrize("bad", ["Flash", "flash_attention", "-x", "x-", "1st", "a--b"])
def test_bad_slugs_are_rejected_with_the_rule(bad):
    with pytest.raises(KgateError, match="lowercase letters and digits"):
        slugs.validate(bad)


def test_init_then_family_new_makes_binding_results_and_worktree(repo):
    assert kgate(repo, "init").returncode == 0
    ws = tomllib.loads((repo / "kgate.toml").read_text())
    assert ws["workspace"]["experiments"] == "kernel_experiments" and ws["defaults"]["graded_dtype"] == "bfloat16"
    proc = kgate(repo, "family", "new", "rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/rmsnorm.py",
                 "--set", "n=16")
    assert proc.returncode == 0, proc.stderr
    assert "created integration branch kernel/rmsnorm from the current HEAD (main)" in proc.stderr
    folder = repo / "kernel_experiments" / "rmsnorm"
    binding = tomllib.loads((folder / "family.toml").read_text())["family"]
    assert binding["reference"] == "ops/rmsnorm_ref.py" and len(binding["reference_sha256"]) == 64
    assert binding["target"] == "ops/rmsnorm.py" and binding["integration_branch"] == "kernel/rmsnorm"
    assert binding["op_point"] == {"n": 16} and binding["parity"] == "floor:4"
    assert (folder / "RESULTS.tsv").read_text().startswith("exp_id\tdate\tp50_ms\tspeedup\ttflops")
    assert sh(folder / ".repo", "git", "rev-parse", "--abbrev-ref", "HEAD") == "kernel/rmsnorm"
    untracked = sh(repo, "git", "status", "--porcelain", "--untracked-files=all")
    assert "kernel_experiments/rmsnorm/family.toml" in untracked and ".repo" not in untracked


def test_bad_family_inputs_change_nothing(repo):
    kgate(repo, "init")
    branches = sh(repo, "git", "branch", "--list")
    for args, message in [
        (["Bad_Slug", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py"], "is not valid"),
        (["rmsnorm", "--reference", "ops/missing.py", "--target", "ops/x.py"], "does not exist"),
        (["rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py", "--parity", "close"], "not understood"),
        (["rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py", "--branch", "main"], "worktree"),
    ]:
        proc = kgate(repo, "family", "new", *args)
        assert proc.returncode == 2 and message in proc.stderr and "fix:" in proc.stderr, (args, proc.stderr)
        assert not (repo / "kernel_experiments" / "rmsnorm").exists()
        assert sh(repo, "git", "branch", "--list") == branches
    assert "1p-" not in kgate(repo, "family", "new", "1p_Flash_Attention", "--derive", "--reference", "ops/rmsnorm_ref.py",
                               "--target", "ops/fa.py").stdout


def test_init_refuses_to_overwrite_and_needs_a_repo(repo, tmp_path):
    assert kgate(repo, "init").returncode == 0
    proc = kgate(repo, "init")
    assert proc.returncode == 2 and "already exists: this workspace is initialized" in proc.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = kgate(plain, "init")
    assert proc.returncode == 2 and "not inside a git repository" in proc.stderr and not (plain / "kgate.toml").exists()
