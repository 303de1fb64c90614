"""The PyTorch adapter: inputs seeded with `torch.manual_seed`, every call under
`torch.inference_mode()`, outputs copied to the host; on a machine without a GPU, Triton
kernels run under the Triton interpreter (`TRITON_INTERPRET=1`, set here before triton is
imported). The launches of the candidate's own `@triton.jit` functions are recorded, and
changed, through the interpreter's launcher, which kgate wraps when it loads."""

from __future__ import annotations

import contextlib
import copy
import functools
import gzip
import hashlib
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from kgate.backends.base import (
    Ablation,
    Arithmetic,
    DeviceInfo,
    Footprint,
    HostTree,
    KernelFailure,
    KernelSite,
    ProgramFacts,
    ProgramPrint,
    count_moved,
    cpu_cache_flusher,
    timed_take,
    graded_differences,
    edge_kinds,
    edge_values,
    mixed_rows,
    inputs_failed,
    leaves_sha256,
    output_moves,
    read_hand_over,
    fits,
    config_state_key,
    host_memory,
    sized_once,
    write_hand_over,
)
from kgate import clock as kclock
from kgate.errors import KgateError, describe
from kgate.problem import model as model_protocol
from kgate.problem.module import ProblemModule, config_set
from kgate.problem.oppoint import refuse_ineffective
from kgate.problem.snapshot import allow_rewrap, watch_lookup

_CUDA = torch.cuda.is_available()
# What a timed call goes through, bound when kgate is imported (before any candidate code).
_SYNC = torch.cuda.synchronize if _CUDA else (lambda: None)
_FAULTS = kclock.page_faults  # bound before any candidate code exists, as the clocks are
_INFERENCE = torch.inference_mode
_NO_GRAD = torch.no_grad
OUTPUT_DEVICES = ("cpu", "cuda")  # where a graded output may live: materialized memory (ROCm is "cuda" too)
_BUMP = torch.autograd.graph.increment_version  # bound at import, like the clocks
_EVENT = torch.cuda.Event
_EVENT_RECORD, _EVENT_SYNC, _EVENT_ELAPSED = _EVENT.record, _EVENT.synchronize, _EVENT.elapsed_time
if not _CUDA:  # before triton is imported anywhere in this process: its kernels are interpreted
    os.environ["TRITON_INTERPRET"] = "1"

_NO_DRIVER = "active drivers"  # Triton's words when a feature needs a GPU driver (its autotuner's benchmarks)
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
_FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)


@contextlib.contextmanager
def _torch_seeded(seed: int) -> Iterator[None]:
    """torch's global generator seeded for one construction (as KernelBench does before it
    builds a Model), then put back."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


model_protocol.SEEDERS.append(_torch_seeded)


# -- what torch rebinds of itself ---------------------------------------------------------------

def _dynamo_disabled_code() -> Any:
    """The code of the wrapper torch's `_disable_dynamo` makes (one code object for every function
    it wraps), read when kgate loads; None where this torch has no such wrapper."""
    try:
        import torch._compile

        return torch._compile._disable_dynamo(lambda: None).__code__
    except Exception:  # noqa: BLE001 - no wrapper to accept: every rebinding stays a change
        return None


_DYNAMO_DISABLED = _dynamo_disabled_code()


def _disabled_fn(value: Any) -> Any:
    """The function torch's `_disable_dynamo` wrapper `value` calls, its `fn` cell read now; None
    where `value` is no such wrapper (a function of that very code, its `recursive` cell a bool)."""
    if _DYNAMO_DISABLED is None or type(value) is not types.FunctionType or value.__code__ is not _DYNAMO_DISABLED:
        return None
    cells = dict(zip(value.__code__.co_freevars, value.__closure__ or ()))
    try:
        return cells["fn"].cell_contents if type(cells["recursive"].cell_contents) is bool else None
    except (KeyError, ValueError):
        return None


def _torch_wrapped_itself(new: Any) -> Any:
    """What `new` calls, where it is torch's `_disable_dynamo` wrapper (as `torch._dynamo`
    installs over `torch.manual_seed` when it loads; a custom operator's registration imports it)
    and what it looks up to call is nothing yet or torch's own (`_torch_disables`); None for
    anything else. The wrapper calls that function with torch's compiler off."""
    fn = _disabled_fn(new)
    called = vars(fn).get(DYNAMO_LOOKUP) if hasattr(fn, "__dict__") else None
    return fn if fn is not None and (called is None or _torch_disables(fn, called)) else None


# What torch's `_disable_dynamo` wrapper calls: `fn.__dynamo_disable`, which torch sets on its first call
# to `torch._dynamo.disable(fn)`; whatever else is put there is called in its place.
DYNAMO_LOOKUP = "__dynamo_disable"


def _torch_disables(fn: Any, value: Any) -> bool:
    """Whether `value` is what `torch._dynamo.disable` makes of `fn`: a function of the code torch's
    `DisableContext` (or its non-recursive wrapper) makes, calling `fn` from its cell, under a
    `DisableContext` of torch's (read now: a cell swapped since is seen)."""
    if type(value) is not types.FunctionType or not any(value.__code__ is code for code in _disabled_codes()):
        return False
    cells = dict(zip(value.__code__.co_freevars, value.__closure__ or ()))
    try:
        if cells["fn"].cell_contents is not fn:
            return False
        if "self" in cells:
            frame = sys.modules.get("torch._dynamo.eval_frame")
            return frame is not None and type(cells["self"].cell_contents) is frame.DisableContext
    except (KeyError, ValueError):
        return False
    return True


_DISABLED_CODES: list[Any] = []


def _disabled_codes() -> list[Any]:
    """The code objects of the functions `torch._dynamo.disable` makes, read from torch's own
    functions the first time torch's compiler is loaded here (kept: a function made later with
    other code is not torch's): before the snapshot where the problem names the compiler
    (`late_state`); else at the first look after candidate code loaded it, which could have
    replaced `DisableContext.__call__` first (said in the README)."""
    if not _DISABLED_CODES:
        frame, utils = sys.modules.get("torch._dynamo.eval_frame"), sys.modules.get("torch._dynamo.external_utils")
        if frame is not None and utils is not None:
            _DISABLED_CODES.extend(
                [c for c in frame.DisableContext.__call__.__code__.co_consts if isinstance(c, types.CodeType) and c.co_name == "_fn"]
                + [c for c in utils.get_nonrecursive_disable_wrapper.__code__.co_consts
                   if isinstance(c, types.CodeType) and c.co_name == "nonrecursive_disable_wrapper"])
    return _DISABLED_CODES


def _torch_wrapper_lookup(value: Any) -> tuple[Any, str, Callable[[Any], bool]] | None:
    """Where `value` is torch's `_disable_dynamo` wrapper (torch's own at definition for some 140 of
    its functions, its dispatch modes' among them, and `torch.manual_seed` once its compiler loads):
    the attribute it calls, and the test of what torch itself sets there."""
    fn = _disabled_fn(value)
    return (fn, DYNAMO_LOOKUP, functools.partial(_torch_disables, fn)) if hasattr(fn, "__dict__") else None


allow_rewrap(_torch_wrapped_itself)
watch_lookup(_torch_wrapper_lookup)


# Names of torch's compiler: loading it rebinds parts of torch (`torch.manual_seed`, the safe globals of
# `torch.load`), and its first compiled call patches more (`torch.jit.trace`, `nn.Module.__init__`),
# none of which may read as the candidate's doing. A custom operator's registration loads it too.
COMPILER_NAMES = ("torch.compile", "torch._dynamo", "torch._inductor", "torch.compiler")
LOADS_THE_COMPILER = (*COMPILER_NAMES, "torch.library")


def late_state(names: Iterable[str]) -> None:
    """Make, before a leg's watch takes its snapshot, the state torch gives itself where the
    problem's modules name a part of torch that changes torch when it loads or first runs
    (`kgate.backends.import_frameworks`): its compiler loaded (`LOADS_THE_COMPILER`), and where
    they name the compiler itself, one compiled call of kgate's own (a trivial function, with the
    compiler's graph capture alone and with its default code generator). Nothing of the
    problem's runs here, and no module it names is imported but the compiler's own."""
    def named(prefixes: Sequence[str]) -> bool:
        return any(name == prefix or name.startswith(prefix + ".") for name in names for prefix in prefixes)

    if not named(LOADS_THE_COMPILER):
        return
    try:
        import torch._dynamo

        _disabled_codes()  # read from torch's own functions now, before any candidate code could replace them
        if named(COMPILER_NAMES):
            for backend in ("eager", "inductor"):
                torch.compile(_late_state_probe, backend=backend, dynamic=False)(torch.zeros(2))
            torch._dynamo.reset()  # kgate's compiled probe is not kept
    except Exception:  # noqa: BLE001 - no compiler here (or it fails): the candidate's own use reports it
        pass


def _late_state_probe(x: Any) -> Any:
    return x + 1


# -- the Triton launches kgate records ----------------------------------------------------------


@dataclass
class Launch:
    """One launch of an authored Triton kernel: which function, its tensor arguments' contents
    before it ran (a digest), and the elements it wrote: per tensor argument it changed, a mask
    of the changed elements (and, where the recorder keeps them, their values after it)."""

    name: str
    read_sha256: str
    written: dict[int, torch.Tensor] = field(default_factory=dict)  # argument position -> changed-element mask
    values: dict[int, torch.Tensor] = field(default_factory=dict)  # argument position -> its contents after


