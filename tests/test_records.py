"""Workspace and family records, against real git repositories made in temp dirs."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from conftest import EXAMPLES, copy_repo, home_repo, kgate, sh
from kgate.errors import KgateError
from kgate.record import slug as slugs


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
    assert binding["op_point"] == {"n": 16} and binding["parity"] == "floor:5"
    assert (folder / "RESULTS.tsv").read_text().startswith("exp_id\tdate\tp50_ms\tspeedup\ttflops")
    assert sh(folder / ".repo", "git", "rev-parse", "--abbrev-ref", "HEAD") == "kernel/rmsnorm"
    untracked = sh(repo, "git", "status", "--porcelain", "--untracked-files=all")
    assert "kernel_experiments/rmsnorm/family.toml" in untracked and ".repo" not in untracked


@pytest.mark.full
def test_records_toml_holds_any_path_text_and_key(repo):
    """A backslash, a character outside the Basic Multilingual Plane, a non-ASCII --set key and a
    tuple value all read back as written, and the family they describe can be stubbed."""
    (repo / "ops" / "rmsnorm_ref.py").write_text("CONFIG = {'n': 8, 'größe': 2, 'block': (8, 128)}\n")
    sh(repo, "git", "commit", "-qam", "keys")
    assert kgate(repo, "init", "--experiments", "exp\\runs \U0001F680").returncode == 0
    ws = tomllib.loads((repo / "kgate.toml").read_text())
    assert ws["workspace"]["experiments"] == "exp\\runs \U0001F680"
    assert (repo / "kgate.toml").read_text().startswith("# kgate workspace:")
    proc = kgate(repo, "family", "new", "rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/k\U0001F680.py",
                 "--set", "größe=4", "--set", "block=(16, 128)")
    assert proc.returncode == 0, proc.stderr
    folder = repo / "exp\\runs \U0001F680" / "rmsnorm"
    binding = tomllib.loads((folder / "family.toml").read_text())["family"]
    assert binding["target"] == "ops/k\U0001F680.py" and binding["op_point"] == {"größe": 4, "block": [16, 128]}
    proc = kgate(repo, "stub", "rmsnorm", *STUB)
    assert proc.returncode == 0, proc.stderr
    from kgate.record import family, tomlfile, workspace

    fam = family.load(workspace.find(repo), "rmsnorm")
    assert fam.op_point == {"größe": 4, "block": (16, 128)} and str(fam.target) == "ops/k\U0001F680.py"
    nested = tomllib.loads(tomlfile.dumps("a dotted key", {"t": {"a.b": 1, "c": "x\\y\U0001F680"}}))
    assert nested == {"t": {"a.b": 1, "c": "x\\y\U0001F680"}}
    with pytest.raises(KgateError, match="cannot be recorded in TOML"):
        tomlfile.dumps("none", {"t": {"k": None}})


def test_an_array_op_point_matches_itself_from_toml_and_from_json(repo):
    """family.toml gives a tuple back, a receipt's JSON a list, --set either: the same op-point."""
    from kgate.record import terms as registered
    from kgate.record.terms import Terms

    terms = Terms("rmsnorm", repo / "ops" / "rmsnorm_ref.py", repo / "ops" / "rmsnorm.py", {"block": (8, 128)},
                  "bfloat16", "floor:5", None, None, None, None)
    assert registered.resolve(terms, overrides={"block": [8, 128]})["overrides"] == {"block": (8, 128)}
    with pytest.raises(KgateError, match="contradicts"):
        registered.resolve(terms, overrides={"block": [16, 128]})
    # a part of the registered op-point typed again agrees, and the run takes the whole of it
    two = Terms("rmsnorm", repo / "ops" / "rmsnorm_ref.py", repo / "ops" / "rmsnorm.py", {"batch": 1, "n": 16},
                "bfloat16", "floor:5", None, None, None, None)
    assert registered.resolve(two, overrides={"batch": 1})["overrides"] == {"batch": 1, "n": 16}
    for other in ({"batch": 2}, {"eps": 1e-5}):  # another value, or a key the registration leaves as it is
        with pytest.raises(KgateError, match="contradicts"):
            registered.resolve(two, overrides=other)


