"""The Model protocol (KernelBench's layout and its JAX translations), loaded unchanged:
shape globals as the op-point, the reference's weights given to the candidate, and the
candidates in examples/model_jax/ judged right."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

from conftest import EXAMPLES, failed, gate, kgate, parity
from kgate.errors import KgateError
from kgate.problem import config_set, load_pair, load_reference
from kgate.problem.model import (ShapeGlobals, dotted, named_arrays, parse_weights, randomize, seeded,
                                 shape_global_names, share_weights, weights_mismatch, weights_sha256)
from kgate.problem.snapshot import snapshot_module

M = "model_jax/"

NUMPY_REFERENCE = '''
import numpy as np

class Model:
    def __init__(self, dim, scale):
        self.weight = np.random.standard_normal((dim, dim)).astype(np.float32)
        self.scale = scale

    def forward(self, x):
        return (x @ self.weight) * self.scale

batch = 4
dim = 8
label = "numpy"
TINY = {"batch": 2}

def get_inputs():
    return [np.ones((batch, dim), np.float32)]

def get_init_inputs():
    return [dim, 2.0]
'''


# -- the pieces, on plain objects ------------------------------------------------------------


def _module(source: str, name: str = "shapes_demo") -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), vars(module))
    return module


def test_shape_globals_are_the_top_level_plain_values_and_setting_one_rebinds_the_module_global():
    source = ("import math\nfrom math import pi\nbatch = 4 * 2\nshape = (3, 5)\nmode = 'causal'\n_hidden = 1\n"
              "TINY = {'batch': 2}\nCONFIG_LIKE = [1, 2]\nlookup = {'a': 1}\nclass Model: pass\n")
    module = _module(source)
    names = shape_global_names(module, source)
    assert names == ["batch", "shape", "mode", "CONFIG_LIKE"]  # no import, no private, no TINY, no dict
    shapes = ShapeGlobals(module, names)
    shapes.update({"batch": 2})
    assert module.batch == 2 and dict(shapes)["batch"] == 2


def test_weights_are_found_by_their_place_nested_ones_included():
    class Layer:
        def __init__(self):
            self.w = np.ones((2, 2))

    class ShapeOnly:  # what a kernel may keep on self: a shape and a dtype, no values
        shape, dtype = (2, 2), np.float32

    class Net:
        def __init__(self):
            self.layers = [Layer(), {"gate": np.zeros(3)}]
            self.bias = np.zeros(2)
            self.n = 3
            self.out_shape = ShapeOnly()

    assert [dotted(p) for p in named_arrays(Net())] == ["layers.0.w", "layers.1.gate", "bias"]


def test_a_candidate_with_arrays_of_its_own_besides_the_reference_s_names_is_given_them():
    class Cand:
        def __init__(self):
            self.weight = np.zeros((2, 3), np.float32)
            self.bias = np.zeros(2, np.float32)
            self.table = np.ones(16, np.float32)  # a constant of its own

    cand = Cand()
    assert share_weights(_Ref(), cand) == "by name" and np.array_equal(cand.table, np.ones(16))


class _Ref:
    def __init__(self):
        self.weight = np.arange(6, dtype=np.float32).reshape(2, 3)
        self.bias = np.ones(2, np.float32)


def test_a_candidate_with_the_reference_s_names_gets_its_weights_by_name():
    class Cand:
        def __init__(self):
            self.weight = np.zeros((2, 3), np.float32)
            self.bias = np.zeros(2, np.float32)

    ref, cand = _Ref(), Cand()
    assert share_weights(ref, cand) == "by name"
    assert np.array_equal(cand.weight, ref.weight) and np.array_equal(cand.bias, ref.bias)


def test_names_that_do_not_line_up_are_refused_naming_both_sides():
    class Cand:
        def __init__(self):
            self.w = np.zeros((2, 3), np.float32)
            self.bias = np.zeros(3, np.float32)

    with pytest.raises(KgateError) as info:
        share_weights(_Ref(), Cand())
    assert "weight" in info.value.problem and "w" in info.value.problem and "bias (3,) vs (2,)" in info.value.problem
    assert "set_weights" in info.value.fix


def test_set_weights_that_keeps_its_own_weights_is_refused_and_one_that_relays_them_is_accepted():
    class Keeps:
        def __init__(self):
            self.weight = np.zeros((2, 3), np.float32)

        def set_weights(self, weights):
            pass

    with pytest.raises(KgateError, match="left its own weight in place"):
        share_weights(_Ref(), Keeps())

    class Transposes:  # the reference's name, its own layout: a new array, so its business
        def __init__(self):
            self.weight = np.zeros((3, 2), np.float32)

        def set_weights(self, weights):
            self.weight = weights["weight"].T.copy()

    assert share_weights(_Ref(), Transposes()) == "set_weights"

    class Relays:
        def set_weights(self, weights):
            self.weight_t = weights["weight"].T
            self.bias = weights["bias"]

    cand = Relays()
    assert share_weights(_Ref(), cand) == "set_weights"
    assert np.array_equal(cand.weight_t, _Ref().weight.T)

    class Raises:
        def set_weights(self, weights):
            raise KeyError("linear.weight")

    with pytest.raises(KgateError, match="refused the reference's weights"):
        share_weights(_Ref(), Raises())


def test_construction_is_seeded_and_puts_the_global_generators_back():
    np.random.seed(123)
    expected_next = np.random.random()
    np.random.seed(123)
    with seeded():
        a = np.random.standard_normal(4), np.random.default_rng().random(3), np.random.default_rng().random(3)
    with seeded():
        b = np.random.standard_normal(4), np.random.default_rng().random(3), np.random.default_rng().random(3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[1], a[2])  # two unseeded generators still differ from each other
    assert np.random.random() == expected_next
    assert np.random.default_rng is not None and np.random.default_rng(5).random() == np.random.default_rng(5).random()


def test_weights_built_differently_in_the_two_legs_are_named():
    built = {"model": {"weights": {"sha256": "a" * 64}}}
    assert weights_mismatch(built, {"model": {"weights": {"given_sha256": "a" * 64}}}) == []
    found = weights_mismatch(built, {"model": {"weights": {"given_sha256": "b" * 64}}})
    assert found and "unseeded" in found[0]
    assert weights_mismatch({"path": "x"}, {"path": "y"}) == []  # the CONFIG protocol: nothing to compare
    assert weights_sha256({("w",): np.zeros(2)}) != weights_sha256({("w",): np.ones(2)})


def test_a_patched_operator_of_a_library_class_and_code_swapped_inside_a_wrapper_are_seen():
    from kgate.problem.snapshot import snapshot_surface

    lib = _module("class Tracer:\n    def __matmul__(self, other):\n        return 1\n", "snap_lib_demo")
    sys.modules["snap_lib_demo"] = lib
    try:
        surface = snapshot_surface(["snap_lib_demo"])
        lib.Tracer.__matmul__ = lambda self, other: 2
        assert "snap_lib_demo.Tracer.__matmul__ was rebound" in surface.diff()
    finally:
        sys.modules.pop("snap_lib_demo")
    for wrapper in ("functools.wraps(lambda x: x)(lambda x: x)",  # a wrapper with code of its own
                    "types.SimpleNamespace(__wrapped__=lambda x: x)"):  # one without (as jax.jit's)
        module = _module(f"import functools, types\nhelper = {wrapper}\n", "wrap_demo")
        snapshot = snapshot_module(module)
        module.helper.__wrapped__.__code__ = (lambda x: x + 1).__code__
        assert any("helper had its code or defaults replaced" in c for c in snapshot.diff(module)), wrapper


def test_a_patched_method_of_a_class_the_reference_defines_is_a_change_to_the_reference():
    module = _module("class Model:\n    def forward(self, x):\n        return x\n", "snap_demo")
    snapshot = snapshot_module(module)
    assert snapshot.diff(module) == []
    module.Model.forward = lambda self, x: x + 1
    assert any("Model.forward was rebound" in c for c in snapshot.diff(module))
    module.Model.extra = lambda self: 0
    assert any("Model.extra was added" in c for c in snapshot.diff(module))


# -- loading, without a framework: numpy modules ---------------------------------------------


def test_the_loader_builds_the_reference_at_the_op_point_and_the_candidate_with_its_weights(write_module):
    ref = write_module("np_reference.py", NUMPY_REFERENCE)
    cand = write_module("np_candidate.py", "import numpy as np\n\nclass ModelNew:\n"
                        "    def __init__(self, dim, scale):\n        self.weight = np.zeros((dim, dim), np.float32)\n"
                        "        self.scale = scale\n\n    def forward(self, x):\n"
                        "        return np.matmul(x, self.weight) * self.scale\n")
    with load_pair(ref, cand, overrides={"dim": 4}, use_tiny=True) as pair:
        assert pair.op_point.values == {"batch": 2, "dim": 4, "label": "numpy"}
        assert pair.op_point.source == "TINY+--set"
        inputs = pair.reference.create_inputs()
        assert inputs[0].shape == (2, 4)
        assert np.array_equal(pair.candidate.entry(*inputs), pair.reference.entry(*inputs))
        weights = pair.candidate.to_json()["model"]["weights"]
        assert weights["shared_by"] == "by name" and weights["given_sha256"] == weights["sha256"]
        assert pair.reference.to_json()["model"]["weights"]["sha256"] == weights["sha256"]
        with config_set({"dim": 6}, pair.reference.config, pair.candidate.config):  # the odd-shape probe's way
            assert pair.reference.create_inputs()[0].shape == (2, 6)
            assert pair.candidate.entry(*pair.reference.create_inputs()).shape == (2, 6)
        assert pair.reference.model.instance().weight.shape == (4, 4)
    with load_reference(ref) as (again, op_point):  # another process builds the very same weights
        assert op_point.values["dim"] == 8
    with load_reference(ref, overrides={"dim": 4}, use_tiny=True) as (again, _):
        assert again.to_json()["model"]["weights"]["sha256"] == weights["sha256"]


def test_an_instance_swapped_shadowed_or_reclassed_after_it_was_built_is_named(write_module):
    ref = write_module("np_reference.py", NUMPY_REFERENCE)
    with load_reference(ref) as (reference, _):
        model = reference.model
        assert model.changes() == []
        instance = model.instance()
        x = reference.create_inputs()
        expected = reference.entry(*x)
        instance.forward = lambda x: x * 0  # shadows the method on the instance: the entry keeps the class's
        assert np.array_equal(reference.entry(*x), expected)
        instance.weight = instance.weight.copy()
        found = model.changes()
        assert any("forward was added" in c for c in found) and any("weight was rebound" in c for c in found)
        instance.__class__ = type("Other", (reference.module.Model,), {})
        assert any("class changed to Other" in c for c in model.changes())


def test_an_init_that_refuses_a_size_raises_with_the_op_point_put_back(write_module):
    ref = write_module("np_reference.py", NUMPY_REFERENCE.replace(
        "    def __init__(self, dim, scale):\n", "    def __init__(self, dim, scale):\n        assert dim % 2 == 0\n"))
    with load_reference(ref) as (reference, _):
        with pytest.raises(KgateError, match="at batch=4, dim=9, label=numpy raised AssertionError"):
            with config_set({"dim": 9}, reference.config):
                pass
        assert reference.config["dim"] == 8 and reference.module.dim == 8


def test_a_set_naming_no_shape_global_is_refused_with_the_ones_there_are(write_module):
    ref = write_module("np_reference.py", NUMPY_REFERENCE)
    with pytest.raises(KgateError) as info:
        with load_reference(ref, overrides={"hidden": 4}):
            pass
    assert "not a shape global" in info.value.problem and "batch, dim, label" in info.value.problem


def test_a_model_candidate_against_a_config_reference_is_refused(write_module):
    cand = write_module("np_candidate.py", "class ModelNew:\n    def forward(self, x):\n        return x\n")
    with pytest.raises(KgateError, match="follows the Model protocol, but the reference"):
        with load_pair(EXAMPLES / "rmsnorm" / "reference.py", cand):
            pass
    assert "np_candidate" not in sys.modules


# -- the examples, end to end -----------------------------------------------------------------


@pytest.mark.full
def test_a_pallas_candidate_in_the_model_protocol_passes_and_set_shrinks_the_op_point():
    report = gate(M + "reference.py", M + "pallas.py", overrides={"batch_size": 8})
    assert report.status == "PASS", failed(report)
    assert report.context["op_point"]["values"] == {"batch_size": 8, "in_features": 128, "out_features": 128}
    assert report.context["odd_op_point"]["batch_size"] == 11  # the odd shape moved the shape globals too
    model = report.context["candidate"]["model"]
    assert model["weights"]["shared_by"] == "set_weights"
    assert model["weights"]["given_sha256"] == report.context["reference"]["model"]["weights"]["sha256"]


@pytest.mark.full
def test_a_candidate_that_draws_its_own_weights_is_given_the_reference_s_by_name():
    report = gate(M + "reference.py", M + "own_init.py")
    assert report.status == "PASS", failed(report)
    assert report.context["candidate"]["model"]["weights"]["shared_by"] == "by name"


@pytest.mark.full
@pytest.mark.parametrize("candidate, says", [
    ("bad_renamed_weights.py", "the reference has weight, bias and the candidate does not; the candidate has w, b"),
    ("bad_ignores_weights.py", "left its own weight, bias in place"),
])
def test_weights_that_cannot_be_given_are_refused_with_exit_2(candidate, says, tmp_path):
    done = kgate(tmp_path, "gate", "-r", EXAMPLES / M / "reference.py", "-c", EXAMPLES / M / candidate, "--json")
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)
    assert error["status"] == "ERROR" and says in error["error"]["problem"]


@pytest.mark.full
@pytest.mark.parametrize("candidate, reason", [
    ("bad_patches_reference_class.py", "reference.Model.forward was rebound"),
    ("bad_zeroes_reference_weights.py", "are not those the reference's own process built"),
])
def test_a_candidate_that_changes_the_reference_in_its_own_process_fails_integrity(candidate, reason):
    report = gate(M + "reference.py", M + candidate)
    assert report.status == "ANOMALY"
    assert "integrity.reference_untouched" in failed(report) and "parity.error" in failed(report)
    check = next(c for name, c in report.failed_checks if c.name == "reference_untouched")
    assert reason in check.detail


@pytest.mark.full
def test_a_kernel_that_only_re_lays_the_weights_fails_firing():
    report = gate(M + "reference.py", M + "bad_kernel_on_weights_only.py", overrides={"batch_size": 8})
    assert report.status == "FAIL" and failed(report) == {"firing.kernel_reads_inputs", "firing.kernel_does_the_arithmetic",
                                                          "firing.kernel_carries_the_answer"}  # its results: one for every input


@pytest.mark.full
def test_a_candidate_whose_shape_globals_disagree_with_the_reference_s_fails_integrity():
    report = parity(M + "reference.py", M + "bad_own_batch_size.py",
                    overrides={"in_features": 128, "out_features": 128})
    assert report.status == "ANOMALY"
    check = next(c for name, c in report.failed_checks if c.name == "config_consistent")
    assert "the shape global batch_size: reference 256, candidate 8" in check.detail


@pytest.mark.timing
@pytest.mark.parametrize("reference, candidate, check_name, says", [
    ("reference.py", "bad_slows_reference_on_first_call.py", "process_untouched", "reference.Model.forward was rebound"),
    ("reference.py", "bad_shadows_reference_forward.py", "process_untouched",
     "the reference's Model instance.forward was added"),
    ("reference.py", "bad_patches_tracer_matmul.py", "reference_program_unchanged", "not the one lowered before"),
    ("reference.py", "bad_patches_tracer_matmul.py", "process_untouched", "Tracer.__matmul__ was rebound"),
    ("reference.py", "bad_reregisters_tanh_lowering.py", "reference_program_unchanged", "not the one lowered before"),
    ("helper_reference.py", "bad_patches_jitted_helper.py", "reference_untouched",
     "_linear_gelu had its code or defaults replaced"),
])
def test_measure_sees_what_a_candidate_did_to_the_reference_it_times_against(reference, candidate, check_name, says,
                                                                           tmp_path):
    done = kgate(tmp_path, "measure", "-r", EXAMPLES / M / reference, "-c", EXAMPLES / M / candidate,
                 "--set", "batch_size=16", "--budget", "1", "--json")
    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "ANOMALY"
    check = next(c for c in report["gates"]["integrity"]["checks"] if c["name"] == check_name)
    assert check["status"] == "FAIL" and says in check["detail"]


@pytest.mark.timing
def test_an_honest_candidate_s_reference_program_is_the_one_lowered_before_it(tmp_path):
    done = kgate(tmp_path, "measure", "-r", EXAMPLES / M / "reference.py", "-c", EXAMPLES / M / "xla_rewrite.py",
                 "--set", "batch_size=16", "--budget", "1", "--json")
    report = json.loads(done.stdout)
    check = next(c for c in report["gates"]["integrity"]["checks"] if c["name"] == "reference_program_unchanged")
    assert check["status"] == "PASS" and report["status"] == "PASS", done.stdout[-2000:]


# -- --weights random: a problem whose shipped weights make it vacuous -------------------------


def test_weights_policy_parses_and_refuses_what_it_is_not():
    assert parse_weights("shared") == "shared"
    assert parse_weights("random") == "random:0" and parse_weights("random:7") == "random:7"
    for bad in ("zeros", "random:x", "shared:1", ""):
        with pytest.raises(KgateError, match="--weights"):
            parse_weights(bad)


def test_random_weights_replace_every_floating_weight_seeded_and_keep_integer_ones():
    class Net:
        def __init__(self):
            self.weight = np.zeros((4, 64), np.float32)
            self.table = [np.zeros(8, np.float16)]
            self.index = np.arange(5)

    a, b, c = Net(), Net(), Net()
    for net in (a, b, c):
        net.eps = np.float32(1e-6)  # a 0-d float: a constant, not a weight
    assert randomize(a, 0) == ["table.0", "weight"] and a.eps == np.float32(1e-6)
    randomize(b, 0)
    randomize(c, 1)
    assert np.array_equal(a.weight, b.weight) and not np.array_equal(a.weight, c.weight)
    assert a.weight.dtype == np.float32 and a.table[0].dtype == np.float16
    assert np.abs(a.weight).max() <= 1 / np.sqrt(64) and np.abs(a.weight).max() > 0  # fan: 256 / 4
    assert np.array_equal(a.index, np.arange(5))


def test_random_weights_on_a_config_module_are_refused_with_the_fix(write_module):
    with pytest.raises(KgateError) as info:
        with load_reference(EXAMPLES / "rmsnorm" / "reference.py", weights="random:0"):
            pass
    assert "applies to a Model module" in info.value.problem and "create_inputs" in info.value.fix


@pytest.mark.full
def test_a_zero_weight_reference_is_vacuous_as_shipped_and_checkable_with_random_weights():
    shipped = gate(M + "zero_init_reference.py", M + "pallas.py")
    assert shipped.status == "FAIL" and "parity.vacuous" in failed(shipped)
    vacuous = next(c for name, c in shipped.failed_checks if c.name.endswith(".vacuous"))
    assert "--weights random" in vacuous.fix
    report = gate(M + "zero_init_reference.py", M + "pallas.py", weights="random:0")
    assert report.status == "PASS", failed(report)
    weights = report.context["reference"]["model"]["weights"]
    assert weights["policy"] == "random:0" and weights["randomized"] == ["bias", "weight"]
    assert report.context["candidate"]["model"]["weights"]["given_sha256"] == weights["sha256"]
    zeros = gate(M + "zero_init_reference.py", M + "bad_writes_zeros.py", weights="random:0")
    assert zeros.status == "FAIL" and "parity.error" in failed(zeros) and "parity.vacuous" not in failed(zeros)


@pytest.mark.full
def test_verify_keeps_the_weights_in_the_receipt_and_the_receipt_verifies(tmp_path):
    receipt = tmp_path / "receipt.json"
    done = kgate(tmp_path, "verify", "-r", EXAMPLES / M / "zero_init_reference.py", "-c", EXAMPLES / M / "pallas.py",
                 "--weights", "random:3", "--set", "batch_size=8", "-o", receipt, "--json")
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    modules = json.loads(receipt.read_text())["modules"]
    assert modules["reference"]["model"]["weights"]["policy"] == "random:3"
    assert modules["candidate"]["model"]["weights"]["shared_by"] == "set_weights"
    checked = kgate(tmp_path, "verify-receipt", receipt)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# -- the weights policy is a registered term of a family -------------------------------------


def test_a_family_registers_its_weights_and_refuses_a_run_that_contradicts_them(tmp_path):
    import shutil
    import tomllib

    from conftest import sh

    root = tmp_path / "code"
    (root / "ops").mkdir(parents=True)
    shutil.copy(EXAMPLES / M / "zero_init_reference.py", root / "ops" / "reference.py")
    sh(root, "git", "init", "-q", "-b", "main")
    sh(root, "git", "config", "user.email", "t@example.invalid")
    sh(root, "git", "config", "user.name", "t")
    sh(root, "git", "add", "-A")
    sh(root, "git", "commit", "-qm", "reference")
    assert kgate(root, "init").returncode == 0
    made = kgate(root, "family", "new", "linear", "--reference", "ops/reference.py", "--target", "ops/linear.py",
                 "--weights", "random")
    assert made.returncode == 0, made.stderr
    binding = tomllib.loads((root / "kernel_experiments" / "linear" / "family.toml").read_text())["family"]
    assert binding["weights"] == "random:0"
    refused = kgate(root, "gate", "--family", "linear", "-c", EXAMPLES / M / "pallas.py", "--weights", "shared", "--json")
    assert refused.returncode == 2
    error = json.loads(refused.stdout)["error"]
    assert "--weights shared contradicts the family linear registered --weights random:0" in error["problem"]
