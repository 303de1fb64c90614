"""The pure pieces of isolation: the surface watch, the parent's clock bound, the wire
format, and the agreement of timed outputs. Plain values; no framework run."""

import io
import json
import shutil
import sys
import types

import numpy as np
import pytest

from kgate.backends import wire
from kgate.backends.base import HostTree
from kgate.errors import KgateError
from kgate.gates.firing import graded_record_differs
from kgate.gates.integrity import clock_bound
from kgate.gates.parity import timed_agreement
from kgate.problem.snapshot import snapshot_surface
from kgate.verify import seals


def _module(name):
    module = types.ModuleType(name)

    def helper(x):
        return x + 1

    class Timed:
        def __call__(self):
            return 1

    helper.__module__ = Timed.__module__ = name
    module.helper, module.Timed, module.LIMIT = helper, Timed, 3
    sys.modules[name] = module
    return module


def test_surface_watch_names_rebound_functions_class_members_and_replaced_code_and_restores_them():
    mod = _module("kgate_fake_watch")
    try:
        snap = snapshot_surface(["kgate_fake_watch"], owned_prefix="kgate_fake_watch")
        original_call, original_code = mod.Timed.__call__, mod.helper.__code__
        assert snap.diff() == []
        mod.Timed.__call__ = lambda self: 3
        mod.helper.__code__ = (lambda x: x - 1).__code__
        mod.LIMIT = 99
        mod.extra = 1
        assert snap.diff() == [
            "kgate_fake_watch.LIMIT was rebound",
            "kgate_fake_watch.Timed.__call__ was rebound",
            "kgate_fake_watch.extra was added",
            "kgate_fake_watch.helper had its code or defaults replaced",
        ]
        snap.restore()
        assert snap.diff() == []
        assert mod.Timed.__call__ is original_call and mod.helper.__code__ is original_code and mod.helper(1) == 2
    finally:
        del sys.modules["kgate_fake_watch"]


HOLDERS = (
    "import functools\n"
    "def _wrap(real):\n"
    "    def wrapper(*a):\n"
    "        return real(*a)\n"
    "    return wrapper\n"
    "def double(x):\n    return 2 * x\n"
    "jit = _wrap(double)\n"
    "ones = functools.partial(double, x=1)\n"
    "class Array:\n"
    "    @property\n"
    "    def dtype(self):\n        return 'float32'\n"
    "    @staticmethod\n"
    "    def make(x):\n        return jit(x)\n"
)


def test_a_patch_made_inside_what_a_watched_callable_holds_is_named_and_put_back():
    lib = types.ModuleType("libfake_holders")
    exec(HOLDERS, vars(lib))
    lib.Array.__module__ = lib.__name__
    sys.modules[lib.__name__] = lib
    try:
        snap = snapshot_surface([lib.__name__])
        jit_cell, real = lib.jit.__closure__[0], lib.double
        keywords, prop = lib.ones.keywords, vars(lib.Array)["dtype"]
        assert snap.diff() == [] and lib.jit(2) == 4 and lib.ones() == 2 and lib.Array().dtype == "float32"
        jit_cell.cell_contents = lambda x: -x  # the closure cell: `jit` is the same object, same code
        lib.ones.__setstate__((lambda x: 0, (), keywords, None))  # the partial's function, in place
        property.__init__(prop, lambda self: "bfloat16")  # the property re-initialised in place
        assert lib.jit(2) == -2 and lib.ones() == 0 and lib.Array().dtype == "bfloat16"
        held = "had what it holds replaced in place (a closure cell, a partial's arguments or a property's accessors)"
        assert snap.diff() == [f"libfake_holders.{name} {held}" for name in ("Array.dtype", "jit", "ones")]
        snap.restore()
        assert snap.diff() == [] and lib.jit(2) == 4 and lib.ones() == 2 and lib.Array().dtype == "float32"
        assert lib.ones.keywords is keywords and vars(lib.Array)["dtype"] is prop
        keywords["x"] = 5  # a keyword's value changed in the dict the partial keeps
        del jit_cell.cell_contents  # a cell emptied
        assert snap.diff() == [f"libfake_holders.{name} {held}" for name in ("jit", "ones")]
        snap.restore()
        assert snap.diff() == [] and lib.jit(2) == 4 and lib.ones() == 2
        assert jit_cell.cell_contents is real
    finally:
        del sys.modules[lib.__name__]


def _first(code, base: str) -> tuple[int, int]:
    """Where the first `base` instruction (or a specialization of it) of `code` is, and its argument."""
    import dis

    live = code._co_code_adaptive
    i = next(i for i in range(0, len(live), 2) if code.co_code[i] and dis._deoptop(live[i]) == dis.opmap[base])
    return i, live[i + 1]


def _write_byte(code, offset: int, value: int) -> None:
    """Write one byte into the bytecode the interpreter runs for `code` (through ctypes): the
    function, its code object and `co_code` stay as they were."""
    import ctypes

    at = ctypes.string_at(id(code), sys.getsizeof(code)).find(code._co_code_adaptive)
    assert at > 0
    ctypes.memmove(id(code) + at + offset, bytes([value]), 1)


def _compare_as(code, source: str) -> None:
    """Make the first comparison of `code` the one `source` (`x <= y`) has on this interpreter."""
    i, _ = _first(code, "COMPARE_OP")
    _write_byte(code, i + 1, _first(compile(source, "<s>", "eval"), "COMPARE_OP")[1])


