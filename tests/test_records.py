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
    derived = kgate(repo, "family", "new", "1p_Flash_Attention", "--derive", "--reference", "ops/rmsnorm_ref.py",
                    "--target", "ops/fa.py")
    assert derived.returncode == 0 and (repo / "kernel_experiments" / "flash-attention" / "family.toml").is_file()


def test_init_refuses_to_overwrite_and_needs_a_repo(repo, tmp_path):
    assert kgate(repo, "init").returncode == 0
    proc = kgate(repo, "init")
    assert proc.returncode == 2 and "already exists: this workspace is initialized" in proc.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = kgate(plain, "init")
    assert proc.returncode == 2 and "not inside a git repository" in proc.stderr and not (plain / "kgate.toml").exists()


STUB = [
    "--bar", "p50 beats naive by >2% AND 3σ",
    "--hypothesis", "One pass over each row halves the memory traffic.",
    "--mechanism", "Fuse the sum of squares and the scaling in one Pallas kernel, one row block per step.",
    "--predicted", "p50 1.3x faster than the jnp reference at seq_len 4096.",
    "--criterion", "The speedup interval lies below 1.02 at the op-point.",
    "--plan", "cand1: one row block per grid step — predict 1.2x",
    "--plan", "cand2: two row blocks per step — predict 1.3x",
]


@pytest.fixture
def family(repo):
    assert kgate(repo, "init").returncode == 0
    proc = kgate(repo, "family", "new", "rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/rmsnorm.py")
    assert proc.returncode == 0, proc.stderr
    return repo / "kernel_experiments" / "rmsnorm"


def test_stub_commits_the_pre_registration_on_its_own_branch(repo, family):
    proc = kgate(repo, "stub", "rmsnorm", *STUB)
    assert proc.returncode == 0, proc.stderr
    wt = family / ".repo"
    assert sh(wt, "git", "rev-parse", "--abbrev-ref", "HEAD") == "kernel/rmsnorm-v001"
    assert sh(wt, "git", "log", "-1", "--format=%s") == "K3(rmsnorm v001): stub — rmsnorm"
    (page,) = (wt / "kernel_experiments" / "rmsnorm").glob("*-v001-rmsnorm.md")
    text = page.read_text()
    for needle in ("status: in_progress", 'exp: "v001"', 'variant: "cpu:cpu"', 'bar: "p50 beats naive by >2% AND 3σ"',
                   'branch: "kernel/rmsnorm-v001"', "## Mechanism", "- [ ] cand2: two row blocks per step — predict 1.3x"):
        assert needle in text, needle
    assert sh(wt, "git", "status", "--porcelain") == ""


def test_a_taken_branch_gets_the_next_free_name_and_is_left_alone(repo, family):
    wt = family / ".repo"
    sh(wt, "git", "branch", "kernel/rmsnorm-v001")
    before = sh(wt, "git", "rev-parse", "kernel/rmsnorm-v001")
    proc = kgate(repo, "stub", "rmsnorm", *STUB)
    assert proc.returncode == 0 and "kernel/rmsnorm-v001 already exists" in proc.stderr
    assert sh(wt, "git", "rev-parse", "--abbrev-ref", "HEAD") == "kernel/rmsnorm-v002"
    assert sh(wt, "git", "rev-parse", "kernel/rmsnorm-v001") == before


def _replace(args, flag, value):
    out = list(args)
    out[out.index(flag) + 1] = value
    return out


@pytest.mark.parametrize(
    "args,message",
    [
        (_replace(STUB, "--bar", "faster than before"), "bar clause"),
        (_replace(STUB, "--mechanism", "  "), "Mechanism paragraph is empty"),
        (_replace(STUB, "--criterion", "p50 1.3x faster than the jnp reference at seq_len 4096."), "repeats the predicted signal"),
        (_replace(STUB, "--plan", "cand1 one row block"), "is not of the form"),
        (STUB + ["--variant", "tpu-v5e"], "No such option"),
    ],
)
def test_bad_stubs_change_nothing(repo, family, args, message):
    wt = family / ".repo"
    branches = sh(wt, "git", "branch", "--list")
    proc = kgate(repo, "stub", "rmsnorm", *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert sh(wt, "git", "branch", "--list") == branches and sh(wt, "git", "status", "--porcelain") == ""


def test_stub_refuses_a_dirty_worktree_and_an_edited_reference(repo, family):
    wt = family / ".repo"
    (wt / "ops" / "rmsnorm_ref.py").write_text("CONFIG = {'n': 9}\n")
    proc = kgate(repo, "stub", "rmsnorm", *STUB)
    assert proc.returncode == 2 and "uncommitted changes" in proc.stderr
    sh(wt, "git", "commit", "-qam", "edit the reference")
    proc = kgate(repo, "stub", "rmsnorm", *STUB)
    assert proc.returncode == 2 and "no longer matches the family's pinned sha256" in proc.stderr


def test_stub_from_a_markdown_draft(repo, family, tmp_path):
    draft = tmp_path / "draft.md"
    draft.write_text(
        "## Hypothesis\n\nOne pass halves traffic.\n\n## Mechanism\n\nFused kernel.\n\n## Predicted signal\n\n1.3x.\n\n"
        "## Falsification criterion\n\nInterval below 1.02.\n\n## Candidate plan\n\n- [ ] cand1: fused — predict 1.3x\n"
    )
    proc = kgate(repo, "stub", "rmsnorm", "--bar", "speedup > 1.1x", "--from-file", draft)
    assert proc.returncode == 0, proc.stderr
    (page,) = (family / ".repo" / "kernel_experiments" / "rmsnorm").glob("*.md")
    assert "Fused kernel." in page.read_text() and "- [ ] cand1: fused — predict 1.3x" in page.read_text()
