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