@pytest.mark.skipif(not hasattr(types.CodeType, "_co_code_adaptive"), reason="the interpreter runs co_code itself")
def test_bytecode_written_in_place_where_the_interpreter_runs_it_is_found_and_specializing_is_not():
    """From 3.11 the interpreter runs an adaptive copy of a function's bytecode that `co_code`
    does not show and that it rewrites itself as it specializes: a byte written into it through
    ctypes changes what the function does. The content diff (the end of a leg) and a problem
    module's diff read it; the interpreter's own rewriting is never a change."""
    from kgate.problem.snapshot import snapshot_module

    lib = _module("libfake_in_place")
    exec("def below(x, y):\n    return x < y\ndef busy(x):\n    return x * 2 + 1\n", vars(lib))
    sys.modules[lib.__name__] = lib
    try:
        snap = snapshot_surface(["libfake_in_place"])
        module = snapshot_module(lib)
        for _ in range(100):  # specialized as it runs
            lib.busy(3), lib.busy(2.5)
        assert snap.diff(content=True) == [] and module.diff(lib) == []
        assert lib.below(2, 2) is False
        _compare_as(lib.below.__code__, "x <= y")
        assert lib.below(2, 2) is True and lib.below.__code__.co_code == compile(
            "def below(x, y):\n    return x < y\n", "<s>", "exec").co_consts[0].co_code  # co_code shows nothing
        assert snap.diff() == []  # identities only, after every call: the end's content diff reads the bytes
        assert snap.diff(content=True) == snap._walked_diff(True) == ["libfake_in_place.below had its code changed in place"]
        assert module.diff(lib) == ["libfake_in_place.below had its code or defaults replaced"]
    finally:
        del sys.modules["libfake_in_place"]


@pytest.mark.skipif(not hasattr(types.CodeType, "_co_code_adaptive"), reason="the interpreter runs co_code itself")
def test_a_specialization_of_another_operation_or_a_write_into_a_nested_code_object_is_found():
    """Two writes the bytecode's base instructions alone would not show: a specialized opcode
    that does another operation whatever its argument says (`x - y` run as `BINARY_OP_ADD_INT`),
    and a byte written into the code of a generator expression inside a watched function."""
    import dis

    lib = _module("libfake_nested")
    exec("def sub(x, y):\n    return x - y\ndef anyone(xs):\n    return any(x == 1 for x in xs)\n", vars(lib))
    sys.modules[lib.__name__] = lib
    try:
        for _ in range(100):  # `x - y` on ints: BINARY_OP_SUBTRACT_INT
            lib.sub(5, 3)
        snap = snapshot_surface(["libfake_nested"])
        assert snap.diff(content=True) == []
        i, _ = _first(lib.sub.__code__, "BINARY_OP")
        _write_byte(lib.sub.__code__, i, dis._all_opmap["BINARY_OP_ADD_INT"])
        assert lib.sub(5, 3) == 8
        assert snap.diff(content=True) == ["libfake_nested.sub had its code changed in place"]

        inner = next(c for c in lib.anyone.__code__.co_consts if isinstance(c, types.CodeType))
        assert lib.anyone([2, 3]) is False
        _compare_as(inner, "x != y")
        assert lib.anyone([2, 3]) is True
        assert "libfake_nested.anyone had its code changed in place" in snap.diff(content=True)
    finally:
        del sys.modules["libfake_nested"]


def test_a_librarys_state_changing_is_not_a_patch_but_its_functions_are():
    mod = _module("libfake_state")
    try:
        snap = snapshot_surface(["libfake_state"])
        mod.LIMIT = 4  # module-level state of a library changes as it runs
        assert snap.diff() == []
        mod.helper = lambda x: x
        assert snap.diff() == ["libfake_state.helper was rebound"]
    finally:
        del sys.modules["libfake_state"]


def _library_and_owned():
    """An owned module and a library module, with what a candidate could patch in each."""
    lib = types.ModuleType("libfake_surface")
    exec(
        "class Base:\n    def softmax(self):\n        return 1\n"
        "class Tensor(Base):\n    def add(self, y=[1]):\n        return y\n    @staticmethod\n    def s(x):\n        return x\n"
        "    @classmethod\n    def c(cls):\n        return 1\n"
        "def exp(x, scale=2.0):\n    return x\n"
        "def kw(x, *, eps=1e-6):\n    return x\n"
        "def listy(x, seen=[]):\n    return x\n"
        "class Jitted:\n    def __call__(self, *a):\n        return self.__wrapped__(*a)\n"
        "jitted = Jitted()\njitted.__wrapped__ = exp\n",
        vars(lib))
    for cls in (lib.Base, lib.Tensor):
        cls.__module__ = lib.__name__
    own = _module("kgate_fake_surface")
    return lib, own


