"""The JAX adapter: create inputs (with seed injection), jit, synchronize, run on the CPU
with Pallas TPU kernels in interpret mode, trace, compile and inspect programs."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import logging
import re
import sys
import traceback
from pathlib import Path
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.interpreters import pxla
from jax._src.lib import hlo as _hlo, xla_client
from jax.experimental.pallas import tpu as pltpu

from kgate import clock as kclock
from kgate.backends import jaxpr_flow, pallas_grid, reorder, stablehlo_flow, widen
from kgate.backends.base import (
    Ablation,
    Arithmetic,
    DeviceInfo,
    Footprint,
    HostTree,
    KernelFailure,
    LoweredProgram,
    OutputCoverage,
    ProgramFacts,
    ProgramPrint,
    Skip,
    count_moved,
    cpu_cache_flusher,
    timed_take,
    edge_kinds,
    edge_values,
    inputs_failed,
    mixed_rows,
    leaves_sha256,
    output_moves as _moves,
    read_hand_over,
    fits,
    config_state_key,
    host_memory,
    sized_once,
    write_hand_over,
)
from kgate.errors import KgateError, describe
from kgate.problem.module import ProblemModule, config_set
from kgate.problem.oppoint import refuse_ineffective

# Settings jax keeps outside jax.config (context states a public function can set for good).
_CONTEXT_STATES = ("abstract_mesh_context_manager", "compute_on_context_manager", "device_context",
                   "mesh_context_manager", "pallas_tpu_interpret_mode_context_manager", "xla_metadata_context_manager")

# What a timed call goes through, bound when kgate is imported (before any candidate code):
# a candidate that rebinds jax.block_until_ready later changes nothing kgate times.
_SYNC = jax.block_until_ready
_FAULTS = kclock.page_faults  # bound before any candidate code exists, as the clocks are
_LEAVES = jax.tree_util.tree_leaves
# What kgate reads a compiled program through, bound here for the same reason: a candidate that
# rebinds a method of the executable or of its HLO module (they are settable) changes nothing
# kgate reads; the exact types, so a stand-in object built to answer for a program is refused.
_COMPILED = jax.stages.Compiled
_MESH_EXECUTABLE = pxla.MeshExecutable
_RUNTIME_EXECUTABLE = pxla.MeshExecutable.runtime_executable
_LOADED_EXECUTABLE = xla_client.LoadedExecutable
_HLO_MODULES = xla_client.LoadedExecutable.hlo_modules
_HLO_TEXT = _hlo.HloModule.to_string
_HLO_OPTIONS = _hlo.HloPrintOptions.short_parsable()
_HLO_OPTIONS.print_metadata = False  # source locations: kgate's own call sites differ from one compile to the next
_HLO_OPTIONS.print_large_constants = True
_CUSTOM_CALL_TARGET = re.compile(r'custom_call_target="([^"]+)"')
_DTYPES = {"float32", "float16", "bfloat16", "float64"}


class SeedInjection:
    """Derives every key a `create_inputs` makes from the requested seed.

    Modules that hard-code `jax.random.key(42)` (or numpy's `default_rng(42)`) get
    key(k) -> fold_in(key(k), seed): distinct literals stay distinct, and every seed
    yields different inputs. `hits` counts the intercepted calls.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.hits = 0

    @contextlib.contextmanager
    def active(self, module_globals: dict[str, Any]) -> Iterator[None]:
        originals: dict[str, Any] = {
            "key": jax.random.key,
            "PRNGKey": jax.random.PRNGKey,
            "default_rng": np.random.default_rng,
            "np_seed": np.random.seed,
        }

        def key(k: Any, *a: Any, **kw: Any) -> Any:
            self.hits += 1
            return jax.random.fold_in(originals["key"](k, *a, **kw), self.seed)

        def prng_key(k: Any, *a: Any, **kw: Any) -> Any:
            self.hits += 1
            return jax.random.fold_in(originals["PRNGKey"](k, *a, **kw), self.seed)

        def default_rng(k: Any = None, *a: Any, **kw: Any) -> Any:
            self.hits += 1
            return originals["default_rng"]([self.seed, *(np.atleast_1d(k).tolist() if k is not None else [])])

        def np_seed(k: Any = None) -> None:
            self.hits += 1
            originals["np_seed"]((int(k or 0) * 1_000_003 + self.seed) % 2**32)

        replacements = {
            originals["key"]: key,
            originals["PRNGKey"]: prng_key,
            originals["default_rng"]: default_rng,
            originals["np_seed"]: np_seed,
        }
        patched_globals = {
            name: value for name, value in module_globals.items() if _hashable(value) and value in replacements
        }
        jax.random.key, jax.random.PRNGKey = key, prng_key  # type: ignore[assignment]
        np.random.default_rng, np.random.seed = default_rng, np_seed  # type: ignore[assignment]
        for name, value in patched_globals.items():
            module_globals[name] = replacements[value]
        try:
            yield
        finally:
            jax.random.key, jax.random.PRNGKey = originals["key"], originals["PRNGKey"]  # type: ignore[assignment]
            np.random.default_rng, np.random.seed = originals["default_rng"], originals["np_seed"]  # type: ignore[assignment]
            module_globals.update(patched_globals)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def is_static(x: Any) -> bool:
    """An input with no array in it (a Python int, float, bool or string, a tuple of them,
    None): jit cannot trace it as a value, so it is a static argument."""
    arrays = (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct)
    return not any(isinstance(leaf, arrays) for leaf in jax.tree_util.tree_leaves(x))


def bind_static(fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """`fn` with its static inputs bound in place, and the array inputs left to pass: what jit,
    tracing and abstract evaluation see (a reference may use a Python int as a size)."""
    static = {i: x for i, x in enumerate(inputs) if is_static(x)}
    if not static:
        return fn, tuple(inputs)
    count = len(inputs)

    def bound(*arrays: Any) -> Any:
        rest = iter(arrays)
        return fn(*(static[i] if i in static else next(rest) for i in range(count)))

    for attr in ("__name__", "__qualname__"):
        if hasattr(fn, attr):
            setattr(bound, attr, getattr(fn, attr))
    return bound, tuple(x for i, x in enumerate(inputs) if i not in static)


def _flat(bound: tuple[Callable[..., Any], tuple[Any, ...]]) -> tuple[Any, ...]:
    """(fn, arrays) -> (fn, *arrays): what `jax.eval_shape` takes."""
    return (bound[0], *bound[1])


def _jit(fn: Callable[..., Any], eager: bool) -> Callable[..., Any]:
    """jit, except for a reference declared eager: that one runs op by op, as its module asks."""
    return fn if eager else jax.jit(fn)


def static_inputs(inputs: Sequence[Any]) -> list[str]:
    """The static inputs, as `[1] int 128`: recorded in the report."""
    return [f"[{i}] {type(x).__name__} {x!r}"[:80] for i, x in enumerate(inputs) if is_static(x)]


# Modules jax imports only once a program is lowered (a Pallas kernel's lowering rules, the
# interpreters it tries for each platform, the dialects a program's text is read with) and
# kgate's own that a leg imports late. A leg loads them with the library, before it trusts no
# bytecode (kgate.verify.leg.never_trust_bytecode): from source, on every lowering, they cost
# a second or more per leg.
LAZY_MODULES = (
    "jax._src.pallas.mosaic.pallas_call_registration",
    "jax._src.pallas.mosaic.interpret.interpret_pallas_call",
    "jax._src.pallas.mosaic_gpu.interpret.interpret_pallas_call",
    "jax._src.pallas.mosaic_gpu.core",
    "jax._src.pallas.mosaic_gpu.pallas_call_registration",
    "jax._src.pallas.triton.pallas_call_registration",
    "jax.experimental.multihost_utils",
    "jaxlib.mlir.dialects.mhlo",
    "kgate.backends.jax_programs",
)


def load_lazy_modules() -> None:
    """Import `LAZY_MODULES` now; one that cannot be imported here (jax's Mosaic GPU needs
    absl) is marked absent, so jax's own later tries fail at once, as they would have, instead
    of running its imports again on every lowering. Opens no device."""
    import importlib

    for name in LAZY_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - absent here (ImportError), or broken: a lowering that needs it says so
            sys.modules[name] = None  # type: ignore[assignment]  # `import name` raises ImportError


def _path_str(path: Sequence[Any]) -> str:
    return jax.tree_util.keystr(tuple(path)) or "out"


class JaxBackend:
    """Runs JAX workloads; on the CPU, Pallas TPU kernels run under TPU interpret mode."""

    name = "jax"
    load_lazy_modules = staticmethod(load_lazy_modules)

    def __init__(self) -> None:
        # No program another process left on disk is loaded here (a candidate's run can plant
        # one under the reference's key): the persistent cache is off in kgate's processes, as
        # the legs' environment already says (kgate.verify.spawn.CACHES_OFF).
        jax.config.update("jax_enable_compilation_cache", False)
        self.oracle_fallback = ""  # why the last float64 oracle was not the widened program ("" when it was)
        device = jax.devices()[0]
        self.platform = device.platform
        self.interpreted = self.platform == "cpu"
        self._device_kind = getattr(device, "device_kind", self.platform)
        self._signatures: dict[tuple[Any, ...], str | None] = {}
        self._refused: dict[tuple[Any, ...], tuple[str, str]] = {}  # op-points whose sizing ran out of memory
        # (fn, shapes, static inputs) -> (fn, the first program `run` traced and ran there, whether a
        # later run there traced another)
        self._ran: dict[tuple[Any, ...], tuple[Any, Any, bool]] = {}
        self._lowers_here: dict[str, str] = {}  # platform -> "" or why jaxlib cannot lower kernels for it here
        self._rules_at_start = _lowering_rules()  # before any candidate code: jax's lowering registries

    # -- device -------------------------------------------------------------------------
    def device(self) -> DeviceInfo:
        import jaxlib

        versions = {"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", "unknown")}
        try:
            from importlib.metadata import version

            versions["libtpu"] = version("libtpu")
        except Exception:
            pass
        return DeviceInfo(self.platform, self._device_kind, self.interpreted, versions)

    @contextlib.contextmanager
    def _mode(self, uninitialized: Literal["nan", "zero"] = "nan") -> Iterator[None]:
        if self.interpreted:
            with pltpu.force_tpu_interpret_mode(pltpu.InterpretParams(uninitialized_memory=uninitialized)):
                yield
        else:
            yield

    # -- inputs -------------------------------------------------------------------------
    def create_inputs(self, problem: ProblemModule, seed: int, dtype: str | None) -> tuple[tuple[Any, ...], str]:
        """The problem's inputs for `seed`, and how the seed got in ("argument" / "injected")."""
        try:
            inputs, how = self._call_create_inputs(problem, seed, dtype)
        except KgateError:
            raise
        except Exception as exc:
            raise inputs_failed(problem, exc) from exc
        inputs = tuple(jnp.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs)
        jax.block_until_ready([x for x in inputs if not is_static(x)])
        return inputs, how

    def footprint(self, problem: ProblemModule, dtype: str | None) -> Footprint | None:
        """The op-point's bytes per probe from shapes alone (`jax.eval_shape` of create_inputs
        and of the reference): nothing is allocated. None when create_inputs cannot be traced
        (it reads values). numpy code inside create_inputs runs for real under eval_shape: such
        inputs are made (and sized) once here, with the process capped at the host's free memory
        (more is refused as too big, not allocated until the kernel kills the leg)."""
        try:
            _, inputs = self._traced_inputs(problem, dtype)
        except KgateError:
            raise
        except jax.errors.JAXTypeError:
            return None  # concrete values needed (a tracer turned into a bool, an int, a numpy array)
        except (TypeError, ValueError) as exc:  # a shape the reference cannot make (a negative size, a wrong type)
            raise inputs_failed(problem, exc) from exc
        except Exception:
            return None
        traced = True
        try:
            outputs = jax.eval_shape(*_flat(bind_static(problem.entry, inputs)))
        except Exception:
            if not problem.eager:
                return None  # the reference fails on these inputs: its run says how
            outputs = [x for x in inputs if not is_static(x)]  # an eager entry cannot be traced: as big as its inputs
            traced = False
        in_leaves = jax.tree_util.tree_leaves([x for x in inputs if not is_static(x)])
        out_leaves = jax.tree_util.tree_leaves(outputs)

        def wide(leaf: Any) -> int:  # the oracle's copy: floating leaves at float32 at least
            size = int(np.prod(leaf.shape, dtype=np.int64))
            item = np.dtype(leaf.dtype).itemsize
            return size * (max(item, 4) if jnp.issubdtype(leaf.dtype, jnp.floating) else item)

        return Footprint(
            inputs=sum(_nbytes(x) for x in in_leaves),
            outputs=sum(_nbytes(x) for x in out_leaves),
            oracle=sum(wide(x) for x in in_leaves) + sum(wide(x) for x in out_leaves),
            output_elements=_elements(out_leaves) if traced else None,  # a guess from the inputs says nothing of it
        )

    def input_shapes(self, problem: ProblemModule, dtype: str | None) -> tuple[Any, ...]:
        """The op-point's inputs as shapes (nothing allocated): what the lowering gate lowers for."""
        return self._traced_inputs(problem, dtype)[1]

    def _traced_inputs(self, problem: ProblemModule, dtype: str | None) -> tuple[Any, tuple[Any, ...]]:
        """create_inputs traced, nothing allocated: its closed jaxpr, and the inputs with each
        array as a ShapeDtypeStruct and each static input (a Python scalar) as itself."""
        static: dict[int, Any] = {}
        count: list[int] = []

        def make() -> list[Any]:
            inputs = self._call_create_inputs(problem, 0, dtype)[0]
            static.update({i: x for i, x in enumerate(inputs) if is_static(x)})
            count.append(len(inputs))
            return [x for i, x in enumerate(inputs) if i not in static]

        closed, shapes = sized_once(self._refused, problem, dtype, jax.make_jaxpr(make, return_shape=True))
        arrays = iter(shapes)
        return closed, tuple(static[i] if i in static else next(arrays) for i in range(count[0]))

    def program_signature(self, problem: ProblemModule, dtype: str | None) -> str | None:
        """A digest of what the op-point builds: create_inputs' traced program (shapes,
        constants, static values) and the entry's traced program on those inputs. None when
        either cannot be traced abstractly. Traced once per CONFIG state (the override check
        and the odd-shape probe ask for the same one)."""
        key = config_state_key(problem, dtype)
        if key not in self._signatures:
            self._signatures[key] = self._program_signature(problem, dtype)
        return self._signatures[key]

    def _program_signature(self, problem: ProblemModule, dtype: str | None) -> str | None:
        try:
            closed, inputs = self._traced_inputs(problem, dtype)
            fn, arrays = bind_static(problem.entry, inputs)
            entry = jax.make_jaxpr(lambda *a: fn(*a))(*arrays)  # a fresh function: jax's trace cache keys on it
        except Exception:
            return None
        h = hashlib.sha256()
        for program in (closed, entry):
            h.update(str(program).encode())
            h.update(leaves_sha256(program.consts).encode())
        h.update(repr([x for x in inputs if is_static(x)]).encode())
        return h.hexdigest()

    def ineffective_overrides(self, problem: ProblemModule, dtype: str | None, replaced: dict[str, Any]) -> list[str]:
        """The overridden CONFIG keys, when all of them together build the very same program as
        the values they replaced (create_inputs hard-codes its shapes, or nothing reads them):
        the op-point did not change. [] when something changed (keys may matter only together,
        as in `n = max(rows, cols)`), or when that cannot be told by tracing."""
        config = problem.config
        if config is None:
            return []
        changed = {k: v for k, v in replaced.items() if v is not None and v != config.get(k)}
        now = self.program_signature(problem, dtype) if changed else None
        if now is None:
            return []
        with config_set(changed, config):
            before = self.program_signature(problem, dtype)
        return sorted(changed) if before == now else []

    def refuse_ineffective(self, problem: ProblemModule, dtype: str | None, op_point: Any, given: dict[str, Any],
                           registered: dict[str, Any] | None = None) -> None:
        """Refuse an op-point override (`given`: the --set keys; `registered`: the family's
        op-point; the rest came from TINY) that builds the very same program as the values it
        replaced: that op-point never runs."""
        refuse_ineffective(self.ineffective_overrides(problem, dtype, dict(op_point.replaced)), op_point, given,
                           problem.path.name, registered)

    def available_memory(self) -> tuple[int, str] | None:
        """Bytes free where the arrays live: the accelerator's memory, or the host's
        MemAvailable on the CPU; None where neither can be read."""
        device = jax.devices()[0]
        if device.platform != "cpu":
            stats = device.memory_stats() or {}
            if "bytes_limit" in stats:
                return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0)), f"the {device.device_kind}"
            return None
        return host_memory()

    def ensure_fits(self, problem: ProblemModule, dtype: str | None, probes: int, values: dict[str, Any]) -> bool:
        """Refuse an op-point too big for this machine before any input is made; False when
        it could not be sized by shapes alone (nothing was checked)."""
        return fits(self.footprint(problem, dtype), self.available_memory(), probes, values)

    def _call_create_inputs(self, problem: ProblemModule, seed: int, dtype: str | None) -> tuple[tuple[Any, ...], str]:
        accepted = problem.create_inputs_params()
        kwargs: dict[str, Any] = {}
        if dtype is not None:
            if dtype not in _DTYPES:
                raise KgateError(f"--dtype {dtype!r} is not a known dtype.", f"use one of {sorted(_DTYPES)}.")
            if "dtype" not in accepted:
                if problem.model is not None:
                    raise KgateError(f"--dtype {dtype} given, but {problem.path.name} follows the Model protocol: "
                                     "its get_inputs() takes no dtype.",
                                     "drop --dtype; the dtype is the one get_inputs makes (or make it a shape global "
                                     "that get_inputs reads, and give it with --set).")
                raise KgateError(
                    f"--dtype {dtype} given, but {problem.path.name}'s create_inputs takes no dtype parameter.",
                    "add a dtype parameter to create_inputs or drop --dtype.",
                )
            kwargs["dtype"] = jnp.dtype(dtype)
        injection = SeedInjection(seed)
        if "seed" in accepted:
            kwargs["seed"] = seed
            inputs = problem.create_inputs(**kwargs)
            how = "argument"
        else:
            with injection.active(vars(problem.module)):
                inputs = problem.create_inputs(**kwargs)
            how = "injected" if injection.hits else "none"
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        return tuple(inputs), how

    # -- running ------------------------------------------------------------------------
    @staticmethod
    def last_launches() -> None:
        """None: a JAX program's kernels are read off the program it traces, not recorded per run."""
        return None

    def run(
        self, fn: Callable[..., Any], inputs: Sequence[Any], *, uninitialized: Literal["nan", "zero"] = "nan",
        phase: Callable[[str], None] = lambda _: None, eager: bool = False,
    ) -> HostTree:
        """jit `fn`, run it once on `inputs`, synchronize, and copy the outputs to the host;
        `phase` is told each step as it starts ("tracing", "compiling", "running")."""
        bound, arrays = bind_static(fn, inputs)
        with _callback_errors() as logged:
            try:
                with self._mode(uninitialized):
                    if eager:
                        phase("running")
                        out = bound(*arrays)
                    else:
                        phase("tracing")
                        traced = jax.jit(bound).trace(*arrays)
                        self._remember(fn, inputs, traced.jaxpr)  # what the lowering gate lowers
                        phase("compiling")
                        compiled = traced.lower().compile()
                        refuse_foreign_nodes(compiled.out_tree)
                        phase("running")
                        out = compiled(*arrays)
                    jax.block_until_ready(out)
            except Exception as exc:
                if self.interpreted:  # a failed interpreted kernel leaves shared state behind
                    pltpu.reset_tpu_interpret_mode_state()
                failure = kernel_failure(exc, logged.raised)
                if failure is None:
                    raise
                raise failure from exc
        return self.to_host(out)

    def run_eager(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> HostTree:
        """`fn` run op by op, never jitted as a whole: each op compiled on its own, so no
        cross-op fusion of the compiler's can touch the result."""
        bound, arrays = bind_static(fn, inputs)
        with self._mode(), jax.disable_jit():
            out = bound(*arrays)
            jax.block_until_ready(out)
        return self.to_host(out)

    def run_oracle(self, fn: Callable[..., Any], inputs: Sequence[Any], precision: str, eager: bool = False) -> HostTree:
        """The reference recomputed with floating inputs upcast to float32 or float64 (host). The
        float64 one is the reference's program with float32 widened to float64 throughout
        (`kgate.backends.widen`: a reference that casts its inputs to float32 would otherwise be
        its own oracle); where the program cannot be widened, or runs op by op, the reference
        itself on float64 inputs, and `oracle_fallback` says why ("" when widened)."""
        if precision == "float32":
            return self.run(fn, self.cast_floating(inputs, jnp.float32), eager=eager)
        with jax.enable_x64(True):
            with jax.default_device(jax.devices("cpu")[0]):
                bound, cast = bind_static(fn, self.cast_floating(inputs, jnp.float64))
                with self._cpu_mode():
                    out = None
                    self.oracle_fallback = "the reference runs op by op" if eager else ""
                    if not eager:
                        try:
                            out = widen.widened(bound, cast)
                        except Exception as exc:  # Unwidenable, or a widened parameter an operation refuses
                            self.oracle_fallback = describe(exc, 200)
                    if out is None:
                        out = _jit(bound, eager)(*cast)
                    jax.block_until_ready(out)
                return self.to_host(out)

    def run_reordered(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> HostTree | None:
        """The reference with every floating sum taken in sequence (`kgate.backends.reorder`),
        on the same inputs and device as the reference: a second measurement of the floor. None
        where the order of its sums cannot show in its outputs."""
        bound, arrays = bind_static(fn, inputs)
        with self._mode():
            out = reorder.reordered(bound, arrays)
            if out is None:
                return None
            jax.block_until_ready(out)
        return self.to_host(out)

    @contextlib.contextmanager
    def _cpu_mode(self) -> Iterator[None]:
        with pltpu.force_tpu_interpret_mode(pltpu.InterpretParams()):
            yield

    @staticmethod
    def cast_floating(inputs: Sequence[Any], dtype: Any) -> tuple[Any, ...]:
        def cast(x: Any) -> Any:
            if is_static(x):
                return x  # a Python scalar stays one (weakly typed: it follows the arrays' precision)
            x = jnp.asarray(x)
            return x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x

        return tuple(jax.tree_util.tree_map(cast, tuple(inputs)))

    @staticmethod
    def to_host(tree: Any) -> HostTree:
        flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
        leaves = []
        for _, leaf in flat:
            if not isinstance(leaf, (jax.Array, np.ndarray, np.generic, int, float, bool)):
                raise TypeError(f"output leaf of type {type(leaf).__name__} is not a materialized array")
            leaves.append(np.array(leaf, copy=True))
        return HostTree(str(treedef), tuple(_path_str(p) for p, _ in flat), tuple(leaves))

    @staticmethod
    def digest(tree: Any) -> str:
        """sha256 over every leaf's dtype, shape and bytes."""
        return leaves_sha256(jax.tree_util.tree_leaves(tree))

    # -- timing -------------------------------------------------------------------------
    def compile_timed(
        self,
        fn: Callable[..., Any],
        inputs: Sequence[Any],
        clock: Callable[[], int],
        flush: Callable[[], None] | None = None,
        *,
        keep_outputs: bool = True,
        eager: bool = False,
        precompiled: ProgramPrint | None = None,
        remake: Callable[[int], Sequence[Any]] | None = None,  # unused: no candidate code runs in a compiled call
    ) -> TimedCall:
        """jit and compile `fn` ahead of time on these input buffers (compile never timed).

        `keep_outputs=False` (the reference): each output is deleted as soon as its call is
        timed, so no answer of the reference stays reachable while candidate code runs.
        `precompiled`: the reference's program as compiled before the candidate was imported
        (`program_fingerprint`), timed as it is."""
        bound, arrays = bind_static(fn, inputs)
        program = made = None
        if eager:  # a reference declared eager: nothing to compile: each call runs op by op, in the backend's mode
            def compiled(*args: Any) -> Any:
                with self._mode():
                    return bound(*args)
        elif precompiled is not None and precompiled.compiled is not None:
            compiled, program, made = precompiled.compiled, precompiled.sha256, precompiled.compiled_sha256
        else:
            with self._mode():
                lowered = jax.jit(_fresh(bound)).lower(*arrays)
                program = _program_sha256(lowered)
                compiled = lowered.compile()
            refuse_foreign_nodes(compiled.out_tree)
            made = compiled_sha256(compiled)
        timed = TimedCall(compiled, arrays, clock, flush, keep_outputs)
        timed.program_sha256, timed.compiled_sha256 = program, made
        return timed

    def timed_program(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> str | None:
        """The digest `compile_timed` gives the program it lowers for `fn` on inputs of these shapes
        (nothing compiled, nothing run). The checks take it too, so the timed process is held to the
        program they graded."""
        bound, arrays = bind_static(fn, inputs)
        with self._mode():
            return _program_sha256(jax.jit(_fresh(bound)).lower(*arrays))

    def program_fingerprint(self, problem: ProblemModule, dtype: str | None) -> ProgramPrint:
        """The program jit lowers for the problem's entry at its op-point and what XLA compiles it
        to, from shapes alone (nothing allocated). Taken before any candidate code exists, they are
        what the reference's timed programs must still be after: a patched operator, lowering rule
        or helper changes the first; a patch of the compiler's path that puts itself back, the
        second. The compiled program is kept for session 0 to time."""
        if problem.eager:
            return ProgramPrint(None, "the reference runs op by op (declared eager): there is no program to compare")
        try:
            shapes = self._traced_inputs(problem, dtype)[1]
            bound, arrays = bind_static(problem.entry, shapes)
            with self._mode():
                lowered = jax.jit(_fresh(bound)).lower(*arrays)
                compiled = lowered.compile()
        except Exception as exc:
            return ProgramPrint(None, f"the reference could not be compiled from shapes alone ({describe(exc)})")
        return ProgramPrint(_program_sha256(lowered), "", compiled_sha256(compiled), compiled)

    def warm_up(self) -> None:
        """Run one trivial jitted op: the framework starts its own thread pools now, so that a
        thread census taken after this sees only threads that later code started."""
        jax.block_until_ready(jax.jit(lambda x: x * 2 + 1)(jnp.ones((8,), jnp.float32)))

    def cache_flusher(self) -> tuple[Callable[[], None], str]:
        """A function that evicts the caches the legs share, and what it does.

        Both legs read the same input buffers, so whichever runs second would find them
        cached: a position effect that is physics, not kernel quality. On the CPU the
        private caches are overwritten with a buffer of 4x the L2 size (2x the last-level
        cache when that is at most 64 MiB); on a GPU an L2-sized device buffer is
        rewritten; a TPU has no cache between HBM and the cores to flush.
        """
        if self.platform == "tpu":
            return (lambda: None), "no cache flush (TPU: no cache between HBM and the cores)"
        if self.platform == "gpu":
            size = 2 * 64 * 2**20
            buf = jnp.zeros(size // 4, jnp.float32)
            touch = jax.jit(lambda b: b + 1.0)

            def flush_gpu() -> None:
                jax.block_until_ready(touch(buf))

            return flush_gpu, f"L2 flush: a {size // 2**20} MiB device buffer rewritten before every timed call"
        return cpu_cache_flusher()

    static_inputs = staticmethod(static_inputs)
    is_static = staticmethod(is_static)

    @staticmethod
    def copy_inputs(inputs: Sequence[Any]) -> tuple[Any, ...]:
        """Fresh device buffers holding the same values (a new placement in memory); a static
        input (a Python scalar) stays what it is."""
        copies = tuple(x if is_static(x) else jax.tree_util.tree_map(lambda a: jnp.array(a, copy=True), x)
                       for x in inputs)
        jax.block_until_ready([x for x in copies if not is_static(x)])
        return copies

    @staticmethod
    def save_inputs(inputs: Sequence[Any], path: Path) -> str:
        """Write the inputs (any pytree of arrays and Python scalars) to `path`; the file's sha256.

        Written only by a process that never imported candidate code; `load_inputs` checks the
        file against that sha256 before reading it, so nothing else can slip a payload in."""
        host = jax.tree_util.tree_map(lambda x: np.asarray(x) if isinstance(x, jax.Array) else x, tuple(inputs))
        return write_hand_over(host, path)

    @staticmethod
    def load_inputs(path: Path, sha256: str) -> tuple[Any, ...]:
        host = read_hand_over(path, sha256)
        inputs = tuple(jax.tree_util.tree_map(lambda x: jnp.asarray(x) if isinstance(x, np.ndarray) else x, host))
        jax.block_until_ready(inputs)
        return inputs

    @staticmethod
    def edge_inputs(inputs: Sequence[Any], seed: int | None = None) -> list[tuple[str, tuple[Any, ...]]]:
        """Variants of `inputs` with the values random probes never hit, one floating input at
        a time, `edge-KIND-inI` (I: the leaf's position among the flattened inputs; the kinds and
        what each holds: `kgate.backends.base.edge_values`, placed by the run's drawn `seed`; the
        `lowest` edge only where one input is floating, `edge_kinds`). Built on the host."""
        leaves, treedef = jax.tree_util.tree_flatten(tuple(inputs))
        variants: list[tuple[str, tuple[Any, ...]]] = []
        floating = [i for i, x in enumerate(leaves) if _edged(x)]
        kinds = edge_kinds(len(floating))
        for i in floating:
            x = leaves[i]
            info = jnp.finfo(x.dtype)
            for kind, value in edge_values(np.asarray(x).astype(np.float32), float(info.max), seed, float(info.tiny),
                                           kinds):
                changed = list(leaves)
                changed[i] = jnp.asarray(value.astype(np.dtype(x.dtype)))
                variants.append((f"edge-{kind}-in{i}", tuple(jax.tree_util.tree_unflatten(treedef, changed))))
        return variants

    @staticmethod
    def mixed_inputs(inputs: Sequence[Any], seed: int) -> tuple[Any, ...]:
        """`inputs` (a probe's at a shape of its own) with three rows in four of every floating input
        that has rows enough taken from the edges that treat each row on its own
        (`kgate.backends.base.mixed_rows`), placed and dealt by the run's drawn `seed`."""
        def mix(x: Any) -> Any:
            if not _edged(x):
                return x
            info = jnp.finfo(x.dtype)
            value = mixed_rows(np.asarray(x).astype(np.float32), float(info.max), seed, float(info.tiny))
            return jnp.asarray(value.astype(np.dtype(x.dtype)))

        return tuple(jax.tree_util.tree_map(mix, tuple(inputs)))

    @staticmethod
    def reuse_programs(offer: Mapping[str, Any] | None) -> Any:
        """In a reference leg: open the compilation cache the parent offered, whose files load
        only with the digests it holds (kgate.backends.jax_programs); None when none was offered."""
        from kgate.backends.jax_programs import open_verified

        return open_verified(offer)

    @staticmethod
    def reference_lookups(problem: Any) -> list[tuple[str, Any]]:
        """Nothing: the reference's timed call is a compiled program, whose call path kgate bound
        at its import (the interpreter's hooks are still read before each of its calls)."""
        return []

    @staticmethod
    def settings() -> dict[str, Any]:
        """The array library's process-wide settings: every jax.config flag, the context states
        set outside it (interpret mode, meshes, default device, compute placement) and whether
        a persistent compilation cache is open. A change by candidate code applies to every
        program compiled after it, the reference's included."""
        from jax._src import compilation_cache
        from jax._src import config as states

        found: dict[str, Any] = dict(jax.config.values)
        for name in _CONTEXT_STATES:
            state = getattr(states, name, None)
            if state is not None:
                found[name] = state.value
        found["a persistent compilation cache open"] = getattr(compilation_cache, "_cache", None) is not None
        return found

    @staticmethod
    def restore_settings(before: dict[str, Any]) -> None:
        """Put back the jax.config flags that differ from `before` (best effort)."""
        for name, value in before.items():
            if name in jax.config.values and jax.config.values[name] is not value:
                try:
                    jax.config.update(name, value)
                except Exception:
                    pass

    @staticmethod
    def watched_modules(depth: str = "public") -> list[str]:
        """The array library's surface a candidate could patch, by depth: `hot`, what a timed
        call and a compile go through (jit, the compiler's path, the compiled call,
        synchronization, the clocks); `public`, the
        public modules and the lax primitives the public ops delegate to; `deep`, every loaded
        jax, jaxlib, numpy and ml_dtypes module."""
        if depth == "deep":
            return [
                name
                for name, module in list(sys.modules.items())
                if module is not None and name.split(".")[0] in ("jax", "jaxlib", "numpy", "ml_dtypes")
            ]
        hot = ("jax", "jax._src.api", "jax._src.stages", "jax._src.pjit", "jax._src.dispatch", "jax._src.compiler",
               "jax._src.interpreters.pxla", "jax._src.xla_bridge", "jax._src.compilation_cache", "time")
        public = (
            *hot, "os", "random", "secrets", "threading", "hashlib", "pickle", "jax.numpy", "jax.lax", "jax.random", "jax.nn", "jax.tree_util", "jax.scipy.special",
            "jax.experimental.pallas", "jax.experimental.pallas.tpu", "jax._src.lax.lax",
            "jax._src.numpy.lax_numpy", "jax._src.numpy.reductions", "jax._src.numpy.ufuncs",
            "numpy", "numpy.random", "numpy.linalg",
        )
        return [name for name in (hot if depth == "hot" else public) if name in sys.modules]

    @staticmethod
    def perturb_slice(inputs: Sequence[Any], index: int, axis: int, position: int) -> tuple[Any, ...]:
        """A copy of the inputs with one slice of one input changed (noise, or +1 for integers)."""
        out = list(inputs)
        x = jnp.asarray(out[index])
        where = (slice(None),) * axis + (position,)
        if jnp.issubdtype(x.dtype, jnp.floating):
            part = x[where]
            noise = jax.random.normal(jax.random.key(position + 1), part.shape, jnp.float32)
            scale = jnp.std(x.astype(jnp.float32)) + 1.0
            out[index] = x.at[where].add((noise * scale).astype(x.dtype))
        else:
            out[index] = x.at[where].add(1)
        return tuple(out)

    def capture(self, fn: Callable[..., Any], inputs: Sequence[Any], folder: Path, calls: int = 3) -> list[str]:
        """Run `fn` under the JAX profiler into `folder` (timing discarded), with a Perfetto trace
        (`perfetto_trace.json.gz`, opened at ui.perfetto.dev); the files written."""
        fn, inputs = bind_static(fn, inputs)
        compiled = _jit(fn, eager=False)  # the candidate: always compiled
        earlier = {p for p in folder.rglob("*") if p.is_file()}  # a reused folder: an earlier run's files are not this one's
        with self._mode():
            jax.block_until_ready(compiled(*inputs))
            with jax.profiler.trace(str(folder), create_perfetto_trace=True):
                for _ in range(calls):
                    jax.block_until_ready(compiled(*inputs))
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p not in earlier)

    @staticmethod
    def dispatch_probe(inputs: Sequence[Any]) -> Callable[..., Any]:
        """A real, empty dispatch on the same buffers: one add on one element of the first array
        input (a whole-array op would be a memory pass, and make every memory-bound workload
        look launch-bound)."""

        def probe(*args: Any) -> Any:
            first = next(a for a in jax.tree_util.tree_leaves(args) if hasattr(a, "shape"))
            return jnp.ravel(first)[:1] + jnp.ones((), first.dtype)

        return probe

    @staticmethod
    def output_spec(fn: Callable[..., Any], inputs: Sequence[Any]) -> list[tuple[tuple[int, ...], str]]:
        """(shape, dtype) of each output leaf, from abstract evaluation (nothing runs)."""
        shapes = jax.eval_shape(*_flat(bind_static(fn, inputs)))
        return [(tuple(s.shape), str(s.dtype)) for s in jax.tree_util.tree_leaves(shapes)]

    @staticmethod
    def poison(spec: Sequence[tuple[tuple[int, ...], str]], copies: int = 2) -> None:
        """Fill buffers of the output's shapes with NaN (or the dtype's max) and free them,
        so an output the candidate never writes lands on poison, not on a stale answer."""
        held = []
        for _ in range(copies):
            for shape, dtype in spec:
                dt = jnp.dtype(dtype)
                if jnp.issubdtype(dt, jnp.inexact):
                    fill: Any = jnp.nan
                elif dt == jnp.bool_:
                    fill = True
                else:
                    fill = jnp.iinfo(dt).max
                held.append(jnp.full(shape, fill, dtype=dt))
        jax.block_until_ready(held)
        for buf in held:
            buf.delete()

    # -- inspection ---------------------------------------------------------------------
    def inspect(
        self, fn: Callable[..., Any], inputs: Sequence[Any], *, ablate: bool = True, moved_above: float = 0.0
    ) -> ProgramFacts:
        """Trace, compile and (optionally) ablate the kernels of `fn` on `inputs`; an output
        element counts as moved by the ablation only when it moves by more than `moved_above`."""
        fn, inputs = bind_static(fn, inputs)
        with self._mode():
            closed, shapes = jax.make_jaxpr(fn, return_shape=True)(*inputs)
            compiled = jax.jit(fn).lower(*inputs).compile().as_text() or ""
            sites, callbacks = jaxpr_flow.program_sites(closed)
            ablation = (
                self._ablate(closed, inputs, moved_above) if ablate and sites else Ablation(False, "no kernel in program")
            )
            essential, identities = ("", []) if sites else self._essential(closed, inputs, shapes)
        return ProgramFacts(
            platform=self.platform,
            kernel_sites=tuple(sites),
            program_text=str(closed),
            compiled_text=compiled,
            custom_call_targets=tuple(_CUSTOM_CALL_TARGET.findall(compiled)),
            ablation=ablation,
            host_callbacks=tuple(callbacks),
            arithmetic=jaxpr_flow.arithmetic(closed),
            essential_text=essential,
            identities=tuple(identities),
        )

    @staticmethod
    def _essential(closed: Any, inputs: Sequence[Any], shapes: Any) -> tuple[str, list[str]]:
        """The compiled program with the operations that handed back an operand unchanged on
        these inputs left out (`jaxpr_flow.without_identities`), and what was left out; ("", [])
        when nothing was."""
        leaves = jax.tree_util.tree_leaves(inputs)
        try:
            run, identities = jaxpr_flow.without_identities(closed, leaves)
            if not identities:
                return "", []
            tree = jax.tree_util.tree_structure(shapes)
            essential = jax.jit(lambda *a: jax.tree_util.tree_unflatten(tree, run(*a)))
            return essential.lower(*leaves).compile().as_text() or "", identities
        except Exception:  # a program it cannot rebuild: compared as compiled, as before
            return "", []

    def essential_text(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> str:
        """`fn`'s compiled program with the operations that did nothing on `inputs` left out;
        "" when none did (the compiled program is the essential one)."""
        fn, inputs = bind_static(fn, inputs)
        with self._mode():
            closed, shapes = jax.make_jaxpr(fn, return_shape=True)(*inputs)
            return self._essential(closed, inputs, shapes)[0]

    def arithmetic(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> Arithmetic:
        """The arithmetic `fn` does on `inputs` in plain array code (its kernels' own left out)."""
        fn, inputs = bind_static(fn, inputs)
        with self._mode():
            return jaxpr_flow.arithmetic(jax.make_jaxpr(fn)(*inputs))

    def kernel_experiments(
        self, fn: Callable[..., Any], inputs: Sequence[Any]
    ) -> tuple[HostTree | str, dict[str, HostTree] | str]:
        """Two experiments on `fn`'s kernels, run as one program: the ablation (for every output
        element, the most it moved when every kernel result was perturbed; inf where NaN-ness
        changed) and the bypass (the outputs with every kernel replaced by a stand-in that
        does no work: zeros, an operand passed through). Each is a reason string when kgate
        cannot substitute the kernels."""
        fn, inputs = bind_static(fn, inputs)
        with self._mode():
            # the outputs' structure from this one trace, not from tracing `fn` again after the
            # experiments: the candidate's code never runs between them and kgate's copy of their results
            closed, shapes = jax.make_jaxpr(fn, return_shape=True)(*inputs)
            structure = jax.tree_util.tree_structure(shapes)
            if not jaxpr_flow.contains_kernel(closed):
                return "no kernel in program", "the program has no kernel to replace"
            try:
                base, perturbed, bypassed = jaxpr_flow.kernel_experiments(
                    closed, jax.tree_util.tree_leaves(tuple(inputs))
                )
            except jaxpr_flow.AblationUnsupported as exc:
                return str(exc), str(exc)
        moves = _moves(base, perturbed)
        return (
            HostTree("moves", tuple(f"[{i}]" for i in range(len(moves))), tuple(moves)),
            {name: self.to_host(jax.tree_util.tree_unflatten(structure, out)) for name, out in bypassed.items()},
        )

    def transplant(self, fn: Callable[..., Any], inputs: Sequence[Any], other: Sequence[Any]) -> HostTree | Skip:
        """`fn`'s outputs on `inputs` with every kernel's results taken from its run on `other`
        (`jaxpr_flow.transplant`), graded by the parent against both probes' answers; a `Skip`
        saying why where the kernels cannot be lined up between the runs (a loop or a branch taken
        otherwise on each, or a program the re-evaluation cannot rebuild): the check is then SKIPPED, said,
        and the ablation, the stand-ins and the arithmetic count stand alone."""
        _, other = bind_static(fn, other)
        fn, inputs = bind_static(fn, inputs)
        with self._mode():
            closed, shapes = jax.make_jaxpr(fn, return_shape=True)(*inputs)
            if not jaxpr_flow.contains_kernel(closed):
                return Skip("the program has no kernel")
            try:
                out = jaxpr_flow.transplant(closed, jax.tree_util.tree_leaves(tuple(inputs)),
                                            jax.tree_util.tree_leaves(tuple(other)))
            except jaxpr_flow.NotTransplanted as exc:
                return Skip(str(exc))
        return self.to_host(jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shapes), out))

    def interprets(self, fn: Callable[..., Any], inputs: Sequence[Any], eager: bool = False) -> bool:
        """Whether running `fn` here runs an interpreter: on the CPU a Pallas kernel runs in
        interpret mode; a program without one is compiled XLA:CPU code, and the CPU is the device."""
        if not self.interpreted:
            return False
        fn, inputs = bind_static(fn, inputs)
        try:
            with self._mode():
                return jaxpr_flow.contains_kernel(jax.make_jaxpr(fn)(*inputs))
        except Exception:
            if eager:
                return True  # an eager entry that cannot be traced: call its times interpreted, never device numbers
            raise

    def compiled_text(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> str:
        fn, inputs = bind_static(fn, inputs)
        with self._mode():
            return jax.jit(fn).lower(*inputs).compile().as_text() or ""

    # -- lowering for a device platform, from shapes alone ----------------------------------
    def kernel_platform(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> str | None:
        """The device platform to lower `fn`'s kernels for ("tpu" or "cuda"): this machine's
        accelerator, else the one their compiler parameters name (Mosaic TPU; Triton or Mosaic
        GPU), else "tpu"; None when the program holds no kernel."""
        return _kernels_platform(self._program(fn, inputs)[0], self.platform)

    def chip_vmem(self, chip: str | None) -> tuple[str, int | None]:
        """The TPU generation to compare VMEM estimates with, and its VMEM per TensorCore from
        jax's own table (`pltpu.get_tpu_info_for_chip`): `chip` when given (v4, v5e, v5p, v6e,
        7x, ...), else this machine's TPU, else ("", None)."""
        if chip:
            version = _chip_version(chip)
            if version is None:
                known = ", ".join(v.value for v in pltpu.ChipVersion)
                raise KgateError(f"--chip-kind {chip!r} is not a TPU generation jax {jax.__version__} knows.",
                                 f"use one of: {known} (or a TPU's device kind, e.g. 'TPU v5 lite').")
            return str(version), int(pltpu.get_tpu_info_for_chip(version, 1).vmem_capacity_bytes)
        if self.platform == "tpu":
            info = pltpu.get_tpu_info()
            return str(info.chip_version), int(info.vmem_capacity_bytes)
        return "", None

    def tpu_peaks(self) -> tuple[float, float, str] | None:
        """This machine's TPU: its fastest floating-point rate and HBM bandwidth per device (jax's
        own table, per TensorCore, times the device's cores); None off a TPU."""
        if self.platform != "tpu":
            return None
        info = pltpu.get_tpu_info()
        cores = max(int(info.num_cores), 1)
        flops = max(float(info.bf16_ops_per_second), float(info.fp8_ops_per_second)) * cores
        return flops, float(info.mem_bw_bytes_per_second) * cores, f"jax's TPU table for {info.chip_version}"

    def lower_for(self, fn: Callable[..., Any], inputs: Sequence[Any], platform: str, op_point: str,
                  chip: str | None = None) -> LoweredProgram:
        """`fn` lowered for `platform` as a host of that device would lower it, from the
        inputs' shapes alone (the real Pallas-to-Mosaic or -Triton lowering runs here, on any
        machine, and raises the errors the device's host would). Never under interpret mode."""
        bound, arrays = bind_static(fn, inputs)
        shapes = _abstract(arrays)
        shown = ", ".join(f"{jnp.dtype(x.dtype).name}{list(x.shape)}" for x in jax.tree_util.tree_leaves(shapes))
        try:
            closed, varied = self._program(fn, inputs)
        except Exception as exc:  # the candidate cannot even be traced at these shapes: said per op-point
            return LoweredProgram(platform, op_point, shown, error=_lowering_error(exc), where=_user_frame(exc))
        sites = len(jaxpr_flow.program_sites(closed)[0])
        try:
            covered = tuple(pallas_grid.coverage(closed))
        except Exception as exc:  # an index map kgate cannot evaluate: said, never passed
            covered = (OutputCoverage("pallas_call", 0, (), (), (), 0, 0, None,
                                      f"the index maps could not be evaluated ({describe(exc)})"),)
        chip_name, capacity = self.chip_vmem(chip) if platform == "tpu" else ("", None)
        fit = dict(vmem=tuple(pallas_grid.vmem(closed)), chip=chip_name, chip_vmem=capacity) if platform == "tpu" else {}
        base = dict(kernel_sites=sites, kernel_names=tuple(sorted(jaxpr_flow.kernel_names(closed))), coverage=covered,
                    **fit)
        changed = _changed_rules(self._rules_at_start)  # first: a changed rule could also fake "unavailable"
        if changed:
            return LoweredProgram(platform, op_point, shown, error=(
                "jax's lowering rules changed after kgate started (by candidate code): " + "; ".join(changed[:6])), **base)
        unavailable = self._lowers_for(platform)
        if unavailable:  # decided by kgate's own kernel, never by what the candidate's lowering raises
            return LoweredProgram(platform, op_point, shown, unavailable=unavailable, **base)
        foreign = jaxpr_flow.foreign_compiler_params(closed)
        if foreign:
            return LoweredProgram(platform, op_point, shown, error=(
                "the kernels' compiler parameters are of a class the candidate defined (" + ", ".join(foreign)
                + "), not jax's own: only jax's own are lowered by jax's own rules"), **base)
        if varied:
            return LoweredProgram(platform, op_point, shown, error=(
                "the candidate traces to a different program for the device: its runs at these shapes (with NaN- "
                "and with zero-filled buffers) traced different programs"), **base)
        own = _kernels_platform(closed, "")
        if own and own != platform:
            return LoweredProgram(platform, op_point, shown, error=(
                f"the kernels' compiler parameters are for {own}, and the target is {platform}: a {platform} host "
                "cannot compile them"), **base)
        try:
            traced = jax.jit(bound).trace(*shapes)  # as the device's host traces it: no interpreter
            if jaxpr_flow.fingerprint(traced.jaxpr) != jaxpr_flow.fingerprint(closed):
                return LoweredProgram(platform, op_point, shown, error=(
                    "the candidate traces to a different program for the device than the one parity checks in the "
                    "interpreter: it behaves differently depending on how it is traced"), **base)
            lowered = traced.lower(lowering_platforms=(platform,))
        except Exception as exc:
            return LoweredProgram(platform, op_point, shown, error=_lowering_error(exc), where=_user_frame(exc), **base)
        kernels = stablehlo_flow.kernel_calls(lowered.compiler_ir("stablehlo"), _LOWERED_TARGETS[platform])
        return LoweredProgram(platform, op_point, shown, tuple(kernels), **base)

    def _remember(self, fn: Callable[..., Any], inputs: Sequence[Any], program: Any) -> None:
        key = _program_key(fn, inputs)
        held = self._ran.get(key)
        if held is None or held[0] is not fn:  # first run here (or an id reused by another function)
            self._ran[key] = (fn, program, False)
        elif not held[2] and jaxpr_flow.fingerprint(held[1]) != jaxpr_flow.fingerprint(program):
            self._ran[key] = (fn, held[1], True)

    def _program(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Any, bool]:
        """The first program `run` traced and ran for `fn` at these shapes, and whether a later
        run there traced another; else `fn` traced here as `run` traces it (in interpret mode on
        the CPU), so the program lowered for the device is the one parity checks."""
        held = self._ran.get(_program_key(fn, inputs))
        if held is None or held[0] is not fn:
            bound, arrays = bind_static(fn, inputs)
            with self._mode():
                self._remember(fn, inputs, jax.jit(bound).trace(*_abstract(arrays)).jaxpr)
            held = self._ran[_program_key(fn, inputs)]
        return held[1], held[2]

    def _lowers_for(self, platform: str) -> str:
        """"" when jaxlib here can lower a Pallas kernel for `platform`, else why not: found by
        lowering a kernel of kgate's own, once per process."""
        if platform not in self._lowers_here:
            from jax.experimental import pallas as pl

            def copy(x_ref: Any, o_ref: Any) -> None:
                o_ref[...] = x_ref[...]

            probe = jax.ShapeDtypeStruct((8, 128), jnp.float32)
            try:
                jax.jit(lambda x: pl.pallas_call(copy, out_shape=probe)(x)).trace(probe).lower(
                    lowering_platforms=(platform,))
                self._lowers_here[platform] = ""
            except Exception as exc:
                self._lowers_here[platform] = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        return self._lowers_here[platform]

    def _ablate(self, closed: Any, inputs: Sequence[Any], moved_above: float) -> Ablation:
        try:
            base, perturbed, _ = jaxpr_flow.kernel_experiments(closed, jax.tree_util.tree_leaves(tuple(inputs)))
        except jaxpr_flow.AblationUnsupported as exc:
            return Ablation(False, str(exc))
        return count_moved(_moves(base, perturbed), moved_above)


# The containers a compiled program's outputs may come back in: jax rebuilds them in C++ on every
# call (and a stock namedtuple by its generated constructor). Any other pytree node (a registered
# class, a namedtuple with a constructor of its own, a dataclass) is rebuilt by Python code of the
# module that registered it, on every call of the compiled program: code that can see kgate's frames
# and answer from a cache while the program itself computed something else.
PLAIN_NODES = (tuple, list, dict, type(None), collections.OrderedDict, collections.defaultdict)


def stock_namedtuple(cls: Any) -> bool:
    """Whether `cls` is a namedtuple as `collections.namedtuple` or `typing.NamedTuple` make it, and
    nothing more: a direct subclass of tuple, of the plain metaclass, whose constructor is the one
    `collections.namedtuple` generates for its fields (compared by code), with no `__init__` of its
    own. jax rebuilds it by calling it: that runs only the generated code."""
    fields = getattr(cls, "_fields", None)
    if type(cls) is not type or cls.__bases__ != (tuple,) or not isinstance(fields, tuple) \
            or not all(type(f) is str and f.isidentifier() for f in fields) or cls.__init__ is not tuple.__init__:
        return False
    try:
        stock = collections.namedtuple(cls.__name__, fields).__new__.__code__
        own = cls.__new__.__code__
    except (AttributeError, TypeError, ValueError):
        return False
    made = cls.__new__
    namespace = getattr(made, "__globals__", None)
    # the generated code looks up `_tuple_new` in a namespace of its own: that must still be tuple.__new__,
    # with nothing else there and no closure (a namespace or a function rebuilt around the same code)
    return (all(getattr(own, part) == getattr(stock, part) for part in ("co_code", "co_consts", "co_names", "co_varnames"))
            and getattr(made, "__closure__", None) is None and type(namespace) is dict
            and namespace.get("_tuple_new") is tuple.__new__ and namespace.get("__builtins__") == {}
            and set(namespace) <= {"_tuple_new", "__builtins__", "__name__"})


def _keys(data: tuple[Any, Any]) -> list[Any]:
    """A dict node's keys from its node data (a defaultdict's is its factory and its keys)."""
    kind, aux = data
    if kind is collections.defaultdict and isinstance(aux, tuple) and len(aux) == 2:
        return list(aux[1] or ())
    return list(aux or ())


def refuse_foreign_nodes(tree: Any) -> None:
    """Raise `KernelFailure` where the output structure `tree` (a PyTreeDef) holds a node other
    than tuple, list, dict, None or a stock namedtuple, or a dict keyed by anything but plain str
    and int."""
    foreign: list[str] = []

    def walk(node: Any) -> None:
        data = node.node_data()
        if data is None:
            return
        if data[0] not in PLAIN_NODES and not stock_namedtuple(data[0]):
            foreign.append(f"{data[0].__module__}.{data[0].__qualname__}")
        elif data[0] in (dict, collections.OrderedDict, collections.defaultdict) and any(
                type(key) not in (str, int) for key in _keys(data)):
            # a key's __hash__ and __eq__ run when the dict is rebuilt, on every call
            foreign.append("dict keyed by " + ", ".join(sorted({type(k).__qualname__ for k in _keys(data)
                                                                 if type(k) not in (str, int)})))
        for child in node.children():
            walk(child)

    walk(tree)
    if foreign:
        raise KernelFailure(
            f"the output is built by a pytree node of class {', '.join(sorted(set(foreign)))}: its unflatten is "
            "Python code that runs on every call of the compiled program, after the program computed its "
            "result; return the arrays in tuples, lists or dicts")


def _edged(x: Any) -> bool:
    """Whether the edges change an input leaf: a floating array of two elements or more."""
    return isinstance(x, jax.Array) and bool(jnp.issubdtype(x.dtype, jnp.floating)) and x.size >= 2


def _fresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` behind a new function of the same name: jax's trace caches key on the function, so
    each session traces anew (what a patch changed since shows in its program) and the program's
    text names it the same way every time."""
    def call(*args: Any) -> Any:
        return fn(*args)

    call.__name__ = call.__qualname__ = str(getattr(fn, "__name__", "workload"))
    return call


def _program_sha256(lowered: Any) -> str:
    return hashlib.sha256(lowered.as_text().encode()).hexdigest()


def compiled_sha256(compiled: Any) -> str:
    """The sha256 of the HLO modules XLA compiled, read through what kgate bound at import (source
    locations left out). An object that is not jax's own compiled program answers with what it is
    instead, which no digest equals."""
    if type(compiled) is not _COMPILED or type(compiled._executable) is not _MESH_EXECUTABLE:
        return f"not jax's compiled program (a {type(compiled).__name__})"
    executable = _RUNTIME_EXECUTABLE(compiled._executable)
    if type(executable) is not _LOADED_EXECUTABLE:
        return f"not an XLA executable (a {type(executable).__name__})"
    digest = hashlib.sha256()
    for module in _HLO_MODULES(executable):
        digest.update(_HLO_TEXT(module, _HLO_OPTIONS).encode())
    return digest.hexdigest()


class TimedCall:
    """One leg, compiled ahead of time on fixed input buffers; each call is synchronized.

    `clock` is the perf_counter_ns kgate bound before any candidate code was imported.
    The candidate's last two outputs are kept alive so a new output can never reuse their
    buffers (an answer cached by pointer would otherwise look fresh); the reference's are
    deleted at once, so none of its answers is reachable while the candidate runs.
    """

    def __init__(
        self,
        compiled: Any,
        inputs: Sequence[Any],
        clock: Callable[[], int],
        flush: Callable[[], None] | None = None,
        keep_outputs: bool = True,
    ) -> None:
        self._compiled = compiled
        self._inputs = tuple(inputs)
        self._clock = clock
        self._flush = flush
        self._keep = keep_outputs
        self._alive: list[Any] = []
        self.faults: list[int] = []  # per timed call: the page faults across its window (never rebound)
        self.program_sha256: str | None = None  # the lowered program's digest (compile_timed sets it)
        self.compiled_sha256: str | None = None  # the compiled program's (`compiled_sha256`)

    def __call__(self, take: Callable[[Callable[[], HostTree]], None] | None = None) -> int:
        """Flush the caches (untimed), run once, return the elapsed wall-clock nanoseconds
        from dispatch to completion. `take`, where given, is handed a reader of this call's output
        (on the host) the moment the window closes, before anything is let go (`timed_take`)."""
        if self._flush is not None:
            self._flush()
        clock = self._clock
        faults = _FAULTS()
        t0 = clock()
        out = self._compiled(*self._inputs)
        _SYNC(out)
        t1 = clock()
        self.faults.append(_FAULTS() - faults)
        timed_take(take, out, JaxBackend.to_host)
        if self._keep:
            self._alive = [out, *self._alive[:1]]
        else:
            for leaf in _LEAVES(out):
                if isinstance(leaf, jax.Array):
                    leaf.delete()
        return t1 - t0

    def output(self) -> HostTree:
        out = self._compiled(*self._inputs)
        jax.block_until_ready(out)
        return JaxBackend.to_host(out)



class _CallbackLog(logging.Handler):
    """Keeps the exceptions jax logs when a host callback (the TPU interpreter's memory ops
    run as callbacks) raises: the runtime error that reaches the caller only quotes them."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.raised: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.raised.append(record.exc_info[1])


@contextlib.contextmanager
def _callback_errors() -> Iterator[_CallbackLog]:
    logger = logging.getLogger("jax._src.callback")
    handler = _CallbackLog()
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


_LIBRARY_DIRS = tuple(str(Path(m.__file__).resolve().parent) for m in (jax, np) if getattr(m, "__file__", None))
_INTERPRETER = str(Path(pltpu.__file__).resolve().parents[2] / "_src" / "pallas")
_UNSUPPORTED_WORDS = re.compile(r"not supported|unsupported|not implemented", re.IGNORECASE)


def kernel_failure(exc: BaseException, logged: Sequence[BaseException]) -> KernelFailure | None:
    """The failure as its innermost exception and the kernel's own source line, and whether it
    is the interpreter's limitation; None when `exc` tells it plainly already."""
    inner = logged[-1] if logged else exc
    unsupported = interpreter_limitation(inner)
    if not logged and not unsupported:
        return None
    text = f"{type(inner).__name__}: {inner}".strip().splitlines()[0]
    where = _user_frame(inner)
    if where:
        text += f" (in the kernel at {where})"
    if unsupported:
        text += " (an interpreter limitation: the TPU interpreter cannot run this construct)"
    return KernelFailure(text, unsupported)


def interpreter_limitation(exc: BaseException) -> bool:
    """Raised inside the Pallas interpreter's own code, and of the kind a missing feature
    raises (not implemented, an attribute or type it does not handle, "not supported"), not one
    of its deliberate checks on the kernel (an out-of-bounds read, a race, "not supported on TPU")."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames or not str(Path(frames[-1].filename).resolve()).startswith(_INTERPRETER):
        return False
    message = str(exc)
    if "on TPU" in message or isinstance(exc, IndexError):
        return False
    return isinstance(exc, (NotImplementedError, AttributeError, TypeError, KeyError)) or bool(
        _UNSUPPORTED_WORDS.search(message))


def _user_frame(exc: BaseException) -> str:
    """`file.py:LINE: code` of the innermost frame outside jax and numpy, along the chain of
    causes (the interpreter keeps the kernel's traced stack as the cause)."""
    seen: set[int] = set()
    found = ""
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame in traceback.extract_tb(current.__traceback__):
            path = str(Path(frame.filename).resolve())
            if not path.startswith(_LIBRARY_DIRS) and "/kgate/" not in path and not frame.filename.startswith("<"):
                found = f"{Path(frame.filename).name}:{frame.lineno}: {(frame.line or '').strip()}"[:160]
        if found:
            return found
        current = current.__cause__ or current.__context__
    return found


# The kernel custom calls a lowering for each platform emits (XLA's own fusions are never among them).
_LOWERED_TARGETS = {"tpu": frozenset({"tpu_custom_call"}),
                    "cuda": frozenset({"__gpu$xla.gpu.triton", "mosaic_gpu_v2", "mosaic_gpu"})}


def _program_key(fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Any, ...]:
    """Which program: the function, its array inputs' shapes and dtypes, its static inputs' values."""
    shapes = tuple((tuple(np.shape(x)), str(jnp.dtype(x.dtype))) if not is_static(x) else ("static", repr(x))
                   for x in inputs for x in ([x] if is_static(x) else jax.tree_util.tree_leaves(x)))
    return (id(fn), shapes)


def _rule_module(rule: Any) -> str:
    """Where a registered lowering rule's function was defined (through registry wrappers)."""
    for inner in (getattr(rule, "rule", None), rule[0] if isinstance(rule, tuple) and rule else None, rule):
        module = getattr(inner, "__module__", None)
        if inner is not None and callable(inner) and isinstance(module, str):
            return module
    return ""


def _lowering_rules() -> dict[str, tuple[int, str]]:
    """Every rule in jax's lowering registries a kernel's lowering goes through (primitive
    lowerings, per-platform ones, Pallas's per-backend rules, Mosaic's own): its identity and
    the module its function comes from. {} where this jax keeps them elsewhere."""
    try:
        from jax._src.interpreters import mlir as jmlir
        from jax._src.pallas import core as pallas_core
        from jax._src.pallas.mosaic import lowering as mosaic_lowering
    except ImportError:
        return {}
    tables: list[tuple[str, Any]] = [("lowering of", jmlir._lowerings)]
    tables += [(f"{platform} lowering of", table) for platform, table in list(jmlir._platform_specific_lowerings.items())]
    tables += [("Pallas lowering for", pallas_core._backend_lowering_rules)]
    tables += [(f"Mosaic {core} rule for", table) for core, table in list(mosaic_lowering.lowering_rules.items())]
    return {f"{what} {getattr(key, '__qualname__', key)}": (id(rule), _rule_module(rule))
            for what, table in tables for key, rule in list(table.items())}


def _changed_rules(before: dict[str, tuple[int, str]]) -> list[str]:
    """Rules registered or replaced since `before` whose function comes from outside jax (jax
    registers its own lazily, as its modules load; a candidate's are what this looks for)."""
    if not before:
        return []
    found = []
    for name, (ident, module) in _lowering_rules().items():
        if (name not in before or before[name][0] != ident) and module.split(".")[0] not in ("jax", "jaxlib"):
            found.append(f"{name} {'replaced' if name in before else 'added'} by {module or 'unknown code'}")
    return found


def _kernels_platform(closed: Any, machine: str) -> str | None:
    """The platform to lower for: this machine's accelerator (`machine`), else the one the
    kernels' compiler parameters name, else "tpu"; None when the program calls no kernel."""
    kinds = jaxpr_flow.kernel_compiler_params(closed)  # the jax module of each one's class
    if kinds is None:
        return None
    if machine in ("tpu", "gpu"):
        return "cuda" if machine == "gpu" else "tpu"
    if any("gpu" in k or "triton" in k for k in kinds):
        return "cuda"
    if any("mosaic" in k for k in kinds):
        return "tpu"
    return "" if machine == "" else "tpu"


def _lowering_error(exc: BaseException) -> str:
    """`Type: message`, the message's first lines joined, bounded."""
    message = " ".join(line.strip() for line in str(exc).strip().splitlines()[:3] if line.strip())
    return f"{type(exc).__name__}: {message}"[:900]


def _chip_version(chip: str) -> Any:
    """A TPU generation from its short name (v5e) or from the device kind a TPU reports (TPU v5
    lite, the form a stub's variant records); None when jax knows neither."""
    try:
        return pltpu.ChipVersion(chip)
    except ValueError:
        pass
    try:
        from jax._src.pallas.mosaic.tpu_info import chip_version_from_device_kind
    except ImportError:
        return None
    try:
        return chip_version_from_device_kind(chip)
    except Exception:
        return None


def _abstract(inputs: Sequence[Any]) -> tuple[Any, ...]:
    """Each array input as a ShapeDtypeStruct (abstract inputs stay as they are)."""
    return tuple(jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), x) for x in inputs)


def _elements(leaves: Sequence[Any]) -> int | None:
    """The elements of the arrays among `leaves`; None when there are none (an entry that returns
    nothing, or only Python values: what parity makes of that is its own FAIL, not a size's)."""
    shaped = [x for x in leaves if hasattr(x, "shape")]
    return sum(int(np.prod(x.shape, dtype=np.int64)) for x in shaped) if shaped else None


def _nbytes(leaf: Any) -> int:
    return int(np.prod(leaf.shape, dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
