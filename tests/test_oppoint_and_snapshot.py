"""Op-point parsing and module snapshots (pure Python)."""

import types

import pytest

from kgate.errors import KgateError
from kgate.problem import parse_overrides, snapshot_module
from kgate.problem.oppoint import OpPoint, resolve_op_point


def test_overrides_parse_python_literals():
    assert parse_overrides(["n=128", "scale=0.5", "causal=True", "mode=causal", "name='x y'"]) == {
        "n": 128,
        "scale": 0.5,
        "causal": True,
        "mode": "causal",
        "name": "x y",
    }


@pytest.mark.parametrize("item", ["n", "=3", "n 3", "1n=3"])
def test_malformed_override_is_rejected(item):
    with pytest.raises(KgateError, match="key=value"):
        parse_overrides([item])


def test_tiny_then_set_with_source_label():
    updates, source = resolve_op_point({"n": 4096, "d": 512}, {"n": 16}, {"d": 128}, use_tiny=True)
    assert updates == {"n": 16, "d": 128} and source == "TINY+--set"
    assert resolve_op_point({"n": 1}, None, {}, use_tiny=True) == ({}, "CONFIG")


def test_a_familys_registered_op_point_lies_under_tiny_and_comes_back_without_it():
    """`gate --family` runs at TINY over the registered op-point, and lowers at that op-point."""
    config = {"n": 4096, "d": 512, "eps": 1e-6}
    updates, source = resolve_op_point(config, {"n": 16, "d": 8}, {"d": 4}, use_tiny=True, registered={"n": 2048, "eps": 1e-5})
    assert updates == {"n": 16, "d": 4, "eps": 1e-5} and source == "registered+TINY+--set"
    op_point = OpPoint({**config, **updates}, source, updates, {k: config[k] for k in updates})
    assert op_point.without_tiny({"d": 4}, {"n": 2048, "eps": 1e-5}) == {"n": 2048, "eps": 1e-5}  # --set kept
    assert op_point.without_tiny({}, None) == {"n": 4096, "d": 512, "eps": 1e-6}  # no family: CONFIG's
    with pytest.raises(KgateError, match="registered op-point sets 'm'"):
        resolve_op_point(config, None, {}, use_tiny=True, registered={"m": 1})


def test_float_key_accepts_int_but_int_key_rejects_float():
    resolve_op_point({"eps": 1e-6}, None, {"eps": 0}, use_tiny=False)
    with pytest.raises(KgateError, match="give n an int value"):
        resolve_op_point({"n": 1}, None, {"n": 1.5}, use_tiny=False)


def test_overrides_without_config_are_rejected():
    with pytest.raises(KgateError, match="no CONFIG"):
        resolve_op_point(None, None, {"n": 1}, use_tiny=False)


def _module():
    lib = types.ModuleType("fakelib")
    lib.exp = lambda x: x
    mod = types.ModuleType("reference")
    mod.fakelib = lib
    mod.CONFIG = {"n": 8}

    def workload(x):
        return x

    mod.workload = workload
    return mod, lib


def test_snapshot_names_each_kind_of_change(monkeypatch):
    mod, lib = _module()
    monkeypatch.setitem(__import__("sys").modules, "fakelib", lib)
    snap = snapshot_module(mod)
    assert snap.diff(mod) == []
    mod.CONFIG["n"] = 9
    mod.workload.__code__ = (lambda x: x * 2).__code__
    lib.exp = lambda x: x * 0
    mod.helper = 1
    changes = snap.diff(mod)
    assert any("reference.CONFIG was mutated" in c for c in changes)
    assert any("reference.workload had its code or defaults replaced" in c for c in changes)
    assert any("fakelib.exp (reached from reference) was monkeypatched" in c for c in changes)
    assert any("reference.helper was added" in c for c in changes)