def _mutations(lib, own):
    def set_code(fn):
        fn.__code__ = (lambda x, scale=2.0: -x).__code__

    return {
        "library function rebound": lambda: setattr(lib, "exp", lambda x, scale=2.0: x),
        "library function deleted": lambda: delattr(lib, "kw"),
        "library code swapped": lambda: set_code(lib.exp),
        "library defaults replaced": lambda: setattr(lib.exp, "__defaults__", (3.0,)),
        "keyword default changed in place": lambda: lib.kw.__kwdefaults__.update(eps=1.0),
        "list default changed in place": lambda: lib.listy.__defaults__[0].append(1),
        "member default changed in place": lambda: lib.Tensor.add.__defaults__[0].append(2),
        "wrapped function swapped": lambda: setattr(lib.jitted, "__wrapped__", lib.kw),
        "member patched": lambda: setattr(lib.Tensor, "add", lambda self, y=None: y),
        "static member patched": lambda: setattr(lib.Tensor, "s", staticmethod(lambda x: -x)),
        "static member re-initialised in place": lambda: staticmethod.__init__(vars(lib.Tensor)["s"], lambda x: -x),
        "class method re-initialised in place": lambda: classmethod.__init__(vars(lib.Tensor)["c"], lambda cls: -1),
        "static member given the same code in other globals": lambda: staticmethod.__init__(
            vars(lib.Tensor)["s"], types.FunctionType(vars(lib.Tensor)["s"].__func__.__code__, {"x": 1})),
        "inherited method overridden": lambda: setattr(lib.Tensor, "softmax", lambda self: 2),
        "library class rebound": lambda: setattr(lib, "Tensor", type("Tensor", (lib.Base,), {})),
        "owned global added": lambda: setattr(own, "extra", 1),
        "owned class added": lambda: setattr(own, "Extra", type("Extra", (), {"__module__": own.__name__, "go": lambda self: 1})),
        "owned member added": lambda: setattr(own.Timed, "other", lambda self: 2),
        "owned state rebound": lambda: setattr(own, "LIMIT", 5),
        "module replaced": lambda: sys.modules.__setitem__(lib.__name__, types.ModuleType(lib.__name__)),
        "module unloaded": lambda: sys.modules.pop(lib.__name__),
    }


def test_the_watch_reads_live_namespaces_and_finds_what_walking_every_binding_finds():
    """The diff after every candidate call reads each binding from its live namespace (fast);
    walking every watched module by name again finds the same changes, for every kind of patch."""
    names = ["libfake_surface", "kgate_fake_surface"]
    for label in _mutations(*_library_and_owned()):
        lib, own = _library_and_owned()
        sys.modules[lib.__name__] = lib
        try:
            snap = snapshot_surface(names, owned_prefix="kgate_fake_surface")
            assert snap.diff() == snap.diff(content=True) == [], label
            lib.Tensor.__slotnames__ = []  # a library's cache filled as it runs: no change
            lib.STATE = 2
            assert snap.diff() == [], label
            _mutations(lib, own)[label]()
            fast, walked = snap.diff(), snap._walked_diff(False)
            assert fast and fast == walked, (label, fast, walked)
            assert snap.diff(content=True) == snap._walked_diff(True), label
        finally:
            sys.modules.pop("libfake_surface", None)
            sys.modules.pop("kgate_fake_surface", None)


def test_the_modules_kgates_code_binds_must_stay_the_ones_it_bound_and_a_swapped_module_is_still_read():
    """`kgate.x.time = fake` (a module replaced by anything, a fake module too) is a change; a
    copy put in `sys.modules` while the original is patched hides nothing: the namespaces kept
    at the snapshot are read as well as the ones `sys.modules` names now."""
    import time as real_time

    lib, own = _library_and_owned()
    own.time = real_time
    sys.modules[lib.__name__] = lib
    try:
        snap = snapshot_surface(["libfake_surface", "kgate_fake_surface"], owned_prefix="kgate_fake_surface")
        own.time = types.ModuleType("time")  # a fake that passes for a module
        assert snap.diff() == ["kgate_fake_surface.time was rebound"]
        snap.restore()
        assert own.time is real_time and snap.diff() == []
        copy = types.ModuleType(lib.__name__)
        vars(copy).update(vars(lib))
        sys.modules[lib.__name__] = copy  # the walk by name now reads the unpatched copy ...
        lib.exp = lambda x, scale=2.0: -x  # ... while the reference's module object is patched
        assert "libfake_surface.exp was rebound" in snap.diff()
    finally:
        sys.modules.pop("libfake_surface", None)
        sys.modules.pop("kgate_fake_surface", None)


def _clock(windows_ms):
    """Parent-side records: the tick sent at each window's start, the end beat read at its end."""
    beats, ticks = [], []
    for i, (start, end) in enumerate(windows_ms):
        ticks.append([int(start * 1e6), i])
        beats.append([int(end * 1e6), f"e {i}"])
    return beats, ticks


def test_what_a_framework_s_wrapper_looks_up_to_call_is_watched_though_nothing_is_rebound(monkeypatch):
    """torch's `_disable_dynamo` wrapper calls what `fn.__dynamo_disable` holds, which torch sets on
    its first call: a value torch would set there passes, anything else is a change, and is put back."""
    from kgate.problem import snapshot as snap_mod

    lib = types.ModuleType("fake_wrapping_lib")

    def original(x):
        return x

    def wrap(fn):
        def wrapper(x):
            return getattr(fn, "__hook", fn)(x)
        return wrapper

    def own(fn):  # what the framework itself sets there: a function of its own code, calling fn
        def hooked(x):
            return fn(x)
        return hooked

    lib.api = wrap(original)
    monkeypatch.setitem(sys.modules, lib.__name__, lib)
    own_code = own(original).__code__

    def find(value):
        if getattr(value, "__code__", None) is not lib.api.__code__:
            return None
        fn = value.__closure__[0].cell_contents
        return fn, "__hook", lambda v: getattr(v, "__code__", None) is own_code and v.__closure__[0].cell_contents is fn

    monkeypatch.setattr(snap_mod, "_LOOKUPS", (find,))
    snap = snap_mod.snapshot_surface([lib.__name__], owned_prefix="kgate")
    original.__hook = own(original)  # the framework's own first call
    assert snap.diff() == []
    original.__hook = lambda x: -x  # the candidate's
    assert snap.diff() == ["fake_wrapping_lib.api calls what its wrapper looks up off original.__hook, and that was "
                           "set to something the framework does not set there"]
    snap.restore()
    assert not hasattr(original, "__hook") and lib.api(3) == 3 and snap.diff() == []