@pytest.mark.full
def test_bad_family_inputs_change_nothing(repo):
    kgate(repo, "init")
    (repo / "ops" / "untracked_ref.py").write_text("CONFIG = {'n': 8}\n")
    branches = sh(repo, "git", "branch", "--list")
    for args, message in [
        (["Bad_Slug", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py"], "is not valid"),
        (["rmsnorm", "--reference", "ops/missing.py", "--target", "ops/x.py"], "does not exist"),
        (["rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py", "--parity", "close"], "not understood"),
        (["rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py", "--branch", "main"], "worktree"),
        (["rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py", "--set", "m=4"], "not a CONFIG key"),
        (["rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py", "--set", "n=big"], "give n an int value"),
        (["rmsnorm", "--reference", "ops/untracked_ref.py", "--target", "ops/x.py"], "is not committed"),
        (["rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py", "--dtype", "float99"], "graded dtype"),
    ]:
        proc = kgate(repo, "family", "new", *args)
        assert proc.returncode == 2 and message in proc.stderr and "fix:" in proc.stderr, (args, proc.stderr)
        assert not (repo / "kernel_experiments" / "rmsnorm").exists()
        assert sh(repo, "git", "branch", "--list") == branches
    derived = kgate(repo, "family", "new", "1p_Flash_Attention", "--derive", "--reference", "ops/rmsnorm_ref.py",
                    "--target", "ops/fa.py")
    assert derived.returncode == 0 and (repo / "kernel_experiments" / "flash-attention" / "family.toml").is_file()


def test_a_reference_with_uncommitted_changes_is_not_pinned(repo):
    kgate(repo, "init")
    (repo / "ops" / "rmsnorm_ref.py").write_text("CONFIG = {'n': 16}\n")
    proc = kgate(repo, "family", "new", "rmsnorm", "--reference", "ops/rmsnorm_ref.py", "--target", "ops/x.py")
    assert proc.returncode == 2 and "uncommitted changes" in proc.stderr
    assert not (repo / "kernel_experiments" / "rmsnorm").exists()


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
    assert "interpret mode" in proc.stderr and "can only be inconclusive" in proc.stderr  # said up front, on a CPU
    wt = family / ".repo"
    assert sh(wt, "git", "rev-parse", "--abbrev-ref", "HEAD") == "kernel/rmsnorm-v001"
    assert sh(wt, "git", "log", "-1", "--format=%s") == "K3(rmsnorm v001): stub — rmsnorm"
    (page,) = (wt / "kernel_experiments" / "rmsnorm").glob("*-v001-rmsnorm.md")
    text = page.read_text()
    for needle in ("status: in_progress", 'exp: "v001"', 'variant: "cpu:cpu"', 'bar: "p50 beats naive by >2% AND 3σ"',
                   'branch: "kernel/rmsnorm-v001"', "## Mechanism", "- [ ] cand2: two row blocks per step — predict 1.3x"):
        assert needle in text, needle
    assert sh(wt, "git", "status", "--porcelain") == ""


@pytest.mark.full
def test_git_runs_hardened_and_a_hung_hook_stops_with_a_clear_error_and_nothing_moved(repo, family):
    """Every git kgate runs gets LC_ALL=C, no terminal prompt and no optional locks (seen from a real
    hook's environment); a hook that hangs is stopped at the timeout, with its children, and the
    stub is undone."""
    hooks = repo / ".git" / "hooks"
    seen = repo.parent / "hook-env.txt"
    (hooks / "pre-commit").write_text(f"#!/bin/sh\nenv > '{seen}'\n")
    (hooks / "pre-commit").chmod(0o755)
    env = {**os.environ, "LC_ALL": "de_DE.UTF-8", "LANGUAGE": "de", "GIT_TERMINAL_PROMPT": "1"}
    proc = subprocess.run([sys.executable, "-m", "kgate", "stub", "rmsnorm", *STUB], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    hook_env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert hook_env["LC_ALL"] == "C" and hook_env["GIT_TERMINAL_PROMPT"] == "0" and hook_env["GIT_OPTIONAL_LOCKS"] == "0"
    wt = family / ".repo"
    head, branches = sh(wt, "git", "rev-parse", "HEAD"), sh(repo, "git", "branch", "--list")
    (hooks / "pre-commit").write_text("#!/bin/sh\nsleep 600 &\nsleep 600\n")  # a child of its own, too
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kgate", "stub", "rmsnorm", *STUB], cwd=repo, capture_output=True,
                          text=True, env={**os.environ, "KGATE_GIT_TIMEOUT": "3"}, timeout=300)
    assert proc.returncode == 2 and "did not finish in 3 s" in proc.stderr and "fix:" in proc.stderr, proc.stderr
    assert time.monotonic() - started < 290  # returned: the hook's own child did not hold the pipes open
    assert sh(wt, "git", "rev-parse", "HEAD") == head and sh(repo, "git", "branch", "--list") == branches
    assert sh(wt, "git", "status", "--porcelain") == ""
    bad = kgate_env(repo, {"KGATE_GIT_TIMEOUT": "soon"}, "stub", "rmsnorm", *STUB)
    assert bad.returncode == 2 and "KGATE_GIT_TIMEOUT='soon' is not a number of seconds" in bad.stderr


def kgate_env(cwd, extra, *args):
    return subprocess.run([sys.executable, "-m", "kgate", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **extra})


@pytest.mark.full
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
        (STUB + ["--variant", "tpu-v5e"], "the variant is read from a device query, never typed in"),
    ],
)
def test_bad_stubs_change_nothing(repo, family, args, message):
    wt = family / ".repo"
    branches = sh(wt, "git", "branch", "--list")
    proc = kgate(repo, "stub", "rmsnorm", *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert sh(wt, "git", "branch", "--list") == branches and sh(wt, "git", "status", "--porcelain") == ""


@pytest.mark.full
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


# -- the authoring phase: candidates, ledger, pivot, brief --------------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rmsnorm"
CAND_GRAMMAR = r"^cand[0-9]+\([a-z0-9-]+ v[0-9]{3}\): .+ — .+"


@pytest.fixture
def example_repo(tmp_path):
    """A home repo holding the bundled rmsnorm reference at ops/reference.py."""
    root = home_repo(tmp_path / "code", EXAMPLE / "reference.py")
    assert kgate(root, "init").returncode == 0
    proc = kgate(root, "family", "new", "rmsnorm", "--reference", "ops/reference.py", "--target", "ops/rmsnorm.py")
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture(scope="module")
def stubbed_once(tmp_path_factory):
    """`example_repo` with the default stub, made once per module: tests that only read it or
    refuse a command work on a copy (`copy_repo`)."""
    root = home_repo(tmp_path_factory.mktemp("stubbed") / "code", EXAMPLE / "reference.py")
    assert kgate(root, "init").returncode == 0
    proc = kgate(root, "family", "new", "rmsnorm", "--reference", "ops/reference.py", "--target", "ops/rmsnorm.py")
    assert proc.returncode == 0, proc.stderr
    _stub(root)
    return root


def _stub(repo, *extra):
    proc = kgate(repo, "stub", "rmsnorm", *STUB, "--diagnosis", "The reference reads each row twice.",
                 "--reading", "Pallas TPU pipelining", *extra)
    assert proc.returncode == 0, proc.stderr
    wt = repo / "kernel_experiments" / "rmsnorm" / ".repo"
    (page,) = (wt / "kernel_experiments" / "rmsnorm").glob("*-v001-rmsnorm.md")
    return wt, page


def _state(wt, page):
    """Everything a refused command must leave as it was."""
    return (sh(wt, "git", "rev-parse", "HEAD"), sh(wt, "git", "status", "--porcelain", "--untracked-files=all"),
            sh(wt, "git", "diff", "--cached"), sh(wt, "git", "branch", "--list"), page.read_text())


def _receipt(wt, tmp_path, name, *command):
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, "-m", "kgate", *command, "-r", "reference.py", "-c", "rmsnorm.py", "-o", str(out),
                           "--json"], cwd=wt / "ops", capture_output=True, text=True)
    assert out.is_file(), proc.stderr
    return out


@pytest.mark.full
def test_authoring_phase_end_to_end(example_repo, tmp_path):
    repo = example_repo
    wt, page = _stub(repo, "--plan", "cand3: pallas, one row block per step — predict 1.1x")
    brief = kgate(repo, "brief", "rmsnorm", "--json")
    assert brief.returncode == 0, brief.stdout
    items = json.loads(brief.stdout)["items"]
    assert items["diagnosis"] == "The reference reads each row twice." and items["bar"] == "p50 beats naive by >2% AND 3σ"
    assert items["work dir + branch"]["branch"] == "kernel/rmsnorm-v001" and items["chip + lock"]["chip"] == 0
    assert kgate(repo, "ledger", "rmsnorm", "--loaded", "Pallas TPU pipelining, roofline notes").returncode == 0

    shutil.copy(EXAMPLE / "xla_rewrite.py", wt / "ops" / "rmsnorm.py")
    r1 = _receipt(wt, tmp_path, "c1", "gate", "--class", "xla-rewrite")
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--class", "xla-rewrite", "--what", "jnp rewrite in float32",
                 "--receipt", r1, "--why", "kept: the baseline to beat")
    assert proc.returncode == 0, proc.stderr
    shutil.copy(EXAMPLE / "bad_nan_boundary.py", wt / "ops" / "rmsnorm.py")
    r2 = _receipt(wt, tmp_path, "c2", "gate")
    proc = kgate(repo, "cand", "rmsnorm", "cand2", "--what", "pallas with a padding mask", "--receipt", r2)
    assert proc.returncode == 0, proc.stderr
    shutil.copy(EXAMPLE / "pallas.py", wt / "ops" / "rmsnorm.py")
    r3 = _receipt(wt, tmp_path, "c3", "measure", "--set", "seq_len=16", "--set", "emb_dim=256", "--set", "batch=1",
                  "--budget", "1", "--min-rounds", "2", "--max-rounds", "4", "--sessions", "2", "--time-interpreted")
    proc = kgate(repo, "cand", "rmsnorm", "cand3", "--receipt", r3, "--why", "kept: correct, firing")
    assert proc.returncode == 0, proc.stderr
    assert "interpreter timings" in proc.stderr

    subjects = sh(wt, "git", "log", "--format=%s", "main..HEAD").splitlines()[::-1]
    assert subjects[0] == "K3(rmsnorm v001): stub — rmsnorm"
    assert len(subjects) == 4 and all(re.match(CAND_GRAMMAR, s) for s in subjects[1:])
    assert "parity FAIL" in subjects[2] and "(interpreted)" in subjects[3]
    assert sh(wt, "git", "status", "--porcelain") == ""

    ledger = json.loads(kgate(repo, "ledger", "rmsnorm", "--json").stdout)
    assert ledger["loaded"] == ["Pallas TPU pipelining", "roofline notes"]
    rows = {r["candidate"]: r for r in ledger["rows"]}
    shas = sh(wt, "git", "log", "--format=%H", "main..HEAD").splitlines()[::-1]
    for n, cand in enumerate(("cand1", "cand2", "cand3"), start=1):
        assert shas[n].startswith(rows[cand]["sha"])
        assert subjects[n].startswith(f"{cand}(rmsnorm v001): ")
    assert rows["cand1"]["class"] == "xla-rewrite" and rows["cand1"]["parity"].startswith("PASS")
    assert rows["cand2"]["parity"].startswith("FAIL") and rows["cand2"]["why"].startswith("rejected: gate FAIL at parity.")
    assert "(interpreted)" in rows["cand3"]["p50_ms"] and "(interpreted)" in rows["cand3"]["vs_naive"]
    assert rows["cand3"]["vs_naive"].split(" (interpreted)")[0].endswith("]")  # the interval, then the mark
    text = page.read_text()
    assert "- [x] cand1: one row block per grid step" in text and "- [x] cand3: pallas" in text
    assert "loaded: [Pallas TPU pipelining, roofline notes]" in text
    assert sh(wt, "git", "show", f"{shas[3]}:kernel_experiments/rmsnorm/receipts/v001-cand3.json") == r3.read_text().strip()
    # the file at each candidate commit is what its receipt measured
    assert hashlib.sha256(sh(wt, "git", "show", f"{shas[1]}:ops/rmsnorm.py").encode() + b"\n").hexdigest() == \
        json.loads(r1.read_text())["candidate"]["sha256"]