def test_the_surface_watch_sees_every_code_swap_and_puts_each_back():
    import gc
    import sys

    from kgate.problem.snapshot import snapshot_surface

    mod = types.ModuleType("kgate_watched_probe")
    exec("def f(x=1, *, y=[2]):\n    return x + 40\nclass C:\n    def m(self):\n        return 1\nbound = C().m\n", vars(mod))
    sys.modules[mod.__name__] = mod
    try:
        snap = snapshot_surface([mod.__name__], owned_prefix=mod.__name__)
        original = mod.f.__code__
        mod.f.__code__ = original.replace()  # the same content in a new code object
        assert snap.diff() == ["kgate_watched_probe.f had its code or defaults replaced"]
        snap.restore()
        assert snap.diff() == [] and mod.f.__code__ is original
        mod.f.__kwdefaults__["y"].append(3)  # a mutable default changed in place
        assert snap.diff() == ["kgate_watched_probe.f had its code or defaults replaced"]
        mod.f.__kwdefaults__["y"].pop()
        # a bound method's function: its code swapped out, dropped, and new ones made where the old one was
        fn = mod.bound.__func__
        fn.__code__ = (lambda self: 2).__code__
        gc.collect()
        for _ in range(200):
            fn.__code__ = compile("def m(self):\n    return 1\n", "probe", "exec").co_consts[0]
        assert "kgate_watched_probe.bound had its code or defaults replaced" in snap.diff()
        assert "kgate_watched_probe.C.m had its code or defaults replaced" in snap.diff()
        snap.restore()
        assert snap.diff(content=True) == []
        # a constant of a kept code object overwritten in place (ctypes): same identity, other content
        import ctypes

        consts = mod.f.__code__.co_consts
        slot = consts.index(40)
        cell = ctypes.c_void_p.from_address(id(consts) + tuple.__basicsize__ + slot * tuple.__itemsize__)
        replacement = 41
        cell.value = id(replacement)
        try:
            assert mod.f(1) == 42
            assert snap.diff() == []  # identity alone does not see it ...
            assert snap.diff(content=True) == ["kgate_watched_probe.f had its code changed in place"]  # ... the end does
        finally:
            cell.value = id(40)
        assert snap.diff(content=True) == []
    finally:
        sys.modules.pop(mod.__name__, None)


def test_a_method_set_on_a_library_class_over_an_inherited_one_is_a_patch(monkeypatch):
    """A library adds names lazily, so additions to its classes are not changes in general; but
    a method set on a class over one it inherits (`torch.Tensor.softmax = ...`) is."""
    import sys

    from kgate.problem.snapshot import snapshot_surface

    lib = types.ModuleType("fake_array_lib")

    class Base:
        def softmax(self):
            return "library"

        cache = ["filled lazily"]

    class Tensor(Base):
        pass

    Base.__module__ = Tensor.__module__ = "fake_array_lib"
    lib.Base, lib.Tensor = Base, Tensor
    monkeypatch.setitem(sys.modules, "fake_array_lib", lib)
    snap = snapshot_surface(["fake_array_lib"], owned_prefix="kgate")
    Tensor.__slotnames__ = []  # copyreg's cache: not a method
    Tensor.cache = ["refilled"]  # a data attribute shadowing an inherited one: a library cache
    Tensor.brand_new = lambda self: 1  # nothing inherited to override
    assert snap.diff() == []
    Tensor.softmax = lambda self: "patched"
    assert snap.diff() == ["fake_array_lib.Tensor.softmax was added, overriding the method its class inherits"]
    snap.restore()
    assert Tensor().softmax() == "library" and snap.diff() == []


def test_a_library_class_s_own_state_may_change_as_it_runs_its_methods_may_not(monkeypatch):
    """A library class's data (torch's compiler resets its RNG tracker's states on every compile)
    is its state, as a library module's is; its methods and descriptors are its behaviour."""
    import sys

    from kgate.problem.snapshot import snapshot_surface

    lib = types.ModuleType("fake_compiler_lib")

    class Tracker:
        running_state = object()
        hook = None

        def reset(self):
            return None

        @property
        def seed(self):
            return 0

    Tracker.__module__ = "fake_compiler_lib"
    lib.Tracker = Tracker
    monkeypatch.setitem(sys.modules, "fake_compiler_lib", lib)
    snap = snapshot_surface(["fake_compiler_lib"], owned_prefix="kgate")
    Tracker.running_state = object()
    assert snap.diff() == [] and snap._walked_diff(content=False) == []
    Tracker.reset = lambda self: "patched"
    Tracker.seed = property(lambda self: 1)
    Tracker.hook = lambda self: "called"  # a hook that was None (torch's Module._compiled_call_impl) now code
    assert snap.diff() == ["fake_compiler_lib.Tracker.hook was rebound", "fake_compiler_lib.Tracker.reset was rebound",
                           "fake_compiler_lib.Tracker.seed was rebound"]
    assert snap._walked_diff(content=False) == snap.diff()
    snap.restore()
    assert Tracker().reset() is None and Tracker().seed == 0 and Tracker.hook is None