def test_each_leg_compiles_into_caches_of_its_own_that_start_empty(monkeypatch):
    """torch's compiler and Triton load what their on-disk caches hold (pickled graphs, generated
    modules, compiled kernels) as their own: a leg that ran candidate code could leave one for the
    next leg to load before its snapshot. Every leg points both at a new, empty folder."""
    import os

    from kgate.verify.leg import private_caches

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/shared-cache")
    first = private_caches()
    seen = (os.environ["TORCHINDUCTOR_CACHE_DIR"], os.environ["TRITON_CACHE_DIR"])
    second = private_caches()
    try:
        assert first != second and not any(first.iterdir())
        assert seen == (str(first / "inductor"), str(first / "triton"))
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(second / "inductor")
    finally:
        for folder in (first, second):
            shutil.rmtree(folder, ignore_errors=True)


def test_rounds_must_fit_the_parents_clock():
    beats, ticks = _clock([(0, 10), (10, 20)])
    assert clock_bound("c", [6.0, 9.0], beats, ticks).status == "PASS"
    over = clock_bound("c", [6.0, 35.0], beats, ticks)
    assert over.status == "FAIL" and "round 1 reports 35.000 ms in a 10.000 ms window" in over.detail
    missing = clock_bound("c", [6.0, 9.0, 1.0], beats, ticks)
    assert missing.status == "FAIL" and "did not mark 1 of its 3 rounds" in missing.detail


def test_forged_beats_after_the_real_ones_do_not_widen_a_window():
    beats, ticks = _clock([(0, 10)])
    assert clock_bound("c", [30.0], beats + [[int(500e6), "e 0"]], ticks).status == "FAIL"


def _beat_reader():
    """The parent's real beat reader on real pipes, as a timed leg sees it."""
    import os
    import threading

    from kgate.verify import spawn

    beat_r, beat_w = os.pipe()
    tick_r, tick_w = os.pipe()
    beats, ticks = [], []
    reader = threading.Thread(target=spawn._read_beats, args=(beat_r, beats, ticks, tick_w), daemon=True)
    reader.start()
    return beat_w, tick_r, beats, ticks, reader


def test_a_round_read_late_in_one_chunk_still_fits_its_window(monkeypatch):
    """The reader used to stamp the start when it read it: a start and an end read together
    gave a window of zero and an honest round FAILed on a busy machine."""
    import os
    import time

    from kgate.verify import spawn

    beat_w, tick_r, beats, ticks, reader = _beat_reader()
    monkeypatch.setenv("KGATE_BEAT_FD", str(beat_w))
    monkeypatch.setattr(spawn, "_CHANNEL", [])  # a leg's channel is fixed at its first beat: a new one here
    monkeypatch.setenv("KGATE_TICK_FD", str(tick_r))
    reported = []
    for i in range(3):
        spawn.wait_tick(i, timeout_s=10)
        t0 = time.perf_counter_ns()
        time.sleep(0.02)
        reported.append((time.perf_counter_ns() - t0) / 1e6)
        os.write(beat_w, f"b {i}\ne {i}\n".encode())  # start and end in one chunk: read at one instant
    os.close(beat_w)
    reader.join(timeout=5)
    assert [index for _, index in ticks] == [0, 1, 2]
    check = clock_bound("c", reported, beats, ticks)
    assert check.status == "PASS", check.detail


def test_a_request_out_of_turn_gets_no_tick():
    import os

    beat_w, tick_r, beats, ticks, reader = _beat_reader()
    os.write(beat_w, b"r 1\n")  # forged ahead: round 0 has not run
    os.write(beat_w, b"r 0\n")
    os.write(beat_w, b"r 1\n")  # round 0 has not ended
    os.write(beat_w, b"e 0\nr 1\nr 1\n")  # now it has; the repeat gets nothing
    os.close(beat_w)
    reader.join(timeout=5)
    assert [index for _, index in ticks] == [0, 1]
    assert os.read(tick_r, 100) == b"g 0\ng 1\n"


def _tree(*arrays):
    return HostTree("PyTreeDef((*,))", tuple(f"[{i}]" for i in range(len(arrays))), tuple(np.asarray(a) for a in arrays))


def test_timed_agreement_is_max_abs_with_nan_equal_to_nan_and_shape_mismatch_infinite():
    r = _tree(np.array([1.0, 2.0, np.nan], np.float32))
    c = _tree(np.array([1.0, 2.5, np.nan], np.float32))
    got = timed_agreement(c, r)
    assert got["max_abs"] == 0.5 and got["resolution"] == pytest.approx(2.0 * np.finfo(np.float32).eps)
    assert timed_agreement(_tree(np.zeros(2, np.float32)), r)["max_abs"] == float("inf")
    assert timed_agreement(_tree(np.array([1.0, 2.0, 0.0], np.float32)), r)["max_abs"] == float("inf")


def test_wire_round_trips_without_pickles_and_refuses_an_object_dtype(tmp_path):
    import ml_dtypes

    tree = _tree(np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2], ml_dtypes.bfloat16), np.array(True))
    buffer = io.BytesIO()
    wire.write_trees(buffer, {"a": tree})
    back = wire.read_trees(buffer.getvalue())["a"]
    assert back.paths == tree.paths and all(
        x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y) for x, y in zip(back.leaves, tree.leaves)
    )
    path = tmp_path / "evil.npz"
    np.savez(path, **{"a/structure": np.array("s"), "a/paths": np.array(["p"]), "a/n": np.array(1),
                      "a/b0": np.zeros(8, np.uint8), "a/m0": np.array(["object", "1"])})
    with pytest.raises(KgateError, match="unreadable"):
        wire.read_trees(path)