@pytest.mark.full
def test_abandon_extension_and_pivot(example_repo):
    repo = example_repo
    wt, page = _stub(repo)
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--abandon", "--reason", "the roofline says it cannot win")
    assert proc.returncode == 0, proc.stderr
    (wt / "ops" / "rmsnorm.py").write_text("# a candidate outside the plan\n")
    proc = kgate(repo, "cand", "rmsnorm", "cand9", "--what", "a hunch", "--why", "kept: worth a look",
                 "--reason", "the profile showed a second hot loop")
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert "- [x] cand9: a hunch — extension: the profile showed a second hot loop" in text
    assert "| cand1 | kernel-authored | — | not run |" in text and "abandoned: the roofline says it cannot win" in text
    proc = kgate(repo, "pivot", "rmsnorm", "kernel-authored→xla-rewrite", "--evidence", "receipts/v001-cand9.json")
    assert proc.returncode == 0, proc.stderr
    assert sh(wt, "git", "log", "-1", "--format=%s") == "pivot(rmsnorm v001): kernel-authored→xla-rewrite"
    text = page.read_text()
    assert "status: pivoted" in text and "- [-] cand2: two row blocks per step — predict 1.3x (closed: pivoted to xla-rewrite)" in text
    assert "## Pivot" in text and "not reached: cand2" in text
    (wt / "ops" / "rmsnorm.py").write_text("# more\n")
    proc = kgate(repo, "cand", "rmsnorm", "cand2", "--what", "x", "--why", "kept")
    assert proc.returncode == 2 and "was pivoted to xla-rewrite" in proc.stderr and "--class xla-rewrite" in proc.stderr
    status = kgate(repo, "status", "rmsnorm")
    assert status.returncode == 0 and "rmsnorm v001: pivoted" in status.stdout
    assert "next: kgate stub rmsnorm --class xla-rewrite" in status.stdout
    sh(wt, "git", "checkout", "--", "ops/rmsnorm.py")  # discard the refused edit
    proc = kgate(repo, "stub", "rmsnorm", *_replace(STUB, "--plan", "cand1: a jnp rewrite — predict 1.1x"),
                 "--class", "xla-rewrite")
    assert proc.returncode == 0 and "kernel/rmsnorm-v002" in proc.stderr, proc.stderr
    old = json.loads(kgate(repo, "ledger", "rmsnorm", "--exp", "v001", "--json").stdout)  # read from its branch
    assert old["branch"] == "kernel/rmsnorm-v001" and [r["candidate"] for r in old["rows"]] == ["cand1", "cand9"]
    assert json.loads(kgate(repo, "ledger", "rmsnorm", "--json").stdout)["rows"] == []  # the new experiment


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (None, ["cand7", "--what", "x", "--why", "kept"], "not in the pre-registered plan"),
        ("outside", ["cand1", "--what", "x", "--why", "kept"], "outside the work dir"),
        ("reference", ["cand1", "--what", "x", "--why", "kept"], "reference module ops/reference.py no longer matches"),
        (None, ["cand1", "--what", "two\nlines", "--why", "kept"], "does not match the cand grammar"),
        (None, ["cand1", "--what", "fast — really", "--why", "kept"], "contains ' — '"),
        (None, ["cand1", "--what", "x", "--why", "supported by the numbers"], "verdict language"),
        (None, ["cand1", "--what", "x"], "needs --why"),
        ("receipt", ["cand1", "--what", "x", "--receipt", "RECEIPT"], "is for a candidate with sha256"),
        ("dtype", ["cand1", "--what", "x", "--receipt", "RECEIPT"], "ran with float32 inputs; the family grades bfloat16"),
        ("no_dtype", ["cand1", "--what", "x", "--receipt", "RECEIPT"], "records no inputs' dtypes and gave no --dtype"),
        ("int_dtype", ["cand1", "--what", "x", "--receipt", "RECEIPT"], "asked for --dtype float32; the family grades"),
        ("page", ["cand1", "--what", "x", "--why", "kept"], "edits kgate did not make"),
        ("clean", ["cand1", "--what", "x", "--why", "kept"], "nothing to commit"),
        ("detached", ["cand1", "--what", "x", "--why", "kept"], "detached HEAD"),
    ],
)
def test_bad_candidates_change_nothing(stubbed_once, tmp_path, setup, args, message):
    repo, wt = copy_repo(stubbed_once, tmp_path / "code", "rmsnorm")
    (page,) = (wt / "kernel_experiments" / "rmsnorm").glob("*-v001-rmsnorm.md")
    if setup != "clean":
        (wt / "ops" / "rmsnorm.py").write_text("def workload(x, w):\n    return x\n")
    if setup == "outside":
        (wt / "README.md").write_text("notes\n")
    elif setup == "reference":
        with open(wt / "ops" / "reference.py", "a") as handle:
            handle.write("# tweak\n")
    elif setup == "page":
        page.write_text(page.read_text().replace("One pass over each row", "Two passes over each row"))
    elif setup == "detached":
        sh(wt, "git", "checkout", "-q", "--detach")
    elif setup == "receipt":
        forged = tmp_path / "other.json"
        forged.write_text(json.dumps({"command": "gate", "status": "PASS", "gates": {},
                                      "candidate": {"sha256": "0" * 64}, "reference": {"sha256": "1" * 64}}))
        args = [forged if a == "RECEIPT" else a for a in args]
    elif setup in ("dtype", "no_dtype", "int_dtype"):
        # the right candidate, graded in another dtype than the family's (its inputs show it, or it asked for one), or
        # in one unknown (a report that records no inputs, as lower's and fit's, and no --dtype)
        import hashlib

        other = tmp_path / "float32.json"
        target_sha = hashlib.sha256((wt / "ops" / "rmsnorm.py").read_bytes()).hexdigest()
        made = {"dtype": {"input_dtypes": ["float32"]}, "no_dtype": {},
                "int_dtype": {"input_dtypes": [], "dtype": "float32"}}[setup]  # integer inputs only, asked for float32
        other.write_text(json.dumps({"command": "gate", "status": "PASS", "gates": {}, **made,
                                     "candidate": {"sha256": target_sha}, "reference": {"sha256": "1" * 64}}))
        args = [other if a == "RECEIPT" else a for a in args]
    before = _state(wt, page)
    proc = kgate(repo, "cand", "rmsnorm", *args)
    assert proc.returncode == 2 and message in proc.stderr and "fix:" in proc.stderr, proc.stderr
    assert _state(wt, page) == before


