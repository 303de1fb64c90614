"""The problem-module protocol: loading, seeds, op-point overrides, entries, tampering."""

import textwrap

import pytest

from conftest import failed, gate, parity
from kgate.errors import KgateError

JAXBENCH_BASELINE = textwrap.dedent(
    '''
    import jax
    import jax.numpy as jnp

    CONFIG = {"name": "scale_shift", "batch": 2, "seq_len": 64, "emb_dim": 128}

    def create_inputs(dtype=jnp.bfloat16):
        key = jax.random.PRNGKey(42)
        k1, k2 = jax.random.split(key)
        x = jax.random.normal(k1, (CONFIG["batch"], CONFIG["seq_len"], CONFIG["emb_dim"]), dtype=dtype)
        w = jax.random.normal(k2, (CONFIG["emb_dim"],), dtype=dtype)
        return x, w

    def workload(x, w):
        return jnp.tanh(x * w)

    def benchmark(num_warmup=5, num_iters=100):
        raise RuntimeError("kgate must never call the suite's own benchmark()")
    '''
)

PALLAS_TANH = textwrap.dedent(
    '''
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def kernel(x_ref, w_ref, o_ref):
        o_ref[...] = jnp.tanh(x_ref[...].astype(jnp.float32) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)

    def workload(x, w):
        b, s, d = x.shape
        x2 = x.reshape(b * s, d)
        out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype))(x2, w.reshape(1, d))
        return out.reshape(x.shape)
    '''
)


EXP_REFERENCE = (
    "import jax, jax.numpy as jnp\ndef create_inputs(seed=0):\n"
    "    return (jax.random.normal(jax.random.key(seed), (4, 32)),)\ndef workload(x):\n    return jnp.exp(x)\n"
)


@pytest.mark.full
def test_jaxbench_baseline_loads_unchanged_and_gets_injected_seeds(write_module):
    ref = write_module("baseline.py", JAXBENCH_BASELINE)
    cand = write_module("kernel.py", PALLAS_TANH)
    report = gate(str(ref), str(cand))
    assert report.status == "PASS", report.to_json()
    assert set(report.context["seeding"].values()) == {"injected"} and len(report.context["seeding"]) == 3
    # Different seeds really produced different inputs.
    hashes = report.gates["integrity"].details["input_hashes"]
    assert hashes[0]["created"] != hashes[1]["created"]
    assert report.context["op_point"]["source"] == "CONFIG"
    assert any("no TINY" in a for a in report.advisories)
    assert report.exit_code == 1  # PASS with an advisory


@pytest.mark.full
def test_from_imported_prngkey_is_injected_too(write_module):
    ref = write_module(
        "baseline.py", JAXBENCH_BASELINE.replace("import jax.numpy as jnp", "import jax.numpy as jnp\nfrom jax.random import PRNGKey").replace("jax.random.PRNGKey(42)", "PRNGKey(42)")
    )
    cand = write_module("kernel.py", PALLAS_TANH)
    report = parity(str(ref), str(cand))
    assert report.context["seeding"]["43"] == "injected"
    assert "parity.seeds_differ" not in failed(report)


def test_numpy_default_rng_is_injected(write_module):
    ref = write_module(
        "ref.py",
        textwrap.dedent(
            '''
            import numpy as np
            import jax.numpy as jnp
            CONFIG = {"n": 64}
            def create_inputs():
                rng = np.random.default_rng(0)
                return (rng.standard_normal((8, CONFIG["n"])).astype(np.float32),)
            def workload(x):
                return jnp.sin(x)
            '''
        ),
    )
    cand = write_module("cand.py", "import jax.numpy as jnp\ndef workload(x):\n    return jnp.sin(x)\n")
    report = parity(str(ref), str(cand))
    assert report.context["seeding"]["42"] == "injected"
    assert report.status == "PASS", report.to_json()