def test_a_non_ascii_digit_on_the_beat_channel_is_just_noise():
    import os

    beat_w, tick_r, beats, ticks, reader = _beat_reader()
    os.write(beat_w, "e \u00b2\nr \u0663\nr 0\n".encode())  # superscript two, Arabic-Indic three: isdigit(), not int()
    os.close(beat_w)
    reader.join(timeout=5)
    assert not reader.is_alive() and [index for _, index in ticks] == [0]
    assert clock_bound("c", [1.0], [[int(5e6), "e \u00b2"]], [[0, 0]]).detail.startswith("the timing process did not mark")


def test_a_tick_requested_early_by_someone_else_is_refused_or_caught(monkeypatch):
    """Candidate code can write `r 0` long before the round, to open its window early: the
    leg refuses a tick it did not ask for; and if the candidate also swallowed that tick,
    the parent sees the round requested twice and fails the clock."""
    import os
    import time

    from kgate.verify import spawn

    def forge(beat_w, tick_r, ticks, steal):
        os.write(beat_w, b"r 0\n")  # at import, say
        for _ in range(400):
            if ticks:
                break
            time.sleep(0.005)
        if steal:
            assert os.read(tick_r, 64) == b"g 0\n"

    beat_w, tick_r, beats, ticks, reader = _beat_reader()
    monkeypatch.setenv("KGATE_BEAT_FD", str(beat_w))
    monkeypatch.setattr(spawn, "_CHANNEL", [])  # a leg's channel is fixed at its first beat: a new one here
    monkeypatch.setenv("KGATE_TICK_FD", str(tick_r))
    forge(beat_w, tick_r, ticks, steal=False)
    with pytest.raises(RuntimeError, match="waiting before kgate asked"):
        spawn.wait_tick(0, timeout_s=5)
    os.close(beat_w)
    reader.join(timeout=5)

    beat_w, tick_r, beats, ticks, reader = _beat_reader()
    monkeypatch.setenv("KGATE_BEAT_FD", str(beat_w))
    monkeypatch.setattr(spawn, "_CHANNEL", [])  # a leg's channel is fixed at its first beat: a new one here
    monkeypatch.setenv("KGATE_TICK_FD", str(tick_r))
    forge(beat_w, tick_r, ticks, steal=True)
    with pytest.raises(RuntimeError, match="no tick for timed round 0"):
        spawn.wait_tick(0, timeout_s=0.2)  # the parent sends one tick per round: none comes
    os.write(beat_w, b"e 0\n")
    os.close(beat_w)
    reader.join(timeout=5)
    check = clock_bound("c", [1.0], beats, ticks)
    assert check.status == "FAIL" and "requested 2 times" in check.detail


def test_a_leg_cannot_name_its_way_out_of_the_phase_budget(tmp_path):
    import time

    from kgate.verify import spawn

    s, now = 10**9, time.monotonic_ns()
    leg = spawn.LegProcess("candidate-probes", None, tmp_path / "r.json", tmp_path / "e.txt", now - 10 * s, None)
    for forged in (spawn.HELD, spawn.RELEASED, "starting"):  # names only kgate's own phases carry
        leg.beats[:] = [(now - 5 * s, "phase importing the candidate"), (now - 3 * s, "phase " + forged)]
        assert leg.overrun(1.0) is not None, forged  # 3 s in a phase the leg named itself: over a 1 s budget
    held = spawn.LegProcess("measure", None, tmp_path / "r.json", tmp_path / "e.txt", now - 10 * s, None, held=True)
    held.beats[:] = [(now - 3 * s, "phase " + spawn.HELD)]
    assert held.overrun(1.0) is None  # really held: not released yet, nothing of the problem's runs
    held.released_ns = now - 2 * s
    held.beats.append((held.released_ns, "phase " + spawn.RELEASED))
    assert held.overrun(1.0) is None  # released 2 s ago by the parent: its own start answers to the floor
    held.beats.append((now - int(1.5 * s), "phase " + spawn.HELD))  # the leg claims to be held again
    assert held.overrun(1.0) is not None


# -- compiled programs shared between reference legs (kgate.verify.refcache) ----------------


def _programs(tmp_path, approved=None):
    from kgate.backends.jax_programs import VerifiedPrograms

    return VerifiedPrograms(tmp_path, approved or {})


def test_a_shared_program_loads_only_with_the_digest_the_parent_holds(tmp_path):
    import hashlib

    from kgate.backends.base import program_file

    writer = _programs(tmp_path)
    writer.put("jit_f-abc", b"program bytes")
    digest = writer.report()["written"]["jit_f-abc"]
    assert digest == hashlib.sha256(b"program bytes").hexdigest()
    assert _programs(tmp_path, {"jit_f-abc": digest}).get("jit_f-abc") == b"program bytes"
    assert _programs(tmp_path).get("jit_f-abc") is None  # not approved: never read
    program_file(tmp_path, "jit_f-abc", digest).write_bytes(b"planted program")  # same name, other bytes
    reader = _programs(tmp_path, {"jit_f-abc": digest})
    assert reader.get("jit_f-abc") is None and reader.report()["misses"] == 1


def test_a_shared_program_that_is_a_pipe_or_a_link_is_a_miss_that_never_blocks(tmp_path):
    import os

    from kgate.backends.base import program_file

    digest = "0" * 64
    pipe = program_file(tmp_path, "jit_pipe-1", digest)
    os.mkfifo(pipe)
    (tmp_path / "elsewhere").write_bytes(b"x")
    os.symlink(tmp_path / "elsewhere", program_file(tmp_path, "jit_link-1", digest))
    reader = _programs(tmp_path, {"jit_pipe-1": digest, "jit_link-1": digest})
    assert reader.get("jit_pipe-1") is None and reader.get("jit_link-1") is None
    # a name that is not a plain file name is neither written nor read
    reader.put("../escape", b"x")
    reader.put(".hidden", b"x")
    assert not (tmp_path.parent / "escape").exists() and reader.report()["written"] == {}