@pytest.mark.full
def test_a_recorded_candidate_is_not_overwritten_and_pivot_needs_a_clean_work_dir(example_repo):
    repo = example_repo
    wt, page = _stub(repo)
    (wt / "ops" / "rmsnorm.py").write_text("# cand1\n")
    assert kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept").returncode == 0
    (wt / "ops" / "rmsnorm.py").write_text("# cand1, again\n")
    before = _state(wt, page)
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept")
    assert proc.returncode == 2 and "cand1 is already in the ledger" in proc.stderr and _state(wt, page) == before
    proc = kgate(repo, "pivot", "rmsnorm", "kernel-authored->flag", "--evidence", "x")
    assert proc.returncode == 2 and "uncommitted candidate would be left behind" in proc.stderr and _state(wt, page) == before
    for transition, needle in [("kernel-authored→kernel-authored", "does not change"), ("flag→xla-rewrite", "registered as"),
                               ("kernel-authored→magic", "unknown class")]:
        proc = kgate(repo, "pivot", "rmsnorm", transition, "--evidence", "x")
        assert proc.returncode == 2 and needle in proc.stderr, proc.stderr


@pytest.mark.full
def test_a_candidate_records_the_gotcha_row_that_fired_and_lint_checks_it_exists(example_repo):
    repo = example_repo
    wt, page = _stub(repo)
    (wt / "ops" / "rmsnorm.py").write_text("# a block of (4, 100): the TPU lowering refused it\n")
    before = _state(wt, page)
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--why", "rejected: does not lower", "--gotcha", "TPU-NO-SUCH-ROW")
    assert proc.returncode == 2 and "is not a row of the gotcha table" in proc.stderr and _state(wt, page) == before
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--why", "rejected: does not lower", "--gotcha", "TPU-BLOCK-TILING")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(kgate(repo, "ledger", "rmsnorm", "--json").stdout)["rows"]
    assert row["why"] == "rejected: does not lower (gotcha TPU-BLOCK-TILING)"
    assert "L13" not in kgate(repo, "lint", "rmsnorm").stdout
    page.write_text(page.read_text().replace("(gotcha TPU-BLOCK-TILING)", "(gotcha TPU-MADE-UP)"))
    lint = kgate(repo, "lint", "rmsnorm", "--json")
    assert any(f["code"] == "L13" and "TPU-MADE-UP" in f["evidence"] for f in json.loads(lint.stdout)["findings"])


