"""Activity constraints: a candidate may not read what the stub's no-peek list names, however it
reaches it (adversarial candidates, one per way of peeking), and honest candidates pass."""

from pathlib import Path

import pytest

from kgate.errors import KgateError
from kgate.record import nopeek


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "__init__.py").write_text("")
    (tmp_path / "solutions" / "rmsnorm_fast.py").write_text("def workload(x, w):\n    return x\n")
    (tmp_path / "ops" / "solution.py").write_text("def workload(x, w):\n    return x\n")
    (tmp_path / "ops" / "helpers.py").write_text("import math\n")
    (tmp_path / "ops" / "relay.py").write_text("from solution import workload\n")  # a module that peeks for you
    return tmp_path


def check(repo, source, listed=("ops/solution.py", "solutions")):
    (repo / "ops" / "rmsnorm.py").write_text(source)
    return nopeek.violations([repo / "ops" / "rmsnorm.py"], repo, nopeek.parse(list(listed), repo))


@pytest.mark.parametrize("source, evidence", [
    ("import solution\n", "imports solution"),  # beside the candidate, as the loader resolves it
    ("from solution import workload\n", "imports solution"),
    ("import ops.solution as s\n", "imports ops.solution"),
    ("from solutions.rmsnorm_fast import workload\n", "imports solutions.rmsnorm_fast"),
    ("from solutions import rmsnorm_fast\n", "imports solutions"),
    ("import relay\n", "relay.py:1 imports solution"),  # the import closure, through a module of the repo
    ("import importlib.util\nspec = importlib.util.spec_from_file_location('s', 'ops/solution.py')\n",
     "names 'ops/solution.py'"),
    ("src = open('solution.py').read()\n", "names 'solution.py'"),
    ("def workload(x, w):\n    import solution\n    return solution.workload(x, w)\n", "imports solution"),  # late
])
def test_every_way_of_reaching_a_listed_item_is_found_with_its_line(repo, source, evidence):
    found = check(repo, source)
    assert found and any(evidence in line for line in found), found


@pytest.mark.parametrize("setup, source, evidence", [
    # a helper in a sub-folder imports the solution as the loader would resolve it (the candidate's folder)
    ({"ops/helpers/__init__.py": "", "ops/helpers/x.py": "import solution\n"}, "from helpers import x\n",
     "imports solution"),
    ({}, "mod = __import__('ops.solution')\n", "names 'ops.solution'"),
    ({}, "import importlib\nmod = importlib.import_module('solution')\n", "names 'solution'"),
    ({}, "src = open(b'ops/solution.py').read()\n", "names 'ops/solution.py'"),
    ({}, "# coding: unicode_escape\n\\u0069mport sol\\u0075tion\n", "imports solution"),  # a codec hides it
])
def test_the_ways_a_static_reader_is_fooled_most_often_are_found(repo, setup, source, evidence):
    for name, text in setup.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    found = check(repo, source)
    assert any(evidence in line for line in found), found


def test_a_symlinked_candidate_a_module_entry_by_path_and_the_home_repo_around_a_worktree(repo, tmp_path):
    (repo / "ops" / "rmsnorm.py").symlink_to(repo / "ops" / "solution.py")  # the candidate is the solution
    found = nopeek.violations([repo / "ops" / "rmsnorm.py"], repo, nopeek.parse(["ops/solution.py"], repo))
    assert found == ["ops/solution.py is itself a no-peek item (no-peek: ops/solution.py)"]
    (repo / "ops" / "modsol.py").write_text("x = 1\n")
    entry = nopeek.parse(["ops.modsol"], repo)  # a module entry: matched by its file too
    (repo / "ops" / "other.py").write_text("import modsol\n")
    assert nopeek.violations([repo / "ops" / "other.py"], repo, entry)
    home = tmp_path / "home"  # a worktree inside the home repo: a path out of it into the home repo counts
    (home / "ops").mkdir(parents=True)
    (home / "ops" / "solution.py").write_text("x = 1\n")
    wt = home / "kernel_experiments" / "f" / ".repo"
    (wt / "ops").mkdir(parents=True)
    (wt / "ops" / "k.py").write_text("open('../../../../ops/solution.py')\n")
    items = nopeek.parse(["ops/solution.py"], wt)
    assert nopeek.violations([wt / "ops" / "k.py"], wt, items, also=home)
    outside = nopeek.violations([tmp_path / "elsewhere.py"], wt, items, lambda p: None, resolve=False)
    assert outside == []  # a path outside the trees read is no crash


def test_the_stub_refuses_entries_that_name_nothing(repo):
    for typo in ("ops/solutoin.py", "solutions.nothing"):
        with pytest.raises(KgateError, match="protects nothing"):
            nopeek.parse([typo], repo, must_exist=True)


def test_honest_candidates_and_unlisted_modules_pass(repo):
    assert check(repo, "import jax\nimport jax.numpy as jnp\nimport helpers\nimport reference\n") == []
    assert check(repo, "x = 'a solution is coming'\n") == []  # a string that names no listed file
    assert check(repo, "import solution\n", listed=()) == []  # nothing listed: nothing forbidden


def test_a_module_entry_and_bad_entries(repo):
    found = check(repo, "import solutions.rmsnorm_fast\n", listed=("solutions.rmsnorm_fast",))
    assert found == ["ops/rmsnorm.py:1 imports solutions.rmsnorm_fast (no-peek: solutions.rmsnorm_fast)"]
    for bad, message in (("", "empty"), ("../elsewhere/x.py", "outside the home repo"), ("not a module!", "neither")):
        with pytest.raises(KgateError, match=message):
            nopeek.parse([bad], repo)