def test_a_link_planted_where_a_program_will_be_written_is_replaced_not_followed(tmp_path):
    import hashlib
    import os

    from kgate.backends.base import program_file

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    value = b"compiled"
    os.symlink(victim, program_file(tmp_path, "jit_g-1", hashlib.sha256(value).hexdigest()))
    _programs(tmp_path).put("jit_g-1", value)
    assert victim.read_text() == "keep me"


def test_the_parent_keeps_only_well_formed_digests_per_environment(monkeypatch):
    from kgate.verify.refcache import ENV, ReferenceCache

    cache = ReferenceCache()
    offer = cache.offer({})
    assert offer is not None and offer["approved"] == {}
    good = "a" * 64
    cache.accept({}, {"written": {"jit_f-1": good, "../x": good, "jit_g-1": "not a digest", 3: good}, "hits": 2,
                      "misses": -5})
    assert cache.offer({})["approved"] == {"jit_f-1": good}
    assert cache.offer({"XLA_FLAGS": "--xla_foo"})["approved"] == {}  # another environment: its own programs
    assert (cache.hits, cache.misses) == (2, 0)
    cache.accept({}, "garbage")
    monkeypatch.setenv(ENV, "0")
    assert cache.offer({}) is None


@pytest.mark.full
def test_a_result_file_rewritten_after_its_leg_wrote_it_is_never_used(tmp_path):
    """A process left behind (or running beside the leg) can rewrite a leg's result file between
    the leg's exit and the parent's read: the leg sends the file's sha256 as its last beat, and
    a file that no longer hashes to it is a crash, never a result."""
    import json

    from conftest import EXAMPLES
    from kgate.verify import spawn

    request = {"reference": str(EXAMPLES / "rmsnorm" / "reference.py"), "overrides": {"seq_len": 8}, "dtype": None,
               "seeds": [1]}
    kept = spawn.start("inputs", request, tmp_path / "kept", beats=True)
    assert kept.wait()["status"] == "PASS"  # untouched: its result
    forged = spawn.start("inputs", request, tmp_path / "forged", beats=True)
    forged.proc.wait()
    data = json.loads(forged.result_path.read_text())
    data["inputs"] = {"1": "0" * 64}
    forged.result_path.write_text(json.dumps(data))
    result = forged.wait()
    assert result["status"] == "CRASHED" and "is not the one it wrote" in result["error"]["problem"]


_SPEAKS_FOR_THE_LEG = '''
import os, subprocess, sys
fd = int(os.environ["KGATE_BEAT_FD"])
subprocess.Popen([sys.executable, "-c", {child!r}, str(fd)], pass_fds=(fd,), start_new_session=True)
'''


@pytest.mark.parametrize("child,says", [
    # a process left behind that keeps the leg's channel open, to write on it after the leg is gone
    # (it is still running after the leg exited: stopped, and the leg is a crash before its channel is read)
    ("import sys, time; time.sleep(12)", "after the leg exited, and kgate stopped it"),
    # one that speaks for the leg at once (a digest of its choosing) and goes
    ("import os, sys; os.write(int(sys.argv[1]), b'result sha256 ' + b'0' * 64 + b'\\n')", "2 result digests"),
])
@pytest.mark.full
def test_a_process_a_leg_leaves_behind_never_speaks_for_it(tmp_path, child, says):
    """The leg's channel (its beats, its result's digest) is the leg's alone: a process it started
    that still holds the channel when the leg exits, or that wrote a digest on it, makes the leg a
    crash, never a result (kgate cannot tell whose line came first)."""
    from conftest import EXAMPLES
    from kgate.verify import spawn

    reference = tmp_path / "reference.py"
    reference.write_text((EXAMPLES / "rmsnorm" / "reference.py").read_text() + _SPEAKS_FOR_THE_LEG.format(child=child))
    request = {"reference": str(reference), "overrides": {"seq_len": 8}, "dtype": None, "seeds": [1]}
    result = spawn.start("inputs", request, tmp_path / "leg", beats=True).wait()
    assert result["status"] == "CRASHED" and says in result["error"]["problem"], result


def test_outputs_rewritten_after_the_candidate_leg_wrote_them_are_never_graded(tmp_path):
    import hashlib
    import io

    import numpy as np

    from kgate.backends import wire
    from kgate.backends.base import HostTree
    from kgate.errors import KgateError
    from kgate.verify.early import _candidate_outputs

    def packed(value):
        buffer = io.BytesIO()
        wire.write_trees(buffer, {"p0": HostTree("*", ("",), (np.full(4, value, np.float32),))})
        return buffer.getvalue()

    written = packed(1.0)
    result = {"outputs_file_sha256": hashlib.sha256(written).hexdigest()}
    (tmp_path / "candidate.npz").write_bytes(written)
    assert float(_candidate_outputs(tmp_path / "candidate.npz", result)["p0"].leaves[0][0]) == 1.0
    (tmp_path / "candidate.npz").write_bytes(packed(2.0))  # the right answer, put there by a process left behind
    with pytest.raises(KgateError, match="not the ones it wrote"):
        _candidate_outputs(tmp_path / "candidate.npz", result)
    with pytest.raises(KgateError, match="not the ones it wrote"):
        _candidate_outputs(tmp_path / "candidate.npz", {})  # a result that names no digest grades nothing


_STARTS_A_CHILD = '''
import subprocess, sys
subprocess.Popen([sys.executable, "-c", {child!r}], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, start_new_session=True)
'''


