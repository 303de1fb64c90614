"""The package declares ranges a user's own jax can sit in; the project's .venv is pinned by
constraints.txt; the README states the range."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def _requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for reqs in project["optional-dependencies"].values() for r in reqs]
    return [Requirement(r) for r in project["dependencies"] + extras]


def test_jax_is_a_range_that_keeps_a_newer_patch_and_refuses_another_minor():
    jax = [r for r in _requirements() if r.name in ("jax", "jaxlib")]
    assert len(jax) >= 4  # jax, jaxlib and the tpu and cuda extras
    for req in jax:
        assert req.specifier.contains("0.10.2") and req.specifier.contains("0.10.7"), req
        assert not req.specifier.contains("0.11.0") and not req.specifier.contains("0.10.1"), req


def test_the_constraints_pin_exactly_what_the_tests_run_on_and_satisfy_the_ranges():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    for req in _requirements():
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name in pins:
            assert req.specifier.contains(pins[name]), (req, pins[name])
    for name in ("jax", "jaxlib", "numpy", "scipy", "tomli-w", "pytest"):
        assert importlib.metadata.version(name) == pins[name], f"{name}: the .venv is not the one constraints.txt pins"


def test_the_readme_states_the_supported_range():
    from packaging.specifiers import SpecifierSet

    (jax,) = [r for r in _requirements() if r.name == "jax" and not r.extras]
    stated = re.search(r"kgate supports `jax([^`]+)`", (ROOT / "README.md").read_text())
    assert stated and SpecifierSet(stated.group(1)) == jax.specifier