def test_inputs_that_ignore_the_seed_fail_multi_seed_parity(write_module):
    ref = write_module(
        "ref.py",
        "import jax.numpy as jnp\nCONFIG={'n': 32}\ndef create_inputs():\n"
        "    return (jnp.linspace(-3.0, 3.0, CONFIG['n'] * 4).reshape(4, CONFIG['n']),)\n"
        "def workload(x):\n    return jnp.sin(x)\n",
    )
    cand = write_module("cand.py", "import jax.numpy as jnp\ndef workload(x):\n    return jnp.sin(x)\n")
    report = parity(str(ref), str(cand))
    assert "parity.seeds_differ" in failed(report)
    assert any("every seed sees the same inputs" in a for a in report.advisories)


def test_set_override_mutates_the_shared_config_before_inputs(write_module):
    ref = write_module(
        "reference.py",
        "import jax, jax.numpy as jnp\nCONFIG={'n': 1024, 'scale': 2.0}\n"
        "def create_inputs(seed=0):\n    return (jax.random.normal(jax.random.key(seed), (8, CONFIG['n'])),)\n"
        "def workload(x):\n    return x * CONFIG['scale']\n",
    )
    # The candidate reads the op-point through the reference module: the same CONFIG object.
    cand = write_module(
        "cand.py",
        "import reference\ndef workload(x):\n"
        "    assert x.shape[1] == reference.CONFIG['n'] == 16, x.shape\n    return x * reference.CONFIG['scale']\n",
    )
    report = parity(str(ref), str(cand), overrides={"n": 16})
    assert report.status == "PASS", report.to_json()
    assert report.context["op_point"] == {"source": "--set", "values": {"n": 16, "scale": 2.0}, "overrides": {"n": 16}}


@pytest.mark.full
def test_candidate_with_its_own_config_copy_shrinks_too(write_module):
    ref = write_module(
        "reference.py",
        "import jax\nCONFIG={'n': 512}\ndef create_inputs(seed=0):\n"
        "    return (jax.random.normal(jax.random.key(seed), (4, CONFIG['n'])),)\ndef workload(x):\n    return x * 3\n",
    )
    cand = write_module(
        "cand.py",
        "CONFIG={'n': 512}\ndef workload(x):\n    assert x.shape[1] == CONFIG['n'], (x.shape, CONFIG)\n    return x * 3\n",
    )
    assert parity(str(ref), str(cand), overrides={"n": 8}).status == "PASS"


def test_candidate_config_that_disagrees_is_an_integrity_failure(write_module):
    ref = write_module(
        "reference.py",
        "import jax\nCONFIG={'n': 64, 'causal': True}\ndef create_inputs(seed=0):\n"
        "    return (jax.random.normal(jax.random.key(seed), (4, CONFIG['n'])),)\ndef workload(x):\n    return x * 3\n",
    )
    cand = write_module("cand.py", "CONFIG={'n': 64, 'causal': False}\ndef workload(x):\n    return x * 3\n")
    report = parity(str(ref), str(cand))
    assert report.status == "ANOMALY"
    assert "integrity.config_consistent" in failed(report)


@pytest.mark.full
def test_candidate_that_monkeypatches_a_library_the_reference_uses(write_module):
    ref = write_module(
        "reference.py",
        "import jax, jax.numpy as jnp\ndef create_inputs(seed=0):\n"
        "    return (jax.random.normal(jax.random.key(seed), (4, 32)),)\ndef workload(x):\n    return jnp.tanh(x)\n",
    )
    cand = write_module(
        "cand.py", "import jax.numpy as jnp\n_real = jnp.tanh\njnp.tanh = lambda x: _real(x)\ndef workload(x):\n    return _real(x)\n"
    )
    import jax.numpy as jnp

    real_tanh = jnp.tanh
    try:
        report = parity(str(ref), str(cand))
    finally:
        jnp.tanh = real_tanh
    assert report.status == "ANOMALY"
    details = " ".join(c.detail for c in report.gates["integrity"].failures)
    assert "jax.numpy.tanh (reached from reference) was monkeypatched" in details
    assert "jax.numpy.tanh was rebound (at import)" in details