# What a recorder may do after a launch: change the elements it wrote (a perturbation, a stand-in
# that does no work, another run's values). Given the launch and its tensor arguments.
Act = Callable[[Launch, list[torch.Tensor], int], None]


class _Recorder:
    """What kgate asks of the launches while one call runs: `launches` records them; `act` may
    change what a launch left behind; `keep_values` keeps what each launch wrote."""

    def __init__(self, act: Act | None = None, keep_values: bool = False) -> None:
        self.launches: list[Launch] = []
        self.act = act
        self.keep_values = keep_values
        self.launching = 0  # inside a launch: the recorder's own torch calls (copies, comparisons) run


_RECORDING: list[_Recorder] = []


def _authored(fn: Any) -> bool:
    """A kernel the candidate wrote: its function's code lies outside torch (Inductor's
    generated kernels are excluded)."""
    code = getattr(getattr(fn, "fn", fn), "__code__", None)
    filename = str(getattr(code, "co_filename", ""))
    return bool(filename) and not str(Path(filename).resolve()).startswith(_TORCH_DIR) and "torchinductor" not in filename


def _tensors(args: Sequence[Any], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    return [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]


def _changed(before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
    """Which elements differ (NaN where both are NaN is no change)."""
    if before.dtype.is_floating_point or before.dtype.is_complex:
        return ~((before == after) | (before.isnan() & after.isnan()))
    return before != after


def _wrap_launcher() -> bool:
    """Wrap Triton's launcher (once, when kgate loads, before any candidate code): on a GPU the
    compiled kernels' (`JITFunction.run`), elsewhere the interpreter's. Everything the wrapper
    calls is bound here, as locals of this closure: a candidate that rebinds a module global
    (kgate's, hashlib's) mid-call changes nothing it uses. Both take the same arguments, and a
    launch is stream-ordered with the copies and comparisons around it, so what a launch wrote
    is found the same way on either."""
    try:
        if _CUDA:
            from triton.runtime.jit import JITFunction as Launcher
        else:
            from triton.runtime.interpreter import InterpretedFunction as Launcher
    except Exception:
        return False
    # the interpreter rebinds triton.language while a kernel runs; compiled launches touch none of it
    kept = contextlib.nullcontext if _CUDA else _language_kept
    original, recording, sha256, authored = Launcher.run, _RECORDING, hashlib.sha256, _authored
    tensors_of, changed, no_grad = _tensors, _changed, torch.no_grad

    def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        recorder = recording[-1] if recording else None
        if recorder is None or warmup or not authored(self.fn):
            with kept():
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        recorder.launching += 1
        try:
            tensors = tensors_of(args, kwargs)
            with no_grad():
                before = [t.detach().clone() for t in tensors]
            h = sha256()
            for t in before:
                h.update(t.cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
            with kept():
                result = original(self, *args, grid=grid, warmup=warmup, **kwargs)
            launch = Launch(str(getattr(self.fn, "__qualname__", getattr(self.fn, "__name__", "kernel"))),
                            h.hexdigest())
            with no_grad():
                for i, (old, t) in enumerate(zip(before, tensors)):
                    mask = changed(old, t.detach())
                    if bool(mask.any()):
                        launch.written[i] = mask
                        if recorder.keep_values:
                            launch.values[i] = t.detach().clone()
                recorder.launches.append(launch)
                if recorder.act is not None:
                    recorder.act(launch, tensors, len(recorder.launches) - 1)
        finally:
            recorder.launching -= 1
        return result

    Launcher.run = run  # type: ignore[method-assign]
    return True


def _language_parts() -> list[Any]:
    import triton.language as tl

    return [tl, tl.core, tl.math, tl.standard, tl.core.tensor, tl.core.tensor_descriptor_base]


@contextlib.contextmanager
def _language_kept() -> Iterator[None]:
    """triton.language as it was before a launch, put back after it: the interpreter rebinds its
    functions while a kernel runs, and a device function's call (one @triton.jit function
    calling another) leaves them rebound, which would read as a patch of the library."""
    parts = [(part, dict(vars(part))) for part in _language_parts()]
    try:
        yield
    finally:
        for part, before in parts:
            now = vars(part)
            if isinstance(part, type):  # a method set on a class over an inherited one goes (a module's
                for name in [n for n in now if n not in before]:  # added names stay: rewritten functions read them)
                    with contextlib.suppress(AttributeError, TypeError):
                        delattr(part, name)
            for name, value in before.items():
                if now.get(name, _GONE) is not value:
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(part, name, value)


_GONE = object()
_WRAPPED = _wrap_launcher()


@contextlib.contextmanager
def _recording(recorder: _Recorder) -> Iterator[_Recorder]:
    _RECORDING.append(recorder)
    try:
        yield recorder
    finally:
        _RECORDING.remove(recorder)


# -- fresh buffers --------------------------------------------------------------------------------

_EMPTY = {"empty": torch.empty, "empty_like": torch.empty_like, "empty_strided": torch.empty_strided}
_NEW_EMPTY = {"new_empty": torch.Tensor.new_empty, "new_empty_strided": torch.Tensor.new_empty_strided}


def _fill(t: torch.Tensor, mode: str) -> torch.Tensor:
    if t.dtype.is_floating_point or t.dtype.is_complex:
        t.fill_(float("nan") if mode == "nan" else 0.0)
    elif t.dtype == torch.bool:
        t.fill_(mode == "nan")
    else:
        t.fill_(torch.iinfo(t.dtype).max if mode == "nan" else 0)
    return t


@contextlib.contextmanager
def _filled_buffers(mode: Literal["nan", "zero"]) -> Iterator[None]:
    """`torch.empty`, `empty_like`, `empty_strided` and `Tensor.new_empty(_strided)` hand out
    buffers filled with NaN (or zeros): an output element a kernel never writes shows, instead
    of landing on whatever the allocator held (a stale answer among them)."""
    def filled(make: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        return lambda *a, **kw: _fill(make(*a, **kw), mode)

    own = {name: vars(torch.Tensor).get(name) for name in _NEW_EMPTY}  # inherited from torch's C base, unless set
    for name, make in _EMPTY.items():
        setattr(torch, name, filled(make))
    for name, make in _NEW_EMPTY.items():
        setattr(torch.Tensor, name, filled(make))
    try:
        yield
    finally:
        for name, make in _EMPTY.items():
            setattr(torch, name, make)
        for name, kept in own.items():
            if kept is None:
                delattr(torch.Tensor, name)
            else:
                setattr(torch.Tensor, name, kept)


# -- trees of tensors ---------------------------------------------------------------------------


def _flatten(tree: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(tree, (list, tuple)):
        return [leaf for i, x in enumerate(tree) for leaf in _flatten(x, f"{path}[{i}]")]
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree, key=str) for leaf in _flatten(tree[k], f"{path}[{k!r}]")]
    return [(path, tree)]


def _structure(tree: Any) -> str:
    if isinstance(tree, (list, tuple)):
        inner = ", ".join(_structure(x) for x in tree)
        return f"({inner},)" if isinstance(tree, tuple) else f"[{inner}]"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(tree[k])}" for k in sorted(tree, key=str)) + "}"
    return "*"


def _edged(t: Any) -> bool:
    """Whether the edges change an input leaf: a floating tensor of two elements or more."""
    return isinstance(t, torch.Tensor) and t.dtype in _FLOATING and t.numel() >= 2


def _map(tree: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map(x, fn) for x in tree)
    if isinstance(tree, dict):  # in _flatten's order, so a counter over leaves lines up with it
        return {k: _map(tree[k], fn) for k in sorted(tree, key=str)}
    return fn(tree)


def host_array(t: torch.Tensor) -> np.ndarray:
    """A tensor's values on the host as numpy (bfloat16 as ml_dtypes' bfloat16, bit for bit)."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return t.numpy().copy()


def from_host(a: np.ndarray, device: torch.device) -> torch.Tensor:
    if str(a.dtype) == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(device)
    return torch.from_numpy(np.ascontiguousarray(a).copy()).to(device)


def _imports_triton(fn: Any) -> bool:
    """Whether the module `fn` comes from imports triton (so it may launch an interpreted kernel)."""
    from kgate.backends import source_imports

    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    for holder in (getattr(fn, "_protocol", None), fn):  # a Model's entry: its class's module
        cls = getattr(holder, "cls", None)
        module = sys.modules.get(getattr(cls, "__module__", "") or "") or module
    path = getattr(module, "__file__", None)
    return bool(path) and "triton" in source_imports(path)


def _shapes(inputs: Sequence[Any]) -> str:
    """The inputs' shapes and dtypes (static inputs by value): which program a run is."""
    return repr([(tuple(t.shape), str(t.dtype)) if isinstance(t, torch.Tensor) else repr(t) for _, t in _flatten(tuple(inputs))])


def is_static(x: Any) -> bool:
    """An input that is not a tensor (a Python scalar, a string): passed as it is."""
    return not isinstance(x, torch.Tensor) and not isinstance(x, (list, tuple, dict))


# Modules torch imports only when first needed, which every reference and measure leg needs:
# sizing a problem's inputs on the meta device imports torch's symbolic shapes, and with them
# sympy (0.7 s alone, seconds in a leg beside others). Imported by the fork server once (and by
# a fresh leg from their bytecode while it is trusted), not by each leg.
LAZY_MODULES = ("torch.fx.experimental.symbolic_shapes", "torch._refs", "torch._prims_common", "torch.utils.flop_counter")


def load_lazy_modules() -> None:
    """Import `LAZY_MODULES` now; one that cannot be imported here is left to torch to report
    where it is needed."""
    import importlib

    for name in LAZY_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


class TorchBackend:
    """Runs PyTorch workloads; on the CPU, Triton kernels run under the Triton interpreter."""

    name = "torch"
    load_lazy_modules = staticmethod(load_lazy_modules)

    # Why the lowering gate does not run here (kgate.verify.probes): said in the report.
    lowering_unavailable = ("kgate does not yet compile Triton kernels for a device from shapes; on a GPU the kernels "
                            "are compiled for real when they run")

    def __init__(self) -> None:
        self.platform = "gpu" if _CUDA else "cpu"
        self.interpreted = not _CUDA  # Triton kernels, where there are any, run in its interpreter
        # the float64 oracle is the reference on float64 inputs and weights: a program is not widened here
        self.oracle_fallback = "a torch reference's program is not widened"
        self._device = torch.device("cuda" if _CUDA else "cpu")
        self._launched: dict[int, bool] = {}  # id(fn) -> whether a run of it launched an authored kernel
        # (id(fn), the inputs' shapes) -> the kernels each graded run there launched
        self._graded: dict[tuple[int, str], list[frozenset[str]]] = {}
        self._graded_outputs: dict[tuple[int, str], HostTree] = {}  # (id(fn), inputs' digest) -> that run's outputs
        self._last_launches: list[str] = []  # the authored kernels the last `run` launched, by name
        self._signatures: dict[tuple[Any, ...], str | None] = {}
        self._refused: dict[tuple[Any, ...], tuple[str, str]] = {}  # op-points whose sizing ran out of memory

    def device(self) -> DeviceInfo:
        versions = {"torch": torch.__version__}
        with contextlib.suppress(Exception):
            import triton

            versions["triton"] = triton.__version__
        kind = torch.cuda.get_device_name(0) if _CUDA else "cpu"
        return DeviceInfo(self.platform, kind, self.interpreted, versions)

    # -- inputs -------------------------------------------------------------------------
    def create_inputs(self, problem: ProblemModule, seed: int, dtype: str | None) -> tuple[tuple[Any, ...], str]:
        """The problem's inputs for `seed`: torch's generator seeded with it (as KernelBench
        does), and `seed` passed where create_inputs takes one."""
        try:
            inputs, how = self._call_create_inputs(problem, seed, dtype)
        except KgateError:
            raise
        except Exception as exc:
            raise inputs_failed(problem, exc) from exc
        return tuple(_map(x, lambda t: t.to(self._device) if isinstance(t, torch.Tensor) else t) for x in inputs), how

    def _call_create_inputs(self, problem: ProblemModule, seed: int, dtype: str | None) -> tuple[tuple[Any, ...], str]:
        accepted = problem.create_inputs_params()
        kwargs: dict[str, Any] = {}
        if dtype is not None:
            if dtype not in _DTYPES:
                raise KgateError(f"--dtype {dtype!r} is not a known dtype.", f"use one of {sorted(_DTYPES)}.")
            if "dtype" not in accepted:
                raise KgateError(
                    f"--dtype {dtype} given, but {problem.path.name}'s "
                    f"{'get_inputs' if problem.model is not None else 'create_inputs'} takes no dtype.",
                    "drop --dtype; the dtype is the one the module makes (or make it a shape global it reads, and "
                    "give it with --set).")
            kwargs["dtype"] = _DTYPES[dtype]
        how = "torch.manual_seed"
        if "seed" in accepted:
            kwargs["seed"] = seed
            how = "argument"
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            np_state = np.random.get_state()
            np.random.seed(seed % 2**32)
            try:
                inputs = problem.create_inputs(**kwargs)
            finally:
                np.random.set_state(np_state)
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        return tuple(inputs), how

    def _shapes_of_inputs(self, problem: ProblemModule, dtype: str | None) -> tuple[Any, ...]:
        """The inputs made on torch's meta device: shapes and dtypes, nothing allocated (numpy
        code in them runs for real: refused past the host's free memory)."""
        def make() -> tuple[Any, ...]:
            with torch.device("meta"):
                return self._call_create_inputs(problem, 0, dtype)[0]

        return sized_once(self._refused, problem, dtype, make)

    def footprint(self, problem: ProblemModule, dtype: str | None) -> Footprint | None:
        """The bytes of one probe's inputs from shapes alone (the inputs made on the meta
        device); the outputs and the oracle are estimated at the inputs' size and twice it (the
        float64 oracle). None when the inputs cannot be made without values."""
        try:
            shapes = self._shapes_of_inputs(problem, dtype)
        except KgateError:
            raise
        except Exception:
            return None
        size = sum(t.numel() * t.element_size() for _, t in _flatten(shapes) if isinstance(t, torch.Tensor))
        return Footprint(size, size, 2 * size)

    def input_shapes(self, problem: ProblemModule, dtype: str | None) -> tuple[Any, ...]:
        return self._shapes_of_inputs(problem, dtype)

    def program_signature(self, problem: ProblemModule, dtype: str | None) -> str | None:
        """A digest of what the op-point builds: the inputs' shapes, dtypes and static values
        (from the meta device), and the Model's constructor arguments. None when they cannot be
        found without values."""
        key = config_state_key(problem, dtype)
        if key not in self._signatures:
            try:
                shapes = self._shapes_of_inputs(problem, dtype)
                text = repr([(p, tuple(t.shape), str(t.dtype)) if isinstance(t, torch.Tensor) else (p, repr(t))
                             for p, t in _flatten(shapes)])
                if problem.model is not None:
                    init = vars(problem.module).get("get_init_inputs")
                    with torch.device("meta"):
                        made = init() if callable(init) else []
                    text += repr([(tuple(t.shape), str(t.dtype)) if isinstance(t, torch.Tensor) else repr(t)
                                  for _, t in _flatten(made)])
                self._signatures[key] = hashlib.sha256(text.encode()).hexdigest()
            except Exception:
                self._signatures[key] = None
        return self._signatures[key]

    def refuse_ineffective(self, problem: ProblemModule, dtype: str | None, op_point: Any, given: dict[str, Any],
                           registered: dict[str, Any] | None = None) -> None:
        config = problem.config
        if config is None:
            return
        changed = {k: v for k, v in dict(op_point.replaced).items() if v is not None and v != config.get(k)}
        now = self.program_signature(problem, dtype) if changed else None
        if now is None:
            return
        with config_set(changed, config):
            before = self.program_signature(problem, dtype)
        refuse_ineffective(sorted(changed) if before == now else [], op_point, given, problem.path.name, registered)

    def available_memory(self) -> tuple[int, str] | None:
        if _CUDA:
            free, _ = torch.cuda.mem_get_info()
            return int(free), f"the {torch.cuda.get_device_name(0)}"
        return host_memory()

    def ensure_fits(self, problem: ProblemModule, dtype: str | None, probes: int, values: dict[str, Any]) -> bool:
        """Refuse an op-point too big for this machine before any input is made; False when
        it could not be sized by shapes alone (nothing was checked)."""
        return fits(self.footprint(problem, dtype), self.available_memory(), probes, values)

    # -- running ------------------------------------------------------------------------
    def run(
        self, fn: Callable[..., Any], inputs: Sequence[Any], *, uninitialized: Literal["nan", "zero"] = "nan",
        phase: Callable[[str], None] = lambda _: None, eager: bool = False,
    ) -> HostTree:
        """`fn` called once on `inputs` under inference mode (fresh buffers NaN- or zero-filled),
        synchronized, its outputs copied to the host."""
        phase("running")
        with _recording(_Recorder()) as recorder:
            out = self._call(fn, inputs, uninitialized)
        self._launched[id(fn)] = self._launched.get(id(fn), False) or bool(recorder.launches)
        host = self.to_host(out)
        # what the graded runs launched, and their outputs: the firing audit's own runs must match them
        self._graded.setdefault((id(fn), _shapes(inputs)), []).append(frozenset(l.name for l in recorder.launches))
        self._last_launches = sorted({launch.name for launch in recorder.launches})
        if uninitialized == "nan":
            self._graded_outputs[(id(fn), self.digest(inputs))] = host
        return host

    def last_launches(self) -> list[str]:
        """The authored kernels the last `run` launched, by name: a leg seals them with the run
        (`kgate.verify.seals`), and the parent holds the firing audit's runs to them."""
        return list(self._last_launches)

    def _call(self, fn: Callable[..., Any], inputs: Sequence[Any], uninitialized: str = "nan") -> Any:
        try:
            with torch.inference_mode(), _filled_buffers(uninitialized):  # type: ignore[arg-type]
                out = fn(*inputs)
                _SYNC()
        except Exception as exc:
            if self.interpreted and _NO_DRIVER in str(exc):
                raise KernelFailure(
                    f"{type(exc).__name__}: {exc} (an interpreter limitation: Triton's autotuner and benchmarker "
                    "need a GPU driver, which the Triton interpreter does not have; run it on a GPU, or call the "
                    "kernel with one config)", unsupported=True) from exc
            raise
        return out

    def run_eager(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> HostTree:
        return self.run(fn, inputs)

    def run_oracle(self, fn: Callable[..., Any], inputs: Sequence[Any], precision: str, eager: bool = False) -> HostTree:
        """The reference recomputed on the host with floating inputs, and a Model's weights (on a
        copy of the instance), in float32 or float64."""
        dtype = torch.float32 if precision == "float32" else torch.float64
        cast = self.cast_floating([_map(x, lambda t: t.cpu() if isinstance(t, torch.Tensor) else t) for x in inputs],
                                  dtype)
        call = fn
        instance = getattr(fn, "instance", None)
        if callable(instance) and callable(getattr(fn, "on", None)):
            held = instance()
            if isinstance(held, torch.nn.Module):
                call = fn.on(copy.deepcopy(held).to(device="cpu", dtype=dtype))
        with torch.inference_mode():
            return self.to_host(call(*cast))

    @staticmethod
    def cast_floating(inputs: Sequence[Any], dtype: Any) -> tuple[Any, ...]:
        return tuple(_map(x, lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype in _FLOATING else t)
                     for x in inputs)

    @staticmethod
    def to_host(tree: Any) -> HostTree:
        """The outputs on the host; each must be a plain, materialized `torch.Tensor` (no
        subclass, no meta or lazy tensor)."""
        leaves = []
        flat = _flatten(tree)
        for _, leaf in flat:
            if isinstance(leaf, (int, float, bool)):
                leaves.append(np.array(leaf))
                continue
            if type(leaf) is not torch.Tensor and type(leaf) is not torch.nn.Parameter:
                raise TypeError(f"output leaf of type {type(leaf).__module__}.{type(leaf).__qualname__} is not a plain "
                                "torch.Tensor")
            if leaf.device.type == "meta" or leaf.is_sparse:
                raise TypeError(f"output leaf on the {leaf.layout if leaf.is_sparse else 'meta device'} has no values")
            if leaf.device.type not in OUTPUT_DEVICES or leaf.layout != torch.strided:
                raise TypeError(f"output leaf on the {leaf.device.type!r} device with layout {leaf.layout} is not a "
                                f"materialized tensor (kgate grades tensors on {' or '.join(OUTPUT_DEVICES)}, strided): "
                                "a lazy device computes its values when they are read, in the checker")
            if leaf.is_conj() or leaf.is_neg():
                raise TypeError("output leaf is a lazy view (its conjugate or negative bit is set): its values are "
                                "computed when they are read; return a materialized tensor (.resolve_conj(), "
                                ".resolve_neg())")
            leaves.append(host_array(leaf))
        return HostTree(_structure(tree), tuple(p for p, _ in flat), tuple(leaves))

    @staticmethod
    def digest(tree: Any) -> str:
        return leaves_sha256(host_array(x) if isinstance(x, torch.Tensor) else x for _, x in _flatten(tree))

    is_static = staticmethod(is_static)

    @staticmethod
    def static_inputs(inputs: Sequence[Any]) -> list[str]:
        return [f"[{i}]={x!r}" for i, x in enumerate(inputs) if is_static(x)]

    @staticmethod
    def save_inputs(inputs: Sequence[Any], path: Path) -> str:
        return write_hand_over(_map(tuple(inputs), lambda t: host_array(t) if isinstance(t, torch.Tensor) else t), path)

    def load_inputs(self, path: Path, sha256: str) -> tuple[Any, ...]:
        host = read_hand_over(path, sha256)
        return tuple(_map(host, lambda a: from_host(a, self._device) if isinstance(a, np.ndarray) else a))

    @staticmethod
    def copy_inputs(inputs: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(_map(x, lambda t: t.clone() if isinstance(t, torch.Tensor) else t) for x in inputs)

    @staticmethod
    def edge_inputs(inputs: Sequence[Any], seed: int | None = None) -> list[tuple[str, tuple[Any, ...]]]:
        """The edge battery (`kgate.backends.base.edge_values`), one floating input at a time."""
        leaves = [t for _, t in _flatten(tuple(inputs))]
        variants: list[tuple[str, tuple[Any, ...]]] = []
        floating = [i for i, x in enumerate(leaves) if _edged(x)]
        kinds = edge_kinds(len(floating))
        for i in floating:
            x = leaves[i]
            info = torch.finfo(x.dtype)
            for kind, value in edge_values(x.detach().float().cpu().numpy(), float(info.max), seed, float(info.tiny),
                                           kinds):
                replaced = iter([torch.from_numpy(value).to(dtype=x.dtype, device=x.device)])
                position = iter(range(len(leaves)))
                variants.append((f"edge-{kind}-in{i}", tuple(_map(
                    tuple(inputs), lambda t: next(replaced) if next(position) == i else t))))
        return variants

    @staticmethod
    def mixed_inputs(inputs: Sequence[Any], seed: int) -> tuple[Any, ...]:
        """`inputs` (a probe's at a shape of its own) with three rows in four of every floating input
        that has rows enough taken from the row-wise edges (`kgate.backends.base.mixed_rows`)."""
        def mix(t: Any) -> Any:
            if not _edged(t):
                return t
            info = torch.finfo(t.dtype)
            value = mixed_rows(t.detach().float().cpu().numpy(), float(info.max), seed, float(info.tiny))
            return torch.from_numpy(value).to(dtype=t.dtype, device=t.device)

        return tuple(_map(tuple(inputs), mix))

    # -- the process's settings and surface --------------------------------------------------
    @staticmethod
    def settings() -> dict[str, Any]:
        """torch's process-wide settings a candidate could change for every later call, the
        reference's included: the default dtype, matmul precision, determinism, threads, grad
        mode, the backends' flags."""
        found: dict[str, Any] = {
            "default_dtype": str(torch.get_default_dtype()),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "num_threads": str(torch.get_num_threads()),
            "grad_enabled": torch.is_grad_enabled(),
            "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET", ""),
        }
        for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
            found[f"cuda.matmul.{name}"] = getattr(torch.backends.cuda.matmul, name, None)
        found["cudnn.allow_tf32"] = torch.backends.cudnn.allow_tf32
        found["cudnn.deterministic"] = torch.backends.cudnn.deterministic
        found["cudnn.benchmark"] = torch.backends.cudnn.benchmark
        # compared by identity (kgate.verify.watch): each text the very object it was
        return {k: sys.intern(v) if isinstance(v, str) else v for k, v in found.items()}

    @classmethod
    def restore_settings(cls, before: dict[str, Any]) -> None:
        """Each setting that differs from `before` set back, one by one (one that cannot be set
        does not keep the others from it). Only what changed is touched: setting determinism
        imports torch's compiler stack (2 s), which an unchanged setting never needs."""
        now = cls.settings()
        setters: dict[str, Callable[[Any], None]] = {
            "default_dtype": lambda v: torch.set_default_dtype(getattr(torch, v.split(".")[-1])),
            "float32_matmul_precision": torch.set_float32_matmul_precision,
            "deterministic_algorithms": torch.use_deterministic_algorithms,
            "num_threads": lambda v: torch.set_num_threads(int(v)),
            "grad_enabled": torch.set_grad_enabled,
            "TRITON_INTERPRET": lambda v: os.environ.__setitem__("TRITON_INTERPRET", v),
            "cudnn.allow_tf32": lambda v: setattr(torch.backends.cudnn, "allow_tf32", v),
            "cudnn.deterministic": lambda v: setattr(torch.backends.cudnn, "deterministic", v),
            "cudnn.benchmark": lambda v: setattr(torch.backends.cudnn, "benchmark", v),
        }
        for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
            setters[f"cuda.matmul.{name}"] = lambda v, name=name: setattr(torch.backends.cuda.matmul, name, v)
        for key, value in before.items():
            if key in setters and value is not None and now.get(key) != value:
                with contextlib.suppress(Exception):
                    setters[key](value)

    @staticmethod
    def reference_lookups(problem: Any) -> list[tuple[str, Any]]:
        """What an eager torch reference looks up at every call, to be read before each of its
        timed calls: torch's op namespaces, `torch.Tensor`, `nn.Module` and its module (its call
        path, hooks), every `torch.nn` module the reference's classes come from, and the
        reference's own module and classes. (torch's C types cannot be set from Python.)"""
        import torch.nn.functional as functional
        import torch.nn.modules.module as module_py

        spaces: dict[str, Any] = {
            "torch": torch, "torch.Tensor": torch.Tensor, "torch.nn.functional": functional, "torch.linalg": torch.linalg,
            "torch.special": torch.special, "torch.fft": torch.fft, "torch.nn.Module": module_py.Module,
            "torch.nn.modules.module": module_py,
        }
        own = problem.module
        spaces[own.__name__] = own
        for value in list(vars(own).values()):
            if isinstance(value, type) and value.__module__ == own.__name__:
                for cls in value.__mro__[:-1]:  # its bases too (nn.Module's own layers: Linear, ReLU, ...)
                    spaces.setdefault(f"{cls.__module__}.{cls.__qualname__}", cls)
                    mod = sys.modules.get(cls.__module__)
                    if mod is not None and cls.__module__.startswith("torch"):
                        spaces.setdefault(cls.__module__, mod)
        return list(spaces.items())

    @staticmethod
    def watched_modules(depth: str = "public") -> list[str]:
        """torch's and Triton's surface a candidate could patch, by depth: `hot`, what a call and
        its synchronization go through; `public`, the public op namespaces, the Tensor class and
        the interpreter's launcher; `deep`, every loaded triton and numpy module and torch's
        Python op layers."""
        if depth == "deep":
            prefixes = ("triton", "numpy", "torch.nn", "torch._tensor", "torch.functional", "torch.cuda",
                        "torch.random", "torch._refs", "torch._decomp")
            return [name for name, module in list(sys.modules.items())
                    if module is not None and (name in ("torch", "ml_dtypes") or name.startswith(prefixes))]
        hot = ("torch", "torch.cuda", "torch._tensor", "time", "triton.runtime.interpreter", "triton.runtime.jit")
        public = (*hot, "os", "random", "secrets", "threading", "hashlib", "pickle", "torch.nn", "torch.nn.functional",
                  "torch.nn.modules.module", "torch.nn.modules.linear", "torch.nn.modules.conv", "torch.linalg",
                  "torch.fft", "torch.special", "torch.functional", "torch.random", "triton", "triton.language",
                  "triton.language.core", "triton.language.standard", "numpy", "numpy.random", "numpy.linalg")
        return [name for name in (hot if depth == "hot" else public) if name in sys.modules]

    # -- timing -------------------------------------------------------------------------
    def warm_up(self) -> None:
        """One small op: torch starts its thread pools now, so a thread census taken after this
        sees only threads later code started. On a GPU also the CUDA context, the state torch
        fills in lazily once it exists (its cached device count, read by Triton's import among
        others) and Triton's driver: a snapshot taken after this sees only what later code
        changed, not the library finishing its own start."""
        with torch.inference_mode():
            (torch.ones(64, 64) @ torch.ones(64, 64)).sum().item()
        if not _CUDA:
            return
        torch.cuda.init()
        torch.cuda.device_count(), torch.cuda.current_device(), torch.cuda.get_device_properties(0)
        with torch.inference_mode():
            (torch.ones(64, 64, device="cuda") @ torch.ones(64, 64, device="cuda")).sum().item()
        with contextlib.suppress(Exception):
            from triton.runtime import driver

            driver.active.get_current_stream(driver.active.get_current_device())

    def compile_timed(self, fn: Callable[..., Any], inputs: Sequence[Any], clock: Callable[[], int],
                      flush: Callable[[], None] | None = None, *, keep_outputs: bool = True,
                      eager: bool = False, precompiled: ProgramPrint | None = None,
                      remake: Callable[[int], Sequence[Any]] | None = None) -> TorchTimedCall:
        """`fn` on these input buffers, called once untimed (torch's first call loads kernels and
        plans): that call's torch functions, in order, are its program (`program_sha256`). Torch
        compiles nothing ahead, so there is no `precompiled` program to take. `remake`: inputs
        from a seed (the reference's create_inputs), for timed calls on inputs with nothing
        floating to vary (`TorchTimedCall._fresh`)."""
        timed = TorchTimedCall(fn, inputs, clock, flush, keep_outputs, remake)
        timed.program_sha256 = self.timed_program(fn, inputs)
        return timed

    def timed_program(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> str | None:
        """The digest `compile_timed` gives what it times for `fn` on these inputs: the sha256 of
        the torch functions a call goes through, in order (`_graph_text`), after one call untimed
        (what a first call alone does, a workspace allocated once, an autotuner's trials, is not
        the program timed); None where the call fails. The checks take it too, so the timed process
        is held to the program they graded, both after a first call."""
        try:
            with _INFERENCE():
                fn(*inputs)
                _SYNC()
        except Exception:
            return None
        text = self._graph_text(fn, inputs)
        return hashlib.sha256(text.encode()).hexdigest() if text else None

    def program_fingerprint(self, problem: ProblemModule, dtype: str | None) -> ProgramPrint:
        """The torch functions the reference calls at its op-point, in order, with their shapes
        (one call on inputs of seed 0, before any candidate code exists): what its timed
        program must still be."""
        try:
            inputs, _ = self.create_inputs(problem, 0, dtype)
            text = self._graph_text(problem.entry, inputs)
        except Exception as exc:
            return ProgramPrint(None, f"the reference could not be run before the candidate was imported ({describe(exc)})")
        if not text:
            return ProgramPrint(None, "the reference's torch calls could not be recorded")
        return ProgramPrint(hashlib.sha256(text.encode()).hexdigest())

    def cache_flusher(self) -> tuple[Callable[[], None], str]:
        """On a GPU, a 256 MiB device buffer rewritten before every timed call (beyond any L2);
        on the CPU, a host buffer of 4x the L2 (see kgate.backends.base.cpu_flush_bytes)."""
        if _CUDA:
            size = 256 * 2**20
            buf = torch.empty(size // 4, dtype=torch.float32, device="cuda")

            def flush_gpu() -> None:
                buf.add_(1.0)
                _SYNC()

            return flush_gpu, f"L2 flush: a {size // 2**20} MiB device buffer rewritten before every timed call"
        return cpu_cache_flusher()

    def capture(self, fn: Callable[..., Any], inputs: Sequence[Any], folder: Path, calls: int = 3) -> list[str]:
        """Run `fn` under torch's profiler into `folder` (timing discarded): its operators and, on a
        GPU, its kernels, as a trace Perfetto opens (`perfetto_trace.json.gz`, Chrome's trace
        format, gzipped) and a table of the operators' times (`operators.txt`); the files written
        (these two, written afresh: a reused folder's earlier ones are replaced, and nothing else
        in it, the candidate's own files included, is named)."""
        from torch.profiler import ProfilerActivity, profile

        folder.mkdir(parents=True, exist_ok=True)
        activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if _CUDA else [])]
        with torch.inference_mode():  # the candidate as it runs when timed: no buffers filled for it
            fn(*inputs)  # the first call (Triton's compile) is not in the trace
            _SYNC()
            with profile(activities=activities, record_shapes=True) as prof:
                for _ in range(calls):
                    fn(*inputs)
                    _SYNC()
        trace, table = "perfetto_trace.json.gz", "operators.txt"
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            plain = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(plain))
            with plain.open("rb") as src, gzip.open(Path(tmp) / trace, "wb") as dst:
                shutil.copyfileobj(src, dst)
            order = "self_device_time_total" if _CUDA else "self_cpu_time_total"
            (Path(tmp) / table).write_text(prof.key_averages().table(sort_by=order, row_limit=40) + "\n")
            for name in (trace, table):
                os.replace(Path(tmp) / name, folder / name)
        return [table, trace]

    def output_spec(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> list[tuple[tuple[int, ...], str]]:
        """(shape, dtype) of each output leaf, from one call of `fn` (the reference)."""
        with torch.inference_mode():
            out = fn(*inputs)
        return [(tuple(t.shape), str(t.dtype).removeprefix("torch.")) if isinstance(t, torch.Tensor)
                else ((), type(t).__name__) for _, t in _flatten(out)]

    def poison(self, spec: Sequence[tuple[tuple[int, ...], str]], copies: int = 2) -> None:
        """Buffers of the output's shapes filled with NaN (or the dtype's max) and freed: an
        output the candidate never writes lands on poison, not on a stale answer."""
        held = []
        for _ in range(copies):
            for shape, name in spec:
                dtype = getattr(torch, name, None)
                if isinstance(dtype, torch.dtype):
                    held.append(_fill(_EMPTY["empty"](shape, dtype=dtype, device=self._device), "nan"))
        _SYNC()
        del held

    @staticmethod
    def dispatch_probe(inputs: Sequence[Any]) -> Callable[..., Any]:
        """A real, empty dispatch on the same buffers: one add on one element of the first tensor."""
        def probe(*args: Any) -> Any:
            first = next(t for _, t in _flatten(args) if isinstance(t, torch.Tensor))
            return first.reshape(-1)[:1] + 1
        return probe

    @staticmethod
    def tpu_peaks() -> None:
        return None

    # -- inspection ---------------------------------------------------------------------
    def _launches(self, fn: Callable[..., Any], inputs: Sequence[Any], act: Act | None = None,
                  keep_values: bool = False) -> tuple[Any, list[Launch]]:
        with _recording(_Recorder(act, keep_values)) as recorder:
            out = self._call(fn, inputs)
        return out, recorder.launches

    def interprets(self, fn: Callable[..., Any], inputs: Sequence[Any], eager: bool = False) -> bool:
        """Whether running `fn` here runs an interpreter: an authored Triton kernel on a machine
        without a GPU; plain torch runs compiled ATen code, and the CPU is the device."""
        if not self.interpreted:
            return False
        if id(fn) not in self._launched:  # never run here: say so by its source, never by running it (the
            return _imports_triton(fn)    # reference is never run in the candidate's process)
        return self._launched[id(fn)]

    def inspect(self, fn: Callable[..., Any], inputs: Sequence[Any], *, ablate: bool = True,
                moved_above: float = 0.0) -> ProgramFacts:
        """The authored Triton launches of one call, each kernel's reach (perturbing what its
        launches wrote moves an output) and whether it reads the inputs (its operands change
        when the inputs do)."""
        base, launches = self._launches(fn, inputs)
        base_host = self.to_host(base)
        audited = base_host.sha256()  # before the candidate runs again
        base_leaves = base_host.leaves
        names = list(dict.fromkeys(launch.name for launch in launches))
        consistency = self._as_graded(fn, inputs, names, base_host)
        shifted = self.perturbed_inputs(inputs)
        _, moved_launches = self._launches(fn, shifted) if shifted is not None else (None, None)
        sites = []
        for name in names:
            mine = [i for i, launch in enumerate(launches) if launch.name == name]
            outs = [self.to_host(self._launches(fn, inputs, _perturb({name}, kind))[0]).leaves for kind in _PERTURBATIONS]
            reaches = any(bool(np.any(m > 0)) for m in output_moves(base_leaves, outs))
            if moved_launches is None:
                reads = True
            else:
                theirs = [launch.read_sha256 for launch in moved_launches if launch.name == name]
                reads = [launches[i].read_sha256 for i in mine] != theirs
            sites.append(KernelSite(f"triton:{name}", name, reaches, True, reads))
        ablation = Ablation(False, "no kernel in program")
        if ablate and names:
            moves, _ = self.kernel_experiments(fn, inputs)
            if not isinstance(moves, str):
                ablation = count_moved(moves.leaves, moved_above)
        listing = "\n".join(f"launch {i}: {launch.name} wrote "
                            + ", ".join(f"{int(m.sum())} elements of tensor argument {a}" for a, m in launch.written.items())
                            for i, launch in enumerate(launches))
        return ProgramFacts(
            platform=self.platform,
            kernel_sites=tuple(sites),
            program_text=listing or "no authored Triton launch",
            compiled_text=self.compiled_text(fn, inputs) if not launches else "",
            custom_call_targets=(),
            ablation=ablation,
            kernel_kind="Triton launch",
            graded_consistency=consistency,
            audited_sha256=audited,
            arithmetic=self.arithmetic(fn, inputs) if launches else None,
        )

    def _as_graded(self, fn: Callable[..., Any], inputs: Sequence[Any], names: Sequence[str], base: HostTree) -> str:
        """"" when the audit's run is the graded runs' computation: every graded run launched
        the kernels the audit sees, and on the same inputs it gave the same outputs; else what
        differs (a candidate that launches its kernel only when audited, or only on inputs it
        has seen before)."""
        earlier = self._graded_outputs.get((id(fn), self.digest(inputs)))
        return graded_differences(names, self._graded.get((id(fn), _shapes(inputs)), []), earlier is not None and not all(
            np.array_equal(a, b, equal_nan=True) for a, b in zip(earlier.leaves, base.leaves)))

    def kernel_experiments(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[HostTree | str, dict[str, HostTree] | str]:
        """The ablation (per output element, how far it moved when the elements every authored
        launch wrote were perturbed) and the bypass (the outputs with those elements replaced by
        what a stand-in that does no work leaves: zeros, or an operand passed through)."""
        moves, _ = self.ablation(fn, inputs)
        if isinstance(moves, str):
            return moves, "no authored Triton kernel to replace"
        made = [moves.sha256()]  # each record's digest as it is made: the candidate runs again after it
        bypassed = {"zeros": self.to_host(self._launches(fn, inputs, _stand_in("zeros"))[0])}
        made.append(bypassed["zeros"].sha256())
        for k in range(_PASSTHROUGHS):  # every launch's k-th operand of its output's size, passed through
            used: list[bool] = []
            tree = self.to_host(self._launches(fn, inputs, _stand_in("passthrough", k, used))[0])
            if not any(used):
                break
            bypassed["passthrough" if k == 0 else f"passthrough-{k + 1}"] = tree
            made.append(tree.sha256())
        if [moves.sha256(), *(tree.sha256() for tree in bypassed.values())] != made:
            raise RuntimeError("the ablation's or the bypass's record changed while the candidate ran again: something "
                               "in its process rewrote kgate's copy")
        return moves, bypassed

    def ablation(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[HostTree | str, str]:
        """Per output element, how far it moved when the elements every authored launch wrote
        were perturbed (why not, as a string, where nothing was launched); and the digest of the
        unperturbed run's outputs, which on a graded probe's inputs must be that run's."""
        base, launches = self._launches(fn, inputs)
        base_host = self.to_host(base)
        audited = base_host.sha256()  # before the candidate runs again
        if not launches:
            return "no authored Triton kernel launched", audited
        names = {launch.name for launch in launches}
        perturbed = [self.to_host(self._launches(fn, inputs, _perturb(names, kind))[0]).leaves for kind in _PERTURBATIONS]
        if base_host.sha256() != audited:
            raise RuntimeError("the unperturbed run's outputs changed while the candidate ran again: something in its "
                               "process rewrote kgate's copy")
        moves = output_moves(base_host.leaves, perturbed)
        return HostTree("moves", tuple(f"[{i}]" for i in range(len(moves))), tuple(moves)), audited

    def transplant(self, fn: Callable[..., Any], inputs: Sequence[Any], other: Sequence[Any]) -> HostTree | str:
        """`fn` run on `inputs` with every authored launch's written elements replaced by what
        the same launch wrote on `other`: where the kernels carry the answer, the output is
        `other`'s answer (graded by the parent against `other`'s reference). A reason string
        when the launches do not line up between the two runs."""
        _, donor = self._launches(fn, other, keep_values=True)
        if not donor:
            return "no authored Triton kernel launched"

        def act(launch: Launch, tensors: list[torch.Tensor], index: int) -> None:
            given = donor[index] if index < len(donor) else None
            if given is None or given.name != launch.name:
                raise _Misaligned(f"launch {index} ({launch.name}) has no counterpart in the run on the other probe")
            for i, mask in launch.written.items():
                value = given.values.get(i)
                if value is None or value.shape != tensors[i].shape:
                    raise _Misaligned(f"launch {index} ({launch.name}) wrote argument {i} in one run only")
                tensors[i].copy_(torch.where(mask | given.written[i], value, tensors[i]))

        try:
            out, launches = self._launches(fn, inputs, act)
        except _Misaligned as exc:
            return str(exc)
        if len(launches) != len(donor):
            return f"the two runs launched {len(launches)} and {len(donor)} kernels"
        return self.to_host(out)
    def perturbed_inputs(self, inputs: Sequence[Any]) -> tuple[Any, ...] | None:
        """The inputs with every floating tensor moved by seeded noise; None when none is floating."""
        gen = torch.Generator().manual_seed(12345)
        seen: list[bool] = []

        def move(t: Any) -> Any:
            if isinstance(t, torch.Tensor) and t.dtype in _FLOATING:
                seen.append(True)
                noise = torch.randn(t.shape, generator=gen, dtype=torch.float32)
                return (t.float() + noise.to(t.device) * (t.float().std() + 1)).to(t.dtype)
            return t

        moved = tuple(_map(x, move) for x in inputs)
        return moved if seen else None

    def _graph_text(self, fn: Callable[..., Any], inputs: Sequence[Any], drop_identities: bool = False) -> str:
        """The torch functions one call goes through, in order, with their tensor arguments'
        shapes and dtypes (recorded by a `TorchFunctionMode`): what a `rewrite` candidate's
        program is compared with. "" where the call fails."""
        from torch.overrides import TorchFunctionMode

        calls: list[str] = []

        class Calls(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                given = [t for _, t in _flatten((args, kwargs or {})) if isinstance(t, torch.Tensor)]
                out = func(*args, **(kwargs or {}))
                # a call that hands back one of its inputs' values unchanged (x + 0, a copy, a
                # contiguous view) computes nothing: it is not part of the program compared
                if drop_identities and isinstance(out, torch.Tensor) and any(
                        t.shape == out.shape and t.dtype == out.dtype and torch.equal(t, out) for t in given):
                    return out
                shapes = [f"{t.dtype}{list(t.shape)}" for t in given]
                calls.append(f"{getattr(func, '__qualname__', getattr(func, '__name__', str(func)))}({', '.join(shapes)})")
                return out

        try:
            with torch.inference_mode(), _filled_buffers("nan"), Calls():
                fn(*inputs)
        except Exception:
            return ""
        return "\n".join(calls)

    def compiled_text(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> str:
        """The ATen operators one call of `fn` runs (what a `rewrite` is compared by), recorded
        below torch's Python entry points (a `TorchDispatchMode`), so `x.softmax(1)`,
        `torch.softmax(x, 1)`, `F.softmax(x, 1)` and `torch.special.softmax(x, 1)` are the one
        operator they run (a composite operator is recorded as those it runs); named by the
        operator, not its overload, and by the tensors it reads, not one it only writes
        (`_softmax(x, out=o)` is `_softmax(x)`). Left out, as computing nothing from the inputs: a
        view; a call that makes a tensor from no tensor (empty, zeros, full, arange); a call that
        hands back one of its inputs' values unchanged (x + 0, a copy); a call that reads nothing
        derived from the inputs (arithmetic on constants); a call whose result never reaches the
        output (dead code), followed back through the storages each call reads and writes. Raises
        when nothing can be recorded (never an empty program that "differs")."""
        calls: list[_Call] = []
        derived: set[int] = {p for p in (_storage(t) for _, t in _flatten(tuple(inputs)) if isinstance(t, torch.Tensor))
                             if p}

        def record(func: Any, args: Any, kwargs: Any, out: Any, before: list[torch.Tensor]) -> None:
            given = [t for _, t in _flatten((args, kwargs)) if isinstance(t, torch.Tensor)]
            name = getattr(getattr(func, "overloadpacket", func), "__name__", str(func))
            if not given or getattr(func, "is_view", False) or _value_free(name):
                return  # made from sizes (and at most a tensor's shape), or a view: no computation
            only_written, in_place = _written_arguments(func, args, kwargs)
            read = [t for t in given if not any(t is w for w in only_written)]
            reads = {p for p in map(_storage, read) if p}
            if not reads & derived:
                return  # nothing it reads comes from the inputs: arithmetic on constants
            results = [t for _, t in _flatten(out) if isinstance(t, torch.Tensor)]
            written = [*results, *only_written]
            writes = {p for p in map(_storage, written) if p}
            derived.update(writes)
            # what the call was handed, as it was handed: an in-place operand by its copy from before
            unchanged = [t for t in read if not any(t is w for w in in_place)] + before
            shown = not (results and all(any(t.shape == r.shape and t.dtype == r.dtype and torch.equal(t, r)
                                             for t in unchanged) for r in results))
            whole = {_storage(t) for t in written if _covers_its_storage(t)} - {0}
            calls.append(_Call(f"{name}({', '.join(f'{t.dtype}{list(t.shape)}' for t in read)})", reads, writes,
                               shown, whole))

        try:
            result = _aten_operators(fn, inputs, record, before_writes=True)
        except Exception:
            calls.clear()
            result = None
        live = {p for p in (_storage(t) for _, t in _flatten(result) if isinstance(t, torch.Tensor)) if p}
        for call in reversed(calls):  # back from the output: a call is live when it writes a storage read later
            if call.writes & live:
                call.live = True
                live = (live - call.whole) | call.reads  # a storage written in part is still read from before
        ops = [call.text for call in calls if call.live and call.shown]
        if not ops:
            raise RuntimeError("the reference's torch operators could not be recorded")
        return "\n".join(ops)

    def arithmetic(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> Arithmetic:
        """The work one call of `fn` does in torch's own operators, outside any Triton kernel, as a
        JAX program's is counted (`jaxpr_flow`): the operators torch's flop counter has a formula
        for (matmuls, convolutions, attention) by it; a reduction (`sum`, `amax`, `_softmax`) one
        operation per element it reads; any other operator one per element it writes; operators
        that only move, view, convert or allocate data (`TORCH_DATA_MOVEMENT`), none. Each
        composite is taken as the operators it runs. What this weighs is the answer computed by
        torch around a kernel that only negates, casts or applies an epilogue to it.
        `kernel_calls`: authored launches."""
        from torch.utils.flop_counter import flop_registry

        total = [0.0]
        recorder = _Recorder()

        launches_seen = [0]

        def count(func: Any, args: Any, kwargs: Any, out: Any, _before: list[torch.Tensor]) -> None:
            if recorder.launching:  # a kernel's launch: the recorder's own copies and comparisons
                return
            launched, launches_seen[0] = len(recorder.launches) > launches_seen[0], len(recorder.launches)
            namespace = str(getattr(func, "namespace", "aten"))
            if namespace != "aten" and launched:
                return  # a custom operator an authored kernel ran inside (`torch.library.custom_op`): the kernel's work
            packet = getattr(func, "overloadpacket", None)
            formula = flop_registry.get(packet)
            if formula is not None:
                total[0] += float(formula(*args, **kwargs, out_val=out))
                return
            total[0] += _elementwise_ops(str(getattr(packet, "__name__", func)), args, out, namespace)

        try:
            with _recording(recorder):
                _aten_operators(fn, inputs, count)
        except Exception as exc:  # noqa: BLE001 - a program that cannot be counted says why
            return Arithmetic(0.0, 0, error=f"not counted ({describe(exc, 160)})")
        return Arithmetic(total[0], len(recorder.launches))

    def kernel_platform(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> str | None:
        """No lowering for a device from shapes is done for Triton kernels yet: None."""
        return None


@dataclass
class _Call:
    """One ATen call as `compiled_text` follows it: its text, the storages it reads and writes."""

    text: str
    reads: set[int]
    writes: set[int]
    shown: bool
    whole: set[int]  # the storages it writes in full (what they held before is not read after)
    live: bool = False


def _covers_its_storage(t: torch.Tensor) -> bool:
    """Whether a tensor spans its whole storage, contiguously (a write to it replaces all of it)."""
    try:
        spans = t.numel() * t.element_size() == t.untyped_storage().nbytes()
        return t.is_contiguous() and t.storage_offset() == 0 and spans
    except Exception:  # noqa: BLE001 - a tensor without storage covers nothing
        return False


def _storage(t: torch.Tensor) -> int:
    """The address of a tensor's storage (a view shares its base's); 0 for one without memory."""
    try:
        return int(t.untyped_storage().data_ptr())
    except Exception:  # noqa: BLE001 - a tensor without storage (meta, sparse) is followed by nothing
        return 0


def _written_arguments(func: Any, args: Any, kwargs: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The tensors an ATen operator writes (its schema marks them): those it only writes (its
    `out=` arguments), and those it reads and writes (an in-place operator's `self`, which after
    the call no longer holds the value it was given)."""
    only: list[torch.Tensor] = []
    in_place: list[torch.Tensor] = []
    for i, arg in enumerate(getattr(getattr(func, "_schema", None), "arguments", ())):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        kept = only if arg.name.startswith("out") else in_place
        kept.extend(t for _, t in _flatten(value) if isinstance(t, torch.Tensor))
    return only, in_place


def _aten_operators(fn: Callable[..., Any], inputs: Sequence[Any], visit: Callable[..., None],
                    before_writes: bool = False) -> Any:
    """Call `fn` once (inference mode, fresh buffers NaN-filled, synchronized) and hand `visit`
    each ATen operator it runs, below torch's Python entry points (a `TorchDispatchMode`):
    (operator, args, kwargs, result, and with `before_writes` a copy of each operand it writes in
    place, taken before the call, else []); returns what `fn` returned. A composite operator
    (special_softmax, linear, matmul) is taken as the operators it runs, so two spellings of one
    computation read alike."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Operators(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:  # no dynamo wrapper: its import (2 s) rebinds torch's functions
            return False

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd"):
                with self:
                    done = func.decompose(*args, **kwargs)
                if done is not NotImplemented:
                    return done
            before = [w.clone() for w in _written_arguments(func, args, kwargs)[1]] if before_writes else []
            out = func(*args, **kwargs)
            visit(func, args, kwargs, out, before)
            return out

    with torch.inference_mode(), _filled_buffers("nan"), Operators():
        out = fn(*inputs)
        _SYNC()
    return out


# ATen operators that move, view, relabel, convert or allocate data and do no arithmetic: no work
# (as `jaxpr_flow.DATA_MOVEMENT` for a JAX program). Their in-place forms (`copy_`) too. A gather or an
# index is not among them: a table read per element is work, as on JAX.
TORCH_DATA_MOVEMENT = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "alias", "as_strided", "expand", "expand_as", "view_as",
    "permute", "transpose", "t", "squeeze", "unsqueeze", "slice", "select", "narrow", "split", "split_with_sizes",
    "unbind", "chunk", "unfold", "diagonal", "movedim", "flatten", "unflatten", "clone", "copy", "_to_copy", "to",
    "contiguous", "detach", "lift_fresh", "lift_fresh_copy", "cat", "stack", "constant_pad_nd", "pad", "flip", "roll",
    "repeat", "tile", "arange", "linspace", "scalar_tensor", "_local_scalar_dense", "item", "empty", "empty_like",
    "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "fill", "zero", "resize", "set",
    "rand", "randn", "randint", "rand_like", "randn_like", "bernoulli", "normal", "uniform", "view_as_real",
    "view_as_complex", "real", "imag", "conj", "resolve_conj", "resolve_neg", "_conj", "_neg_view", "clamp_min_grad",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_nonzero", "_assert_async", "record_stream",
})
# ATen operators whose work is one operation per element they read (reductions, scans).
TORCH_PER_INPUT_ELEMENT = frozenset({
    "sum", "mean", "amax", "amin", "max", "min", "prod", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
    "logcumsumexp", "all", "any", "count_nonzero", "nansum", "aminmax", "topk", "sort", "kthvalue", "median", "mode",
})
# Fused ATen operators, and the operations per element they read, as the steps a JAX program of
# them counts: a softmax is a max, a subtraction, an exp, a sum and a division.
TORCH_FUSED = {
    "_softmax": 5, "_log_softmax": 5, "softmax": 5, "log_softmax": 5, "logsumexp": 4, "var": 3, "std": 3,
    "var_mean": 3, "std_mean": 3, "norm": 2, "linalg_vector_norm": 2, "native_layer_norm": 8,
    "native_group_norm": 8, "native_batch_norm": 8, "_native_batch_norm_legit": 8,
    "_native_batch_norm_legit_no_training": 8,
}


def _elementwise_ops(name: str, args: Any, out: Any, namespace: str = "aten") -> float:
    """One operator's work, where torch's flop counter has no formula for it: none for data
    movement; one per floating element read for a reduction (the steps of a fused one,
    `TORCH_FUSED`, for each); one per floating element written otherwise. Integer and boolean
    results (masks, indices, lengths) are bookkeeping, not arithmetic. An operator outside ATen (a
    custom one) is taken by its name in no table of torch's: one per floating element written."""
    floating = [t for _, t in _flatten(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if namespace != "aten":
        return float(sum(t.numel() for t in floating))
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name  # an in-place form: `neg_`
    if base in TORCH_DATA_MOVEMENT:
        return 0.0
    if base in TORCH_PER_INPUT_ELEMENT or base in TORCH_FUSED:
        first = next((t for _, t in _flatten(args) if isinstance(t, torch.Tensor)), None)
        if first is None or not first.is_floating_point():
            return 0.0
        return float(first.numel()) * TORCH_FUSED.get(base, 1)
    return float(sum(t.numel() for t in floating))


def _value_free(op: str) -> bool:
    """An ATen operator whose result depends on no input's values: it allocates or fills
    (`empty_like`, `new_zeros`, `fill_`), whatever tensor it was given."""
    base = op.rstrip("_")
    return base.endswith("_like") or base.startswith("new_") or base in {
        "empty", "empty_strided", "zeros", "ones", "full", "fill", "zero", "resize", "set"}


class _Misaligned(Exception):
    """Two runs' launches do not correspond one to one."""


def _perturb(names: set[str], kind: str) -> Act:
    """After each launch of these kernels, every element it wrote moved: `flip` (-2x + 1) or
    `shift` (x + 3(|x| + 1)), the two directions the JAX side's ablation uses, so that an
    element behind a clamp (a ReLU) moves under one of them; or `scale`, each element times its
    own factor between 1.5 and 2.5 (hashed from its position and its argument's), so that a ratio
    of two of a kernel's results (an element over its row's sum, where one element is the whole
    sum) moves where the affine two move both alike. Only the elements it wrote: what the rest
    of the buffer holds was computed elsewhere."""
    def act(launch: Launch, tensors: list[torch.Tensor], index: int) -> None:
        if launch.name not in names:
            return
        for i, mask in launch.written.items():
            t = tensors[i]
            if (t.dtype.is_floating_point or t.dtype.is_complex) and kind == "scale":
                step = (torch.arange(t.numel(), dtype=torch.int32, device=t.device) % 1024 * 40503 + 389 * i) % 1024
                moved = t * (1.5 + step.to(t.real.dtype) / 1024).reshape(t.shape)
            elif t.dtype.is_floating_point or t.dtype.is_complex:
                moved = t * -2 + 1 if kind == "flip" else t + (t.abs() + 1) * 3
            elif t.dtype == torch.bool:
                moved = ~t
            else:
                moved = t + (1 if kind == "flip" else -7)
            t.copy_(torch.where(mask, moved, t))
    return act


_PERTURBATIONS = ("flip", "shift", "scale")


_PASSTHROUGHS = 4  # operands tried as what a copying kernel passes through


def _stand_in(kind: str, k: int = 0, used: list[bool] | None = None) -> Act:
    """After each launch, the elements it wrote replaced by what a kernel that does no work
    leaves: zeros, or (`passthrough`) its k-th operand it did not write, of the output's size
    and dtype (reshaped to it), passed through; `used` records whether one existed."""
    def act(launch: Launch, tensors: list[torch.Tensor], index: int) -> None:
        for i, mask in launch.written.items():
            t = tensors[i]
            sources = [s for j, s in enumerate(tensors)
                       if j not in launch.written and s.numel() == t.numel() and s.dtype == t.dtype]
            source = sources[k].reshape(t.shape) if kind == "passthrough" and len(sources) > k else None
            if used is not None:
                used.append(source is not None)
            t.copy_(torch.where(mask, torch.zeros_like(t) if source is None else source, t))
    return act


VARIED = (2.0 ** -7, 2.0 ** -4)  # each element of a timed call's floating inputs times 1 plus a draw from this range


def _varied(t: Any, draw: int, index: int) -> Any:
    """`t` with each element times its own 1 + a draw from `VARIED` (from a generator seeded with
    `draw` and the input's place: the same tensor again for the same draw), in new memory: wide
    enough to move a bfloat16 value, close enough to 1 to keep the problem the one graded; no one
    number relates two calls' inputs, so no earlier answer can be rescaled into this one's."""
    generator = torch.Generator(device=t.device).manual_seed(draw * 1009 + index)
    factors = torch.rand(t.shape, generator=generator, device=t.device, dtype=torch.float32)
    with _NO_GRAD():  # a plain tensor (an inference one has no version counter to read)
        return (t * (1.0 + VARIED[0] + (VARIED[1] - VARIED[0]) * factors)).to(t.dtype)


class TorchTimedCall:
    """One leg on fixed input buffers, each call synchronized. On the CPU torch returns when the
    work is done, and a call is timed by the host clock. On a GPU a call is timed by a CUDA event
    pair on the current stream (the device's own time from the call's first launch to its last);
    the host clock then reads when that stream finished and when a device-wide synchronize
    returned, and the difference, kept per call in `escaped_ns`, is work the call left running on
    another stream, outside the events' window (`stream_quiet` grades it).

    `clock` is the perf_counter_ns kgate bound before any candidate code was imported, like the
    event methods. The candidate's last two outputs are kept alive so a new output cannot reuse
    their storage (an answer cached by pointer would otherwise look fresh); the reference's are
    dropped at once, so none of its answers is reachable while the candidate runs."""

    stream_timed = _CUDA  # each call's `escaped_ns` is recorded, and stream_quiet must grade them
    method = ("a CUDA event pair on the current stream per call (device time), then a device-wide synchronize; "
              "host time to the device going idle after the stream finished checked (stream_quiet)"
              if _CUDA else "each call timed by the host clock (torch on the CPU returns when its work is done)")

    def __init__(self, fn: Callable[..., Any], inputs: Sequence[Any], clock: Callable[[], int],
                 flush: Callable[[], None] | None, keep_outputs: bool,
                 remake: Callable[[int], Sequence[Any]] | None = None) -> None:
        self._fn, self._inputs, self._clock, self._flush, self._keep = fn, tuple(inputs), clock, flush, keep_outputs
        self._alive: list[Any] = []
        self._floating = any(isinstance(t, torch.Tensor) and t.is_floating_point() for _, t in _flatten(self._inputs))
        self._remake = None if self._floating else remake
        if self._remake is not None and TorchBackend.digest(self._remake(1)) == TorchBackend.digest(self._remake(2)):
            self._remake = None  # its create_inputs ignores the seed: nothing to vary the calls with
        # how each call's inputs differ from every other call's (`timed_inputs_vary` reports it)
        self.varied = ("each floating input's elements times their own drawn factor, in new memory"
                       if self._floating else "every input made afresh by the reference's create_inputs from a drawn "
                       "seed" if self._remake is not None else "")
        self.last_draw: int | None = None  # the draw that made the last timed call's inputs
        self.escaped_ns: list[int] = []  # per timed call on a GPU (the list itself is never rebound)
        self.faults: list[int] = []  # per timed call: the page faults across its window (never rebound)
        self.program_sha256: str | None = None
        self.compiled_sha256: str | None = None  # torch compiles nothing ahead: the program is its calls

    def _fresh(self, draw: int) -> tuple[Any, ...]:
        """The inputs for one call, made outside the timed window from `draw`: each floating tensor's
        elements times their own factor (`_varied`), in new memory; without a floating input, every
        input made afresh from the seed `draw` (`remake`, the reference's create_inputs), where one
        was given; the others as new tensor objects on their buffers, version counters moved on.
        Every call sees values no earlier call saw, in memory no earlier call used: an answer cached
        by the input's identity, buffer, version or content, or worked out from the last call's, is
        never this call's (`output(draw)` makes the same inputs again, to grade what it returned)."""
        if self._remake is not None:
            return tuple(self._remake(draw))
        place = iter(range(1 << 30))

        def fresh(t: Any) -> Any:
            if not isinstance(t, torch.Tensor):
                return t
            if t.is_floating_point():
                return _varied(t, draw, next(place))
            with contextlib.suppress(Exception):  # a tensor without a version counter keeps none
                _BUMP(t)
            return t.detach()
        return tuple(_map(a, fresh) for a in self._inputs)

    def __call__(self, take: Callable[[Callable[[], HostTree]], None] | None = None) -> int:
        """One timed call on fresh inputs; `take`, where given, is handed a reader of its output (on
        the host) the moment the window closes, before anything is let go (`timed_take`)."""
        self.last_draw = draw = kclock.draw_seed()
        args = self._fresh(draw)
        if self._flush is not None:  # after the inputs are made: the call starts on cold caches, as before
            self._flush()
        _SYNC()  # the inputs made (on a GPU) before the window opens
        clock = self._clock
        if _CUDA:
            start, end = _EVENT(enable_timing=True), _EVENT(enable_timing=True)
            with _INFERENCE():
                faults = _FAULTS()
                t0 = clock()
                _EVENT_RECORD(start)
                out = self._fn(*args)
                _EVENT_RECORD(end)
                _EVENT_SYNC(end)
                t1 = clock()
                _SYNC()
                t2 = clock()
                self.faults.append(_FAULTS() - faults)
            timed_take(take, out, TorchBackend.to_host)
            self.escaped_ns.append(t2 - t1)
            elapsed = int(_EVENT_ELAPSED(start, end) * 1e6)
            if self._keep:
                self._alive = [out, *self._alive[:1]]
            return min(elapsed, t1 - t0)  # the device's time can only be shorter than the host's around it
        with _INFERENCE():
            faults = _FAULTS()
            t0 = clock()
            out = self._fn(*args)
            _SYNC()
            t1 = clock()
            self.faults.append(_FAULTS() - faults)
        timed_take(take, out, TorchBackend.to_host)
        if self._keep:
            self._alive = [out, *self._alive[:1]]
        return t1 - t0

    def output(self, draw: int | None = None) -> HostTree:
        """An untimed call's output, on the inputs as given, or as the timed call of `draw` saw them."""
        args = self._inputs if draw is None else self._fresh(draw)
        with _INFERENCE():
            out = self._fn(*args)
            _SYNC()
        return TorchBackend.to_host(out)