@pytest.mark.parametrize("child,crashes", [
    # a helper that finishes on its own soon after: nothing runs after the leg, nothing to say
    ("import time; time.sleep(0.3)", False),
    # a daemon (a shell puts it in the background and exits): an orphan, handed to kgate, still running
    ("import subprocess, sys; subprocess.Popen(['sleep', '30'], start_new_session=True)", True),
])
@pytest.mark.full
def test_a_process_still_running_after_its_leg_is_stopped_and_the_leg_is_a_crash(tmp_path, child, crashes):
    from conftest import EXAMPLES
    from kgate.verify import census, spawn

    reference = tmp_path / "reference.py"
    reference.write_text((EXAMPLES / "rmsnorm" / "reference.py").read_text() + _STARTS_A_CHILD.format(child=child))
    request = {"reference": str(reference), "overrides": {"seq_len": 8}, "dtype": None, "seeds": [1]}
    result = spawn.start("inputs", request, tmp_path / "leg", beats=True).wait()
    if not crashes:
        assert result["status"] == "PASS", result
        assert isinstance(result["parent_clock"]["processes"], list)  # watched (what it saw, if anything, ended)
        return
    assert result["status"] == "CRASHED", result
    problem = result["error"]["problem"]
    assert "after the leg exited, and kgate stopped it" in problem and "(sleep)" in problem, problem
    import re

    for pid in re.findall(r"pid (\d+)", problem):
        assert census.process(int(pid)) is None  # stopped and reaped: not even a zombie


def _leg(samples_ms, windows_ms, status="PASS", timing_checks=None):
    """A measure leg's result as the parent reads it: the leg's own report, and the parent's
    stamps of each round's tick and end beat (ms)."""
    beats, ticks = [], []
    for i, (start, end) in enumerate(windows_ms):
        ticks.append([int(start * 1e6), i])
        beats.append([int(end * 1e6), f"e {i}"])
    checks = timing_checks or [{"name": "measured", "status": "PASS", "detail": "2 rounds", "fix": ""}]
    return {
        "schema": 1, "command": "measure", "status": status, "exit_code": 0, "next_step": "forged",
        "reference": {"path": "r.py"}, "candidate": {"path": "c.py"}, "wall_s": 0.1,
        "gates": {
            "integrity": {"status": "PASS", "checks": [{"name": "inputs_unchanged", "status": "PASS", "detail": "same"}]},
            "timing": {"status": "PASS", "checks": checks,
                       "samples_ms": {"reference": [[s / 2] for s in samples_ms], "candidate": [[s / 2] for s in samples_ms]}},
        },
        "advisories": ["a note of the leg's own", "timing.noise: noisy"],
        "parent_clock": {"wall_ns": 10**9, "beats": beats, "ticks": ticks, "processes": []},
    }


def test_the_measure_report_is_graded_here_from_the_legs_gates_and_this_processes_clock():
    from kgate.verify.measure import MeasureRequest
    from kgate.verify.measured import report_from_leg

    request = MeasureRequest(reference="r.py", candidate="c.py")
    fits = report_from_leg(_leg([4.0, 4.0], [(0, 10), (20, 30)]), request)
    assert fits.status == "PASS" and fits.notes == ("a note of the leg's own",)  # a gate's advisory: from its checks
    names = [c.name for c in fits.gates["integrity"].checks]
    assert names == ["inputs_unchanged", "measure.parent_clock", "measure.parent_processes", "measure.parent_scheduling",
                     "measure.changes_reported"]
    assert "parent_clock" not in fits.context and fits.next_step != "forged"
    # a change the leg's watch sealed as it found it, and a report that says nothing of it: rewritten there
    sealed = _leg([4.0, 4.0], [(0, 10), (20, 30)])
    sealed["parent_clock"]["beats"].insert(0, [1, _sealed_lines([("change 0", "jax.numpy.exp was rebound (at import)")])[0]])
    covered = report_from_leg(sealed, request)
    assert covered.status == "ANOMALY"
    assert "jax.numpy.exp was rebound (at import)" in covered.gates["integrity"].failures[0].detail
    # rounds whose reported time did not pass on this process's clock: an anomaly, whatever the leg says
    invented = report_from_leg(_leg([40.0, 4.0], [(0, 10), (20, 30)]), request)
    assert invented.status == "ANOMALY" and invented.gates["integrity"].failures[0].name == "measure.parent_clock"
    # the status is the gates', never the leg's own word
    failing = [{"name": "measured", "status": "FAIL", "detail": "x", "fix": "y"}]
    assert report_from_leg(_leg([4.0], [(0, 10)], timing_checks=failing), request).status == "FAIL"
    # no result at all (the leg's process ended early): a FAIL that says how, with nothing of the leg's believed
    ended = report_from_leg({"status": "CRASHED", "returncode": 0, "error": {"problem": "exit code 0, without a "
                                                                               "result: no output"}}, request)
    assert ended.status == "FAIL" and ended.exit_code == 2 and ended.gates["integrity"].status == "SKIPPED"
    assert "did not finish: exit code 0" in ended.gates["timing"].failures[0].detail