def test_the_framework_names_a_module_reaches_are_read_from_its_source_and_its_neighbours(tmp_path):
    """What `import_frameworks` hands the backend (`late_state`): every module an import names in
    full, each name a `from` import takes, attribute chains on imported names under full names,
    from the module and from the modules beside it that it imports, never running any of them."""
    from kgate.backends import source_names

    (tmp_path / "helper.py").write_text("import torch._dynamo\nfrom torch.library import custom_op as op\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import jax.experimental.pallas as pl\nraise SystemExit\n")
    candidate = tmp_path / "candidate.py"
    candidate.write_text("import torch\nimport torch.nn as nn\nfrom . import pkg\nimport helper\n"
                         "f = torch.compile(lambda x: x)\nclass M(nn.Module):\n    pass\n"
                         f"if False:\n    import {'a' * 300}\n    import __main__\n")
    names = source_names(candidate)
    assert {"torch", "torch.nn", "torch._dynamo", "torch.library", "torch.library.custom_op",
            "jax.experimental.pallas", "torch.compile", "torch.nn.Module"} <= names
    (tmp_path / "helper.py").write_text("import candidate\n")  # a cycle is read once
    assert "torch.compile" in source_names(candidate)
    assert source_names(tmp_path / "missing.py") == set()


def test_only_the_frameworks_and_their_compiler_are_loaded_before_the_snapshot(tmp_path):
    """A module a candidate names (even in code that never runs) is not imported for it ahead of
    the snapshot: only the frameworks themselves, and torch's compiler where it is named."""
    import subprocess
    import sys

    candidate = tmp_path / "candidate.py"
    candidate.write_text("import torch\nif False:\n    import torch.utils.model_dump.__main__\n"
                         "    import torch.testing._internal.common_utils\n")
    code = ("import sys; from kgate.backends import import_frameworks; import_frameworks(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m.startswith(('torch.utils.model_dump', "
            "'torch.testing._internal.common_utils', 'torch._dynamo'))))")
    done = subprocess.run([sys.executable, "-c", code, str(candidate)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


# -- the gate's shapes beyond TINY: a fixed odd one, and two drawn per run ------------------


def test_the_fixed_odd_size_leaves_the_largest_remainder_against_every_smaller_tile():
    from kgate.verify.probes import tile_unfriendly

    assert [tile_unfriendly(n) for n in (1, 2, 16, 256, 383)] == [2, 5, 23, 383, 767]
    assert all(383 % tile == tile - 1 for tile in (2, 4, 8, 16, 32, 64, 128))


def test_the_drawn_shapes_move_every_size_in_one_of_them_and_keep_the_others():
    from kgate.verify.probes import shape_draws

    values = {"batch": 1, "seq_len": 16, "emb_dim": 256, "eps": 1e-6}
    sizes = ("batch", "seq_len", "emb_dim")
    seen: set[tuple[str, ...]] = set()
    remainders: set[int] = set()
    for seed in range(200):
        first, second = (tries[0] for tries in shape_draws(values, seed))
        assert shape_draws(values, seed) == shape_draws(values, seed)  # the seed alone decides (recorded, re-drawn)
        assert set(first).isdisjoint(second) and set(first) | set(second) == set(sizes)  # each size moved once
        for moved in (first, second):
            seen.add(tuple(sorted(moved)))
            assert all(values[k] < v <= 2 * values[k] for k, v in moved.items())
        remainders.update(v % 128 for d in (first, second) for k, v in d.items() if k == "emb_dim")
    assert len(seen) == 6  # every proper part of the sizes is moved alone in some run
    assert {1, 2} <= remainders and max(remainders) >= 64 and 0 in remainders  # short, long, whole tiles
    assert shape_draws(values, 1) != shape_draws(values, 2)


def test_at_a_verified_op_point_the_drawn_sizes_reach_its_scale_with_a_remainder():
    from kgate.verify.probes import shape_draws

    tiny, op_point = {"rows": 16, "cols": 96, "eps": 1e-6}, {"rows": 32, "cols": 1024, "eps": 1e-6}
    widths: set[int] = set()
    for seed in range(200):
        draws = shape_draws(tiny, seed, op_point)
        assert draws == shape_draws(tiny, seed, op_point)  # the seed alone decides
        for moved in (tries[0] for tries in draws):
            if "cols" in moved:  # past twice TINY's: in the op-point's top octave
                assert 512 < moved["cols"] <= 1024
                widths.add(moved["cols"])
            if "rows" in moved:  # the op-point's 32 is twice TINY's: moved as without a ceiling
                assert 16 < moved["rows"] <= 32
    assert len(widths) > 20
    share = sum(1 for w in widths if w % 256) / len(widths)
    assert share > 0.75  # a partial last tile of 256 columns, several tiles wide, in most runs
    assert shape_draws(tiny, 3) == shape_draws(tiny, 3, None) != shape_draws(tiny, 3, op_point)


def test_a_single_size_is_drawn_twice_and_a_problem_without_sizes_draws_nothing():
    from kgate.verify.probes import shape_draws

    first, second = (tries[0] for tries in shape_draws({"n": 256, "scale": 0.5}, 3))
    assert set(first) == set(second) == {"n"}
    assert shape_draws({"scale": 0.5, "causal": True}, 3) == []


def test_an_override_that_changed_nothing_is_named_where_it_came_from():
    """--set, the family's registered op-point and TINY are three places to fix: the refusal
    names each key's own."""
    from kgate.errors import KgateError
    from kgate.problem.oppoint import OpPoint, refuse_ineffective

    point = OpPoint({"batch": 2, "seq_len": 16, "dim": 8}, "registered+TINY+--set")
    with pytest.raises(KgateError) as info:
        refuse_ineffective(["batch", "dim", "seq_len"], point, {"dim": 8}, "reference.py", registered={"batch": 2})
    assert "--set dim=8 and the family's op-point batch=2 and TINY's seq_len=16 changed nothing" in info.value.problem
    assert info.value.fix.endswith("drop these keys from --set and the family's op-point (family.toml) and TINY.")
    with pytest.raises(KgateError) as info:
        refuse_ineffective(["seq_len"], point, {}, "reference.py")
    assert info.value.problem.startswith("TINY's seq_len=16 changed nothing") and "family" not in info.value.fix
    assert info.value.fix.endswith("drop these keys from TINY.")  # no --set was given: none to drop


@pytest.mark.parametrize("source, takes, model", [
    ("CONFIG = {'n': 8}\ndef create_inputs(seed=0, dtype=None): ...\ndef workload(x): ...", True, False),
    ("CONFIG = {'n': 8}\ndef create_inputs(seed=0): ...\ndef workload(x): ...", False, False),
    ("def create_inputs(**kw): ...\ndef workload(x): ...", True, False),
    ("async def create_inputs(*, dtype): ...", True, False),
    # Python keeps the last definition
    ("def create_inputs(dtype): ...\ndef create_inputs(seed): ...\ndef workload(x): ...", False, False),
    # the Model protocol: get_inputs makes its own dtype, whatever else the module defines
    ("class Model: ...\nbatch_size = 4\ndef get_inputs(): ...", False, True),
    ("class Model: ...\ndef get_inputs(): ...\ndef create_inputs(seed, dtype): ...", False, True),
    # a module with a workload, or a CONFIG (literal or computed), keeps the CONFIG protocol
    ("class Model: ...\nCONFIG = dict(n=8)\ndef create_inputs(dtype): ...\ndef workload(x): ...", True, False),
    ("class Model: ...\nCONFIG = make()\ndef create_inputs(seed): ...", False, False),
    ("from helpers import create_inputs, workload", None, False),
])
def test_the_dtype_and_protocol_are_read_from_the_source_as_kgate_loads_the_module(source, takes, model):
    from kgate.problem.oppoint import static_is_model, static_takes_dtype

    assert static_is_model(source) is model
    assert static_takes_dtype(source) is takes