@pytest.mark.full
def test_entry_selects_a_named_candidate_function(write_module):
    ref = write_module("reference.py", EXP_REFERENCE)
    cand = write_module("cand.py", "import jax.numpy as jnp\ndef fast_exp(x):\n    return jnp.exp(x)\n")
    with pytest.raises(KgateError, match="no callable 'workload' .*fast_exp"):
        parity(str(ref), str(cand))
    assert parity(str(ref), str(cand), entry="fast_exp").status == "PASS"


def test_candidate_that_raises_fails_parity_and_firing(write_module):
    ref = write_module("reference.py", EXP_REFERENCE)
    cand = write_module("cand.py", "def workload(x):\n    raise ValueError('block shape does not divide 32')\n")
    report = gate(str(ref), str(cand))
    assert {"parity.candidate_ran", "firing.traced"} <= failed(report)
    assert "block shape does not divide 32" in report.gates["parity"].failures[0].detail


def test_wrong_output_dtype_fails_structure(write_module):
    ref = write_module("reference.py", EXP_REFERENCE)
    cand = write_module("cand.py", "import jax.numpy as jnp\ndef workload(x):\n    return jnp.exp(x).astype(jnp.bfloat16)\n")
    report = parity(str(ref), str(cand))
    assert "parity.structure" in failed(report)
    assert "dtype bfloat16, reference float32" in report.gates["parity"].failures[0].detail


@pytest.mark.parametrize(
    "overrides,message",
    [({"nope": 1}, "not a CONFIG key"), ({"n": "big"}, "give n an int value")],
)
def test_bad_overrides_are_rejected_with_the_fix(write_module, overrides, message):
    ref = write_module(
        "reference.py",
        "import jax\nCONFIG={'n': 8}\ndef create_inputs(seed=0):\n"
        "    return (jax.random.normal(jax.random.key(seed), (4, CONFIG['n'])),)\ndef workload(x):\n    return x\n",
    )
    cand = write_module("cand.py", "def workload(x):\n    return x\n")
    with pytest.raises(KgateError, match=message):
        parity(str(ref), str(cand), overrides=overrides)


def test_reference_that_fails_to_import_names_the_line(write_module):
    ref = write_module("reference.py", "import jax\nCONFIG = {}\nraise ImportError('needs libfoo')\n")
    cand = write_module("cand.py", "def workload(x):\n    return x\n")
    with pytest.raises(KgateError, match=r"reference module .* raised ImportError: needs libfoo \(at reference.py:3\)"):
        parity(str(ref), str(cand))


NO_TINY = (
    "import jax, jax.numpy as jnp\nCONFIG = {'n': 32}\ndef create_inputs(seed=0):\n"
    "    return (jax.random.normal(jax.random.key(seed), (4, CONFIG['n'])),)\ndef workload(x):\n    return jnp.tanh(x)\n"
)


@pytest.mark.full
def test_the_no_tiny_advice_fits_how_the_gate_was_run(write_module):
    """Without --family, a --set makes the gate small; under it the op-point is registered and
    a --set must agree with it, so the advice says what can be done there instead."""
    ref = write_module("reference.py", NO_TINY)
    cand = write_module("cand.py", "import jax.numpy as jnp\ndef workload(x):\n    return jnp.tanh(x)\n")
    plain = next(a for a in gate(str(ref), str(cand)).advisories if "no TINY" in a)
    assert "give a small one with --set n=..." in plain
    family = next(a for a in gate(str(ref), str(cand), registered={"n": 16}).advisories if "no TINY" in a)
    assert "the family's registered op-point" in family and "outside the family's terms" in family
    assert "give a small one with --set" not in family


@pytest.mark.full
def test_the_readme_protocol_block_is_a_reference_a_rewrite_passes_against(write_module):
    from conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## The problem-module protocol", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    ref = write_module("reference.py", block)
    report = gate(str(ref), str(ROOT / "examples" / "softmax" / "xla_rewrite.py"), klass="xla-rewrite")
    assert report.status == "PASS", [(c.name, c.detail) for _, c in report.failed_checks]
    assert report.context["op_point"]["values"] == {"rows": 16, "cols": 256}  # its TINY
    assert set(report.context["seeding"].values()) == {"argument"}