@pytest.mark.parametrize("forge", [
    lambda leg: leg.update(gates={}),  # every gate left out
    lambda leg: leg["gates"].pop("integrity"),
    lambda leg: leg["gates"].update(timing={"status": "SKIPPED", "checks": [], "reason": "x", "not_timed": "interpreted"},
                                    bar={"status": "PASS", "checks": [], "outcome": "MET"}),  # "timed nothing", after rounds
    lambda leg: leg["gates"]["timing"].update(speedup={"estimate": 9.0, "low": 8.0, "high": 10.0}, samples_ms=None),
    lambda leg: leg["gates"].update(timing=[1, 2]),  # shapes kgate never writes
    lambda leg: leg["gates"]["timing"].update(checks=[{"name": "measured"}]),
    lambda leg: leg["gates"]["timing"].update(checks=7),
    lambda leg: leg.update(advisories=3),
    lambda leg: leg.update(advisories=[{}]),
    lambda leg: leg.update(candidate="c.py"),
])
def test_a_forged_or_malformed_measure_result_is_never_a_pass_nor_a_crash(forge):
    """The measure process ran candidate code, which can write its result file: whatever it
    leaves out or reshapes, the parent grades a FAIL or an ANOMALY (exit 2), never a traceback."""
    from kgate.verify.measure import MeasureRequest
    from kgate.verify.measured import report_from_leg

    leg = _leg([4.0, 4.0], [(0, 10), (20, 30)])
    forge(leg)
    report = report_from_leg(leg, MeasureRequest(reference="r.py", candidate="c.py"))
    assert report.status in ("FAIL", "ANOMALY") and report.exit_code == 2, report.to_json()


def test_a_request_the_measure_process_refused_is_bad_input_here():
    from kgate.verify.measure import MeasureRequest
    from kgate.verify.measured import report_from_leg

    refused = {"status": "ERROR", "error": {"problem": "--set rows=0 changed nothing", "fix": "drop it"}}
    with pytest.raises(KgateError, match="changed nothing") as info:
        report_from_leg(refused, MeasureRequest(reference="r.py", candidate="c.py"))
    assert info.value.fix == "drop it"


def test_the_lookup_guard_sees_a_rebinding_an_added_name_and_a_hook_by_identity():
    """What an eager reference looks up, read before each of its timed calls: a binding replaced
    (even by an object that claims to equal the original), a name added, a profile hook set."""
    import sys
    import types

    from kgate.verify.watch import LookupGuard

    class Liar:
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False

        __hash__ = object.__hash__

        def __call__(self, *args):
            return None

    space = types.ModuleType("space")
    space.f = len
    guard = LookupGuard([("space", space)])
    assert guard.changed() == []
    space.f = Liar()
    assert guard.changed() == ["space.f was rebound"]
    space.f = len
    space.g = abs
    space.sub = types.ModuleType("space.sub")  # a submodule imported: no lookup changes
    assert guard.changed() == ["space.g was added"]
    del space.g, space.sub
    sys.setprofile(Liar())
    try:
        assert [c for c in guard.changed() if c.startswith("sys.getprofile() changed")]
    finally:
        sys.setprofile(None)
    assert guard.changed() == []


def _sealed_lines(pieces):
    return [seals.SEAL_BEAT + json.dumps([name, seals.digest(value), value if isinstance(value, str) else ""])
            for name, value in pieces]


def test_a_leg_report_is_held_to_what_it_sealed_as_it_made_it():
    tree = HostTree("*", ("",), (np.arange(6, dtype=np.float32),))
    run = {"key": "p0", "output_sha256": tree.sha256(), "launches": ["k"]}
    result = {"runs": [run], "changes": ["jax.numpy.exp was rebound (at import)"], "facts": {"a": (1, 2.5)}}
    lines = ["phase running", *_sealed_lines([("run p0", run), ("change 0", result["changes"][0]),
                                              ("result facts", result["facts"]), ("output p0-candidate", tree)])]
    outputs = {"p0-candidate": tree}
    assert seals.problems(result, lines, outputs, ["facts"]) == []  # the JSON round trip (a tuple) changes no digest

    erased = seals.problems({**result, "changes": []}, lines, outputs, ["facts"])
    assert erased == ["change 0 ('jax.numpy.exp was rebound (at import)') was sealed and is missing from the leg's "
                      "report: code in the candidate's process removed it from kgate's record"]
    rewritten = {**result, "runs": [{**run, "launches": ["k", "other"]}]}
    assert "run p0 changed after kgate sealed it" in seals.problems(rewritten, lines, outputs, ["facts"])[0]
    other = HostTree("*", ("",), (np.arange(6, dtype=np.float32) + 1,))
    assert "output p0-candidate changed" in seals.problems(result, lines, {"p0-candidate": other}, ["facts"])[0]
    added = seals.problems({**result, "prefill": "ok"}, lines, outputs, ["facts", "prefill"])
    assert added == ["the leg reports result prefill, which kgate never sealed as it made it: the record was added to "
                     "after the fact"]


@pytest.mark.parametrize("extra,found", [
    (lambda lines: [lines[0], *lines], "run p0 was sealed twice"),  # a second writer, first or second
    (lambda lines: ["~" + lines[0], *lines[1:]], "a seal came mangled"),  # a stray byte before kgate's line
    (lambda lines: ['seal ["run p0"', *lines[1:]], "a malformed seal"),
])
def test_another_writer_on_kgates_channel_is_named(extra, found):
    run = {"key": "p0"}
    lines = extra(_sealed_lines([("run p0", run)]))
    assert any(found in p for p in seals.problems({"runs": [run]}, lines, {}, [])), lines


def test_the_audit_is_held_to_the_sealed_record_of_the_graded_runs():
    assert graded_record_differs(["k"], [["k"], ["k", "j"]], "a", "a") == ""
    assert graded_record_differs(["k"], [["k"], []], "a", "a") == "k launched in the audit's run but not in 1 of the 2 graded runs"
    assert graded_record_differs(["k"], [["k"]], "a", "b") == "the audit's run gave other outputs than the graded run on the same inputs"
    assert graded_record_differs(["k"], [["k"]], "", "b") == ""  # a digest not known: nothing compared