@pytest.mark.full
def test_a_no_peek_violation_is_refused_with_evidence_and_a_hand_made_one_invalidates(example_repo):
    repo = example_repo
    wt = repo / "kernel_experiments" / "rmsnorm" / ".repo"
    (wt / "ops" / "solution.py").write_text("def workload(x, w):\n    return x\n")  # a known solution, in the repo
    sh(wt, "git", "add", "ops/solution.py")
    sh(wt, "git", "commit", "-qm", "a known solution")
    wt, page = _stub(repo, "--activity", "capability-eval", "--no-peek", "ops/solution.py")
    assert '"ops/solution.py"' in page.read_text()  # the list is part of the pre-registration
    (wt / "ops" / "rmsnorm.py").write_text("import jax\n\ndef workload(x, w):\n    from solution import workload as w2\n"
                                         "    return w2(x, w)\n")
    before = _state(wt, page)
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept")
    assert proc.returncode == 2 and "no-peek list forbids" in proc.stderr, proc.stderr
    assert "ops/rmsnorm.py:4 imports solution (no-peek: ops/solution.py)" in proc.stderr and _state(wt, page) == before
    # under the family's terms, verify (and every checking command) refuses it too, before running anything
    proc = kgate(repo, "verify", "--family", "rmsnorm", "--mode", "screen", "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["status"] == "ERROR", proc.stdout + proc.stderr
    assert "ops/rmsnorm.py:4 imports solution (no-peek: ops/solution.py)" in json.loads(proc.stdout)["error"]["problem"]
    (wt / "ops" / "scratch.py").write_text("import importlib\nsol = importlib.import_module('solution')\n")
    proc = kgate(repo, "gate", "--family", "rmsnorm", "-c", str(wt / "ops" / "scratch.py"))
    assert proc.returncode == 2 and "scratch.py:2 names 'solution'" in proc.stderr, proc.stderr
    (wt / "ops" / "scratch.py").unlink()
    assert _state(wt, page) == before
    (wt / "ops" / "rmsnorm.py").write_text("import jax\n\ndef workload(x, w):\n    return x\n")
    assert kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept").returncode == 0
    lint = json.loads(kgate(repo, "lint", "rmsnorm", "--json").stdout)
    assert not any(f["code"] == "L14" for f in lint["findings"])
    (wt / "ops" / "rmsnorm.py").write_text("import solution\nworkload = solution.workload\n")  # past kgate cand
    sh(wt, "git", "commit", "-qam", "cand2(rmsnorm v001): the solution — by hand")
    lint = json.loads(kgate(repo, "lint", "rmsnorm", "--json").stdout)
    (l14,) = [f for f in lint["findings"] if f["code"] == "L14"]
    assert "ops/rmsnorm.py:1 imports solution" in l14["evidence"] and l14["consequence"] == "invalid"
    report = kgate(repo, "report", "rmsnorm", "v001")  # the compliance line comes from the check
    assert "no-peek list (ops/solution.py) not read by any candidate: NO (L14)" in report.stdout, report.stderr
    bad = kgate(repo, "stub", "rmsnorm", *STUB, "--no-peek", "../outside.py")
    assert bad.returncode == 2 and "outside the home repo" in bad.stderr


@pytest.mark.full
def test_a_candidate_never_commits_a_profile_a_trace_or_a_large_file(example_repo):
    repo = example_repo
    wt, page = _stub(repo)
    (wt / "ops" / "rmsnorm.py").write_text("def workload(x, w):\n    return x\n")
    profile = wt / "ops" / "prof" / "plugins" / "profile" / "2026_12_01" / "vm.xplane.pb"
    profile.parent.mkdir(parents=True)
    profile.write_bytes(b"\0" * 100)
    before = _state(wt, page)
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept")
    assert proc.returncode == 2 and "never go into git" in proc.stderr and "vm.xplane.pb (a profile or trace)" in proc.stderr
    assert _state(wt, page) == before
    shutil.rmtree(wt / "ops" / "prof")
    (wt / "ops" / "table.bin").write_bytes(b"\0" * (6 * 1024 * 1024))
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept")
    assert proc.returncode == 2 and "ops/table.bin (6291456 bytes)" in proc.stderr
    (wt / "ops" / "table.bin").unlink()
    assert kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept").returncode == 0


@pytest.mark.full
def test_a_lead_is_committed_alone_listed_in_the_report_and_refused_once_filed(example_repo):
    repo = example_repo
    wt, page = _stub(repo)
    (wt / "ops" / "rmsnorm.py").write_text("def workload(x, w):\n    return x\n")  # a candidate in progress
    sh(wt, "git", "add", "ops/rmsnorm.py")  # even staged, it stays out of the lead's commit
    proc = kgate(repo, "lead", "rmsnorm", "try  two row blocks\nper grid step")
    assert proc.returncode == 0, proc.stderr
    assert sh(wt, "git", "log", "-1", "--format=%s") == "lead(rmsnorm v001): try two row blocks per grid step"
    assert sh(wt, "git", "show", "--name-only", "--format=", "HEAD").splitlines() == [str(page.relative_to(wt))]
    assert "A  ops/rmsnorm.py" in sh(wt, "git", "status", "--porcelain")
    assert "## Leads" in page.read_text() and "- try two row blocks per grid step" in page.read_text()
    assert kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept").returncode == 0  # the loop goes on
    lint = json.loads(kgate(repo, "lint", "rmsnorm", "--json").stdout)
    assert not any(f["code"] in ("L04", "L07") for f in lint["findings"]), lint  # a lead is in the grammar
    report = kgate(repo, "report", "rmsnorm", "v001").stdout
    assert "## Leads (seeds of the next experiment)\n\n- try two row blocks per grid step" in report
    for bad, message in (("", "empty"), ("this is supported", "verdict language")):
        proc = kgate(repo, "lead", "rmsnorm", bad)
        assert proc.returncode == 2 and message in proc.stderr


@pytest.mark.full
@pytest.mark.parametrize("budget, over", [("90", True), ("180", False)])
def test_the_reading_budget_is_checked_from_the_commit_times(example_repo, budget, over):
    repo = example_repo
    wt, page = _stub(repo, "--reading-budget", budget)
    assert f"reading_budget_min: {budget}" in page.read_text()
    stub_time = int(sh(wt, "git", "log", "-1", "--format=%ct"))
    (wt / "ops" / "rmsnorm.py").write_text("def workload(x, w):\n    return x\n")
    later = {"GIT_COMMITTER_DATE": f"{stub_time + 7200} +0000"}  # the first candidate, two hours after the stub
    assert kgate_env(repo, later, "cand", "rmsnorm", "cand1", "--why", "kept").returncode == 0
    findings = json.loads(kgate(repo, "lint", "rmsnorm", "--json").stdout)["findings"]
    l15 = [f for f in findings if f["code"] == "L15"]
    assert bool(l15) == over and all("120 min from the stub" in f["evidence"] and f["consequence"] == "advisory"
                                     for f in l15)
    bad = kgate(repo, "stub", "rmsnorm", *STUB, "--reading-budget", "-5")
    assert bad.returncode == 2 and "is not a number of minutes" in bad.stderr


def _one_failed_attempt(repo, tmp_path):
    """A stub, the loaded line, a transcript, and one candidate committed as rejected on the tool's error."""
    wt, page = _stub(repo)
    assert kgate(repo, "ledger", "rmsnorm", "--loaded", "Pallas TPU pipelining").returncode == 0
    transcript = tmp_path / "transcript.txt"
    transcript.write_text("$ kgate gate --family rmsnorm\nerror: XlaRuntimeError: INTERNAL: Mosaic failed\n")
    (wt / "ops" / "rmsnorm.py").write_text("def workload(x, w):\n    return x\n")
    assert kgate(repo, "cand", "rmsnorm", "cand1", "--why", "rejected: INTERNAL: Mosaic failed").returncode == 0
    return wt, page, transcript


@pytest.mark.full
def test_the_honorable_exit_files_blocked_with_the_transcript_only_after_two_attempts(example_repo, tmp_path):
    repo = example_repo
    wt, page, transcript = _one_failed_attempt(repo, tmp_path)
    before = _state(wt, page)
    one = kgate(repo, "verdict", "rmsnorm", "v001", "--blocked", "tooling", "--transcript", transcript)
    assert one.returncode == 2 and "1 recorded attempt(s) that did not pass: blocked is filed only after two" in one.stderr
    assert _state(wt, page) == before
    (wt / "ops" / "rmsnorm.py").write_text("def workload(x, w):\n    return x + 0\n")
    assert kgate(repo, "cand", "rmsnorm", "cand2", "--why", "rejected: INTERNAL: Mosaic failed again").returncode == 0
    for args, message in ((["--blocked", "tooling"], "go together"), (["--blocked", "mood", "--transcript", transcript],
                          "is not one of"), (["--blocked", "tooling", "--transcript", tmp_path / "none.txt"],
                          "does not exist"), (["--blocked", "tooling", "--verify"], "exactly one of")):
        proc = kgate(repo, "verdict", "rmsnorm", "v001", *args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    proc = kgate(repo, "verdict", "rmsnorm", "v001", "--blocked", "tooling", "--transcript", transcript, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "blocked"
    assert sh(wt, "git", "log", "-1", "--format=%s") == "K7(rmsnorm v001): blocked — tooling"
    text = page.read_text()
    assert "status: filed" in text and 'verdict: "blocked"' in text
    kept = wt / page.parent.relative_to(wt) / "receipts" / "v001-blocked-transcript.txt"
    assert kept.read_bytes() == transcript.read_bytes()
    assert hashlib.sha256(transcript.read_bytes()).hexdigest() in text
    results = (repo / "kernel_experiments" / "rmsnorm" / "RESULTS.tsv").read_text().splitlines()
    assert results[-1].split("\t")[9] == "blocked"
    lint = json.loads(kgate(repo, "lint", "rmsnorm", "--json").stdout)
    assert lint["exit_code"] == 0, lint["findings"]
    status = json.loads(kgate(repo, "status", "--json").stdout)["families"][0]
    assert status["stage"] == "report" and "verdict blocked" in status["done"]
    report = kgate(repo, "report", "rmsnorm", "v001").stdout
    assert "**blocked**" in report and "filed blocked (tooling): the transcript is receipts/v001-blocked-transcript.txt" in report


@pytest.mark.full
def test_blocked_is_not_a_way_around_the_record(example_repo, tmp_path):
    """Attempts are kgate cand commits that did not pass; a page edited to say blocked waives nothing;
    a lead does not commit hand edits of the page."""
    repo = example_repo
    wt, page, transcript = _one_failed_attempt(repo, tmp_path)
    # a ledger row typed by hand, committed past kgate: not an attempt (and lint says the ledger lies)
    text = page.read_text()
    row = [ln for ln in text.splitlines() if ln.startswith("| cand1 |")][0]
    page.write_text(text.replace(row, row + "\n" + row.replace("cand1", "cand2")))
    lead = kgate(repo, "lead", "rmsnorm", "an idea")
    assert lead.returncode == 2 and "edits kgate did not make" in lead.stderr  # a lead does not carry the edit in
    sh(wt, "git", "commit", "-qam", "cand2(rmsnorm v001): typed — by hand")
    proc = kgate(repo, "verdict", "rmsnorm", "v001", "--blocked", "tooling", "--transcript", transcript)
    assert proc.returncode == 2 and "1 recorded attempt(s) that did not pass" in proc.stderr, proc.stderr
    # an in-progress page that says blocked waives no missing receipt
    page.write_text(page.read_text().replace("status: in_progress", 'status: in_progress\nverdict: "blocked"'))
    sh(wt, "git", "commit", "-qam", "cand3(rmsnorm v001): say blocked — by hand")
    findings = json.loads(kgate(repo, "lint", "rmsnorm", "--json").stdout)["findings"]
    assert any(f["code"] == "L02" and "cand1" in f["evidence"] for f in findings)


@pytest.mark.full
def test_brief_names_every_missing_item(repo, family):
    assert kgate(repo, "stub", "rmsnorm", *STUB).returncode == 0  # no diagnosis, no reading
    proc = kgate(repo, "brief", "rmsnorm")
    assert proc.returncode == 2
    assert "MISSING diagnosis" in proc.stdout and "MISSING required reading" in proc.stdout
    assert "missing 2 item(s): diagnosis; required reading" in proc.stderr
    data = json.loads(kgate(repo, "brief", "rmsnorm", "--json").stdout)
    assert data["status"] == "INCOMPLETE" and len(data["missing"]) == 2 and data["items"]["bar"]
    status = json.loads(kgate(repo, "status", "--json").stdout)  # the brief blocks the loop, each item named
    assert status["status"] == "BLOCKED" and status["families"][0]["stage"] == "brief"
    assert status["families"][0]["blocked_by"] == data["missing"]
    unknown = kgate(repo, "status", "nosuch")
    assert unknown.returncode == 2 and "family 'nosuch' does not exist" in unknown.stderr
    sh(family / ".repo", "git", "checkout", "-q", "kernel/rmsnorm")
    data = json.loads(kgate(repo, "brief", "rmsnorm", "--json").stdout)
    assert any(m.startswith("work dir + branch: the family worktree") for m in data["missing"])
    assert any(m.startswith("bar:") for m in data["missing"])


@pytest.mark.full
def test_a_failed_commit_puts_page_receipt_and_index_back(example_repo, tmp_path):
    repo = example_repo
    wt, page = _stub(repo)
    shutil.copy(EXAMPLE / "xla_rewrite.py", wt / "ops" / "rmsnorm.py")
    receipt = _receipt(wt, tmp_path, "c1", "gate")
    hook = Path(sh(wt, "git", "rev-parse", "--git-common-dir")) / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'hook says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = _state(wt, page)
    proc = kgate(repo, "cand", "rmsnorm", "cand1", "--receipt", receipt, "--why", "kept")
    assert proc.returncode == 2 and "hook says no" in proc.stderr
    assert _state(wt, page) == before and not (page.parent / "receipts").exists()


@pytest.mark.parametrize("item", [
    "cand1: fuse the two passes — predict 1.3x",
    "cand1: fuse the two passes – predict 1.3x",
    "cand1: fuse the two passes -- predict 1.3x",
    "cand1: fuse the two-pass loop - predict 1.3x",
])
def test_plan_items_accept_the_separators_people_type(item):
    from kgate.record.stub import parse_plan

    (entry,) = parse_plan([item])
    assert entry.cand == "cand1" and entry.text.endswith("— predict 1.3x") and "fuse the two" in entry.text


def test_a_plan_item_without_a_separator_names_every_form():
    from kgate.errors import KgateError
    from kgate.record.stub import parse_plan

    with pytest.raises(KgateError) as info:
        parse_plan(["cand1: fuse the two passes, predict 1.3x"])
    assert all(form in info.value.fix for form in ("' — '", "' – '", "' -- '", "' - '"))


@pytest.mark.timing  # the bar must be decided MISSED by a measured interval
def test_the_cost_ladder_is_climbed_only_after_the_cheaper_class_missed_the_bar(example_repo, tmp_path):
    repo = example_repo
    bar = "speedup > 50x"  # a bar no rewrite reaches on this machine: its interval lies wholly below it
    wt, page = _stub(repo, "--class", "xla-rewrite", "--bar", bar)
    shutil.copy(EXAMPLE / "pallas.py", wt / "ops" / "rmsnorm.py")
    before = _state(wt, page)
    escalate = ["--escalate", "xla-rewrite->kernel-authored", "--reason", "XLA fuses both passes already"]
    proc = kgate(repo, "cand", "rmsnorm", "cand2", "--why", "kept", *escalate)
    assert proc.returncode == 2 and "no earlier candidate of class xla-rewrite was recorded" in proc.stderr, proc.stderr
    assert _state(wt, page) == before
    bad = kgate(repo, "cand", "rmsnorm", "cand2", "--why", "kept", "--escalate", "kernel-authored->flag", "--reason", "x")
    assert bad.returncode == 2 and "does not climb the ladder" in bad.stderr and _state(wt, page) == before
    forged = kgate(repo, "cand", "rmsnorm", "cand2", "--why", "kept (escalated xla-rewrite→kernel-authored: trust me)",
                   "--reason", "x")
    assert forged.returncode == 2 and "only --escalate writes" in forged.stderr and _state(wt, page) == before

    shutil.copy(EXAMPLE / "xla_rewrite.py", wt / "ops" / "rmsnorm.py")
    r1 = _receipt(wt, tmp_path, "c1", "measure", "--bar", bar, "--set", "seq_len=64", "--budget", "4", "--sessions", "2")
    assert json.loads(r1.read_text())["gates"]["bar"]["outcome"] == "MISSED"
    assert kgate(repo, "cand", "rmsnorm", "cand1", "--receipt", r1, "--why", "rejected: far below the bar").returncode == 0

    # a kernel recorded with --class alone climbs the ladder unrecorded: lint caps the verdict (L16)
    shutil.copy(EXAMPLE / "pallas.py", wt / "ops" / "rmsnorm.py")
    r2 = _receipt(wt, tmp_path, "c2", "gate")
    proc = kgate(repo, "cand", "rmsnorm", "cand2", "--class", "kernel-authored", "--receipt", r2, "--why", "kept",
                 "--what", "pallas, one row block per step", "--reason", "the kernel")
    assert proc.returncode == 0, proc.stderr
    # recorded with --escalate, after the rewrite missed the registered bar: accepted, in the ledger and the report
    (wt / "ops" / "rmsnorm.py").write_text((EXAMPLE / "pallas.py").read_text() + "\n# block rows 16\n")
    r3 = _receipt(wt, tmp_path, "c3", "gate")
    proc = kgate(repo, "cand", "rmsnorm", "cand3", "--receipt", r3, "--why", "kept", "--what", "pallas, 16 rows",
                 *escalate)
    assert proc.returncode == 0, proc.stderr
    rows = {r["candidate"]: r for r in json.loads(kgate(repo, "ledger", "rmsnorm", "--json").stdout)["rows"]}
    assert rows["cand3"]["class"] == "kernel-authored"
    assert rows["cand3"]["why"].endswith("(escalated xla-rewrite→kernel-authored: XLA fuses both passes already)")
    findings = [f for f in json.loads(kgate(repo, "lint", "rmsnorm", "--json").stdout)["findings"] if f["code"] == "L16"]
    assert [(f["title"], f["consequence"]) for f in findings] == [("unrecorded escalation", "cap: inconclusive")]
    assert findings[0]["evidence"].startswith("cand2 is kernel-authored, above the registered class xla-rewrite")
    report = kgate(repo, "report", "rmsnorm", "v001")
    assert "escalation cand3: xla-rewrite→kernel-authored: XLA fuses both passes already" in report.stdout


@pytest.mark.full
def test_a_recorded_sweep_commits_every_point_with_its_receipt_and_lints_clean(example_repo):
    repo = example_repo
    wt, page = _stub(repo)
    assert kgate(repo, "ledger", "rmsnorm", "--loaded", "Pallas TPU pipelining").returncode == 0
    shutil.copy(EXAMPLE / "pallas_tiles.py", wt / "ops" / "rmsnorm.py")
    before = _state(wt, page)
    grid = ["--grid", "block_rows=4,16", "--grid", "sub_rows=8"]
    # refused before any point runs, nothing changed: a scratch candidate, two families named
    scratch = wt / "ops" / "scratch.py"
    shutil.copy(EXAMPLE / "pallas_tiles.py", scratch)
    proc = kgate(repo, "sweep", "--record", "rmsnorm", "-c", scratch, *grid)
    assert proc.returncode == 2 and "--record commits the family's target" in proc.stderr, proc.stderr
    scratch.unlink()
    proc = kgate(repo, "sweep", "--record", "rmsnorm", "--family", "other", *grid)
    assert proc.returncode == 2 and "name two families" in proc.stderr and _state(wt, page) == before

    proc = kgate(repo, "sweep", "--record", "rmsnorm", *grid, "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a pass with advisories: nothing timed on a CPU
    recorded = json.loads(proc.stdout)["recorded"]
    assert [(r["candidate"], r["point"]) for r in recorded] == [("cand1", {"block_rows": 4, "sub_rows": 8}),
                                                               ("cand3", {"block_rows": 16, "sub_rows": 8})]
    subjects = sh(wt, "git", "log", "--format=%s", "-2").splitlines()
    assert all(re.match(CAND_GRAMMAR, s) for s in subjects), subjects
    assert subjects[1].startswith("cand1(rmsnorm v001): one row block per grid step, block_rows=4,sub_rows=8 — ")
    assert "gate FAIL at lowering" in subjects[1]
    rows = {r["candidate"]: r for r in json.loads(kgate(repo, "ledger", "rmsnorm", "--json").stdout)["rows"]}
    assert rows["cand1"]["why"].startswith("rejected: gate FAIL at lowering")
    assert rows["cand3"]["why"] == "kept: passes its gate; not timed here"
    for cand, block in (("cand1", 4), ("cand3", 16)):  # each row's receipt is its point's
        receipt = json.loads((page.parent / "receipts" / f"v001-{cand}.json").read_text())
        assert receipt["candidate"]["kwargs"]["block_rows"] == block
    text = page.read_text()
    assert "- [x] cand1: one row block per grid step" in text
    assert "- [x] cand3: one row block per grid step, block_rows=16,sub_rows=8 — extension: point 2/2 of the cand1 sweep" in text
    # a point is committed only with its own receipt (the sweep's records are checked like any cand)
    from kgate.record import experiment, workspace

    before = _state(wt, page)
    with pytest.raises(KgateError, match="is for keyword arguments"):
        experiment.cand(workspace.find(repo), experiment.CandRequest(
            "rmsnorm", "cand4", "a point", page.parent / "receipts" / "v001-cand1.json", "kept", "a point",
            point={"block_rows": 8, "sub_rows": 8}))
    assert _state(wt, page) == before
    assert kgate(repo, "cand", "rmsnorm", "cand2", "--abandon", "--reason", "the sweep covered it").returncode == 0
    lint = json.loads(kgate(repo, "lint", "rmsnorm", "--json").stdout)
    assert lint["status"] in ("CLEAN", "ADVISORY"), lint["findings"]


def test_the_graded_dtype_is_shown_by_the_inputs_or_by_what_the_run_asked_for():
    """A report stands for the family's dtype when its floating inputs are in it, when it asked for
    it, or when it made only integer inputs and asked for nothing (no dtype to run them in);
    a report that records no inputs (lower, fit) must have asked for it."""
    from kgate.errors import KgateError
    from kgate.record.summary import ReportSummary

    def summary(**data):
        return ReportSummary.from_json({"command": "gate", "status": "PASS", "gates": {}, **data}, Path("r.json"), "")

    summary(input_dtypes=["bfloat16"]).check_dtype("bfloat16")
    summary(input_dtypes=[]).check_dtype("bfloat16")  # integer inputs, a module that takes no --dtype
    summary(input_dtypes=[], dtype="bfloat16").check_dtype("bfloat16")
    summary(dtype="bfloat16").check_dtype("bfloat16")  # lower, fit: what it asked for
    for data, says in [({"input_dtypes": ["float32"]}, "ran with float32 inputs"),
                       ({"input_dtypes": [], "dtype": "float32"}, "asked for --dtype float32"),
                       ({}, "records no inputs' dtypes and gave no --dtype")]:
        with pytest.raises(KgateError, match=says):
            summary(**data).check_dtype("bfloat16")


def test_a_native_dtype_family_stands_only_for_runs_that_asked_for_no_dtype():
    """A family whose reference makes its own dtype (the Model protocol) grades NATIVE: a run that
    asked for none stands, one that asked for any --dtype does not; --family gives no --dtype."""
    from kgate.errors import KgateError
    from kgate.record.summary import ReportSummary
    from kgate.record.terms import Terms, resolve
    from kgate.record.workspace import NATIVE

    def summary(**data):
        return ReportSummary.from_json({"command": "gate", "status": "PASS", "gates": {}, **data}, Path("r.json"), "")

    summary(input_dtypes=["float32"]).check_dtype(NATIVE)
    with pytest.raises(KgateError, match="asked for --dtype float32; the family grades the dtype its reference makes"):
        summary(input_dtypes=["float32"], dtype="float32").check_dtype(NATIVE)
    terms = Terms("softmax", Path("ops/reference.py"), Path("ops/softmax.py"), {}, NATIVE, "floor:5", None, None, None)
    assert resolve(terms, dtype=None)["dtype"] is None
    with pytest.raises(KgateError, match="contradicts the family softmax registered dtype: the one its reference makes"):
        resolve(terms, dtype="bfloat16")


def test_a_family_registers_its_backend_and_its_checks_take_it(tmp_path):
    """`family new --backend torch` (a reference that imports both frameworks): the binding keeps
    it, --family runs take it, a --backend that contradicts it is refused, and a receipt run on
    another backend is not the family's evidence."""
    from kgate.errors import KgateError
    from kgate.record.terms import Terms, resolve

    root = tmp_path / "code"
    reference = tmp_path / "both.py"
    reference.write_text("import jax  # noqa: F401\n" + (EXAMPLES / "model_torch" / "softmax_reference.py").read_text())
    home_repo(root, reference)
    assert kgate(root, "init").returncode == 0
    proc = kgate(root, "family", "new", "softmax", "--reference", "ops/reference.py", "--target", "ops/softmax.py",
                 "--backend", "torch")
    assert proc.returncode == 0, proc.stderr
    binding = tomllib.loads((root / "kernel_experiments" / "softmax" / "family.toml").read_text())["family"]
    assert binding["backend"] == "torch"
    bad = kgate(root, "family", "new", "other", "--reference", "ops/reference.py", "--target", "ops/o.py",
                "--backend", "tpu")
    assert bad.returncode == 2 and "--backend 'tpu' is not one kgate has" in bad.stderr
    terms = Terms("softmax", root / "ops/reference.py", root / "ops/softmax.py", {}, "native", "floor:5", None, None,
                  None, backend="torch")
    assert resolve(terms, backend=None)["backend"] == "torch"
    with pytest.raises(KgateError, match="--backend jax contradicts the family softmax registered --backend torch"):
        resolve(terms, backend="jax")
    from kgate.record.family import load
    from kgate.record.summary import ReportSummary
    from kgate.record.workspace import find

    family = load(find(root), "softmax")

    def ran_on(backend):
        return ReportSummary.from_json({"command": "verify", "status": "PASS", "gates": {}, "backend": backend},
                                       Path("r.json"), "")

    ran_on("torch").check_backend(family)
    with pytest.raises(KgateError, match="r.json ran on the jax backend; the family's checks run on torch"):
        ran_on("jax").check_backend(family)


def test_a_model_protocol_family_grades_its_own_dtype_and_pins_only_its_shape_globals(tmp_path):
    """`family new` on a KernelBench-format module: the graded dtype is the one get_inputs makes
    (no --dtype can be given to it), and --set keys must be sizes the module assigns."""
    root = home_repo(tmp_path / "code", EXAMPLES / "model_torch" / "softmax_reference.py")
    assert kgate(root, "init").returncode == 0
    before = sh(root, "git", "branch", "--list")
    for extra, says in [(("--set", "dims=512"), "does not assign at its top level (its shape globals: batch_size, dim)"),
                        (("--dtype", "float32"), "makes its inputs in its own dtype")]:
        proc = kgate(root, "family", "new", "softmax", "--reference", "ops/reference.py", "--target", "ops/softmax.py", *extra)
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr
        assert not (root / "kernel_experiments" / "softmax").exists() and sh(root, "git", "branch", "--list") == before
    proc = kgate(root, "family", "new", "softmax", "--reference", "ops/reference.py", "--target", "ops/softmax.py",
                 "--set", "batch_size=64")
    assert proc.returncode == 0, proc.stderr
    binding = tomllib.loads((root / "kernel_experiments" / "softmax" / "family.toml").read_text())["family"]
    assert binding["graded_dtype"] == "native" and binding["op_point"] == {"batch_size": 64}


def test_the_commands_that_act_say_what_they_made_as_one_json_document(tmp_path):
    """init, family new, stub, lead and pivot under --json: one `record` document on stdout
    (what each wrote or committed), nothing else there; a refusal is the error document."""
    root = home_repo(tmp_path / "code", EXAMPLE / "reference.py")

    def run(*args):
        proc = kgate(root, *args, "--json")
        return proc.returncode, json.loads(proc.stdout)  # exactly one document

    code, init = run("init")
    assert code == 0 and init["command"] == "init" and init["wrote"] == [str(root / "kgate.toml")]
    code, fam = run("family", "new", "rmsnorm", "--reference", "ops/reference.py", "--target", "ops/rmsnorm.py")
    assert code == 0 and fam["slug"] == "rmsnorm" and fam["branch"] == "kernel/rmsnorm" and len(fam["reference_sha256"]) == 64
    code, stub = run("stub", "rmsnorm", *STUB)
    (page,) = [Path(p) for p in stub["wrote"]]
    assert code == 0 and page.is_file() and page.name.endswith("-v001-rmsnorm.md")
    code, lead = run("lead", "rmsnorm", "try  a two-pass   variant")
    assert code == 0 and lead["lead"] == "try a two-pass variant" and len(lead["sha"]) == 40
    code, pivot = run("pivot", "rmsnorm", "kernel-authored→xla-rewrite", "--evidence", "the roofline")
    assert code == 0 and pivot["closed"] == ["cand1", "cand2"] and pivot["message"].startswith("pivot(rmsnorm v001)")
    code, refused = run("lead", "nosuch", "x")
    assert code == 2 and refused["status"] == "ERROR" and refused["error"]["fix"]


def test_new_says_what_it_wrote_and_what_to_run_next_as_json(tmp_path):
    proc = kgate(tmp_path, "new", "my_norm", "--json")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["command"] == "new" and out["next_step"].startswith("kgate gate -r my_norm")
    assert all((tmp_path / p).is_file() or Path(p).is_file() for p in out["wrote"])
    again = kgate(tmp_path, "new", "my_norm", "--json")  # refused: nothing overwritten
    assert again.returncode == 2 and json.loads(again.stdout)["status"] == "ERROR"


def test_an_interpreters_speedup_is_marked_in_the_ledger_cell_and_the_commit_subject():
    """A speedup timed in an interpreter says so wherever it is written, not only beside the p50."""
    from kgate.report.author import _SPEEDUP_CELL
    from kgate.record.summary import ReportSummary

    timing = {"candidate": {"p50_ms": 2.0}, "speedup": {"estimate": 1.5, "low": 1.2, "high": 1.9}}
    data = {"command": "measure", "status": "PASS", "gates": {"timing": timing}}
    interpreted = ReportSummary.from_json({**data, "interpreted": True}, Path("r.json"), "")
    compiled = ReportSummary.from_json({**data, "interpreted": False}, Path("r.json"), "")
    assert interpreted.speedup_cell == "1.500x [1.200, 1.900] (interpreted)"
    assert "1.500x vs naive [1.200, 1.900] (interpreted)" in interpreted.summary()
    assert compiled.speedup_cell == "1.500x [1.200, 1.900]" and "(interpreted)" not in compiled.summary()
    assert _SPEEDUP_CELL.match(interpreted.speedup_cell)  # the author's report still reads the interval


@pytest.mark.full
def test_report_json_carries_the_same_facts_as_its_markdown_and_refuses_as_json(example_repo):
    repo = example_repo
    wt, page = _stub(repo)
    (wt / "ops" / "rmsnorm.py").write_text("def workload(x, w):\n    return x\n")
    assert kgate(repo, "cand", "rmsnorm", "cand1", "--why", "kept").returncode == 0
    assert kgate(repo, "lead", "rmsnorm", "try two row blocks").returncode == 0
    markdown = kgate(repo, "report", "rmsnorm", "v001").stdout
    proc = kgate(repo, "report", "rmsnorm", "v001", "--json", "-o", repo / "report.md")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # only the document on stdout; -o still writes the Markdown
    assert (repo / "report.md").read_text().strip() == markdown.strip()
    assert data["status"] == "DONE" and data["command"] == "report" and data["experiment"] in markdown
    assert [r["candidate"] for r in data["ledger"]["rows"]] == ["cand1"] and data["final"]["candidate"] == "cand1"
    assert data["leads"] == ["try two row blocks"] and data["compliance"] in markdown
    assert all(b in markdown for b in data["blockers"]) and data["verdict"] is None
    bad = kgate(repo, "report", "rmsnorm", "v009", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["status"] == "ERROR"


def test_a_kgate_toml_checked_out_in_an_experiment_worktree_finds_the_outer_workspace(tmp_path):
    from kgate.record import workspace

    outer = tmp_path / "code"
    text = ('[workspace]\nexperiments = "kernel_experiments"\nhome_repo = "."\n\n'
            '[defaults]\ngraded_dtype = "bfloat16"\nparity = "floor"\nchip = 0\n')
    (outer / "kernel_experiments" / "rmsnorm" / ".repo" / "ops").mkdir(parents=True)
    (outer / "kgate.toml").write_text(text)
    inner = outer / "kernel_experiments" / "rmsnorm" / ".repo"
    (inner / "kgate.toml").write_text(text)  # the home repo's committed copy, in the experiment's worktree
    found = workspace.find(inner / "ops")
    assert found.root == outer.resolve() and found.experiments == (outer / "kernel_experiments").resolve()
    (tmp_path / "kgate.toml").write_text("not toml [")  # a broken file further up is not this workspace's
    assert workspace.find(inner).root == outer.resolve()
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "kgate.toml").write_text(text)  # a workspace of its own, not inside another's experiments
    assert workspace.find(elsewhere).root == elsewhere.resolve()
