"""The `Model` protocol (KernelBench, and its JAX translations) loaded unchanged.

Such a module defines `class Model` (`__init__(*get_init_inputs())`, `forward(*get_inputs())`),
module-level shape globals (`batch_size = 4096`), `get_inputs()` and `get_init_inputs()`; a
candidate defines `ModelNew` (KernelBench) or `Model` (the JAX translations, which add
`set_weights(weights_dict)`). kgate reads it as the CONFIG protocol: the shape globals are the
op-point, `get_inputs` makes the inputs, and the entry is a method of an instance built at the
op-point; the candidate's instance is given the reference instance's weights, so parity
compares computation, not initialization. No framework is imported here: arrays are whatever
the module holds (anything with a shape and a dtype).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import inspect
import math
import random
import types
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from kgate.errors import KgateError, describe

CANDIDATE_CLASSES = ("ModelNew", "Model")  # looked for in this order in a candidate module
DEFAULT_METHOD = "forward"
_NOT_SHAPES = frozenset({"CONFIG", "TINY"})
_MAX_DEPTH = 8  # how far into an instance's attributes weights are looked for

Path_ = tuple[Any, ...]  # a weight's place in an instance: attribute names, dict keys, list indices


def is_model_module(module: types.ModuleType) -> bool:
    """Whether the module follows the Model protocol: a `Model` class (or `ModelNew`) and no
    CONFIG dict (a module with both keeps the CONFIG protocol)."""
    ns = vars(module)
    has_class = any(isinstance(ns.get(name), type) for name in CANDIDATE_CLASSES)
    return has_class and not isinstance(ns.get("CONFIG"), dict)


def model_class(module: types.ModuleType, path: Path, role: str) -> type:
    """The class kgate builds: the reference's `Model`; a candidate's `ModelNew`, else its `Model`."""
    names = ("Model",) if role == "reference" else CANDIDATE_CLASSES
    for name in names:
        cls = vars(module).get(name)
        if isinstance(cls, type):
            return cls
    why = "the reference follows the Model protocol, but " if role == "candidate" else ""
    raise KgateError(f"{why}{role} module {path} defines no class {' or '.join(names)}.",
                     f"define class {names[0]} with __init__(*get_init_inputs()) and forward(*inputs).")


def _is_plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_is_plain(v) for v in value)
    return isinstance(value, (bool, int, float, str))


def shape_global_names(module: types.ModuleType, source: str) -> list[str]:
    """The module's op-point: globals assigned at its top level (so not imported) whose value is
    a plain number, string or tuple of them (`batch_size = 16`, `dim = 1024 * 2`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    assigned: list[str] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and name.id not in assigned:
                    assigned.append(name.id)
    ns = vars(module)
    return [n for n in assigned
            if n in ns and not n.startswith("_") and n not in _NOT_SHAPES and _is_plain(ns[n])]


class ShapeGlobals(MutableMapping[str, Any]):
    """A Model-protocol module's op-point, read and rebound in the module itself: setting
    `batch_size` here rebinds the module's global, which `get_inputs` reads when called."""

    noun = "shape global"

    def __init__(self, module: types.ModuleType, names: list[str]) -> None:
        self._module = module
        self._names = list(names)
        self.protocols: list[ModelProtocol] = []  # instances to rebuild when these change (`config_set`)

    def __getitem__(self, key: str) -> Any:
        if key not in self._names:
            raise KeyError(key)
        return vars(self._module)[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self._names:
            self._names.append(key)
        setattr(self._module, key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self._names:
            raise KeyError(key)
        self._names.remove(key)
        vars(self._module).pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return repr(dict(self))


def _is_array(value: Any) -> bool:
    """An array with values (jax, numpy, torch): a shape, a dtype and a host copy; not a
    `jax.ShapeDtypeStruct` (a shape and a dtype only) a kernel may keep on `self`."""
    return (not isinstance(value, type) and hasattr(value, "shape") and hasattr(value, "dtype")
            and hasattr(value, "__array__"))


def _children(value: Any) -> list[tuple[Any, Any]] | None:
    """A container's or an object's (key, value) pairs to look into; None for a leaf."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                          str, bytes, int, float, complex, bool)) or value is None:
        return None
    ns = getattr(value, "__dict__", None)
    return [(k, v) for k, v in ns.items() if not k.startswith("__")] if isinstance(ns, dict) else None


def _state_dict(obj: Any) -> dict[str, Any] | None:
    """A module's own state by name (a torch `nn.Module`: parameters and buffers, as
    `state_dict` names them), or None for an object without `state_dict`/`load_state_dict`."""
    get, load = getattr(obj, "state_dict", None), getattr(obj, "load_state_dict", None)
    if isinstance(obj, type) or not callable(get) or not callable(load):
        return None
    try:
        state = get(keep_vars=True)
    except TypeError:
        return None
    return {str(k): v for k, v in state.items() if _is_array(v)} if isinstance(state, Mapping) else None


def named_arrays(obj: Any) -> dict[Path_, Any]:
    """Every array an instance holds, by its place (`self.weight`, `self.layers[0]["w"]`), in a
    stable order; a module with a state dict (torch) by its state dict's names."""
    state = _state_dict(obj)
    if state is not None:
        return {(name,): value for name, value in state.items()}
    found: dict[Path_, Any] = {}
    seen: set[int] = set()

    def walk(value: Any, path: Path_) -> None:
        if id(value) in seen or len(path) > _MAX_DEPTH:
            return
        seen.add(id(value))
        if _is_array(value):
            found[path] = value
            return
        for key, child in _children(value) or ():
            walk(child, (*path, key))

    for key, child in _children(obj) or ():
        walk(child, (key,))
    return found


def dotted(path: Path_) -> str:
    """A weight's name as state dicts write it: `layers.0.weight`."""
    return ".".join(str(p) for p in path)


def _assign(obj: Any, path: Path_, value: Any) -> None:
    holder = obj
    for key in path[:-1]:
        holder = holder[key] if isinstance(holder, (dict, list, tuple)) else getattr(holder, key)
    last = path[-1]
    if isinstance(holder, tuple):
        raise KgateError(f"the candidate holds {dotted(path)} in a tuple, which kgate cannot give a weight to.",
                         "keep weights in attributes, lists or dicts, or define set_weights(weights_dict).")
    if isinstance(holder, (dict, list)):
        holder[last] = value
    else:
        setattr(holder, last, value)


def _host(value: Any) -> np.ndarray:
    """A host copy: a torch tensor detached, on the CPU, bfloat16 widened to float32 (numpy
    has no bfloat16 of its own; the widening is exact)."""
    import numpy as np  # on first use: the CLI loads this module without needing numpy

    detach = getattr(value, "detach", None)
    if callable(detach) and not isinstance(value, np.ndarray):
        value = detach().cpu()
        if "bfloat16" in str(value.dtype):
            value = value.float()
        return np.asarray(value.numpy())
    return np.asarray(value)


def weights_sha256(arrays: Mapping[Path_, Any]) -> str:
    """The weights' names, shapes, dtypes and bytes: two processes built the same instance
    exactly when these agree."""
    import numpy as np  # on first use: the CLI loads this module without needing numpy

    h = hashlib.sha256()
    for path in sorted(arrays, key=dotted):
        host = _host(arrays[path])
        h.update(f"{dotted(path)}|{host.shape}|{host.dtype}|".encode())
        h.update(np.ascontiguousarray(host).tobytes())
    return h.hexdigest()


def share_weights(reference: Any, candidate: Any) -> str:
    """Give the candidate instance the reference instance's weights; how it was done.

    Through the candidate's `set_weights(weights_dict)` where it has one (it may store them in
    its own layout, so only the names it keeps are checked); otherwise by name, refused with
    the names that do not line up."""
    given = named_arrays(reference)
    by_name = {dotted(p): a for p, a in given.items()}
    setter = getattr(candidate, "set_weights", None)
    if callable(setter):
        before = {dotted(p): _content(a) for p, a in named_arrays(candidate).items()}
        try:
            setter(dict(by_name))
        except Exception as exc:
            raise KgateError(
                f"the candidate's set_weights refused the reference's weights ({', '.join(by_name) or 'none'}): "
                f"{describe(exc)}.",
                "make set_weights take the reference's names (those of its Model instance's attributes), "
                "or drop set_weights and name the candidate's attributes as the reference's.") from exc
        # A weight under the reference's name whose values set_weights left as they were, and
        # that differs from the one given: set_weights ignored it. One whose values it changed
        # (cast, transposed, padded, in place or anew) is its own layout: parity judges that.
        kept = {dotted(p): a for p, a in named_arrays(candidate).items()}
        ignored = [n for n, a in by_name.items()
                   if n in kept and before.get(n) == _content(kept[n]) and not _same(kept[n], a)]
        if ignored:
            raise KgateError(
                f"the candidate's set_weights left its own {', '.join(ignored)} in place: they differ from the "
                "reference's weights it was given.",
                "make set_weights store the weights it is given (cast or re-lay them, but from those values).")
        return "set_weights"
    stateful = _state_dict(candidate) is not None and _state_dict(reference) is not None
    have = named_arrays(candidate)
    names = {dotted(p): p for p in have}
    missing = [n for n in by_name if n not in names]
    # arrays of its own besides the reference's (a constant table, a scale) are the candidate's business
    extra = [n for n, p in names.items() if n not in by_name and _is_floating(have[p])] if missing else []
    shapes = [f"{n} {tuple(_host(have[names[n]]).shape)} vs {tuple(_host(a).shape)}"
              for n, a in by_name.items() if n in names and tuple(_host(have[names[n]]).shape) != tuple(_host(a).shape)]
    if missing or shapes:
        parts = [f"the reference has {', '.join(missing)} and the candidate does not" if missing else "",
                 f"the candidate has {', '.join(extra)} and the reference does not" if extra else "",
                 f"shapes differ: {'; '.join(shapes)}" if shapes else ""]
        raise KgateError(
            "the candidate's weights do not line up with the reference's by name: "
            + "; ".join(p for p in parts if p) + ".",
            "name the candidate's weights as the reference's (same attributes, same shapes), or give it "
            "set_weights(weights_dict), which receives the reference's weights by those names.")
    if stateful:  # torch: copied into the candidate's own parameters and buffers
        try:
            candidate.load_state_dict(dict(by_name), strict=False)
        except Exception as exc:
            raise KgateError(f"the candidate's load_state_dict refused the reference's weights: {describe(exc)}.",
                             "name and shape the candidate's parameters as the reference's.") from exc
        return "load_state_dict"
    for name, value in by_name.items():
        _assign(candidate, names[name], value)
    return "by name"


SHARED = "shared"


def parse_weights(text: str) -> str:
    """`--weights`: `shared` (the reference's own, as it builds them) or `random[:SEED]` (seeded
    random values for every floating weight, default seed 0), as a policy string legs carry."""
    name, _, seed = text.strip().partition(":")
    if name == SHARED and not seed:
        return SHARED
    if name == "random" and (not seed or (seed.isascii() and seed.isdigit())):
        return f"random:{int(seed or 0)}"
    raise KgateError(f"--weights {text!r} is neither shared nor random[:SEED].",
                     "use --weights shared (the reference's weights as it builds them) or --weights random "
                     "(or random:7 for another seed).")


def randomize(instance: Any, seed: int) -> list[str]:
    """Replace every floating weight of `instance` with seeded random values of its shape and
    dtype, uniform in +-1/sqrt(fan) with fan its size over its smallest dimension (1 for a
    vector): outputs keep a unit scale through a matmul whichever way the weight is laid out.
    Each new array is made by the old one's own array library (`__array_namespace__`).
    Returns the names replaced; integer arrays (indices, counts) keep their values."""
    import numpy as np

    rng = np.random.default_rng(seed)
    replaced: list[str] = []
    arrays = named_arrays(instance)
    for path in sorted(arrays, key=dotted):
        old = arrays[path]
        host = _host(old)
        if not _is_floating(old) or host.ndim == 0 or host.size == 0:
            continue  # a 0-d float is a constant (eps, a scale), not a weight
        fan = host.size / min(host.shape)
        values = rng.uniform(-1.0, 1.0, host.shape) / math.sqrt(max(fan, 1))
        namespace = getattr(old, "__array_namespace__", None)
        new = values.astype(host.dtype)
        if callable(getattr(old, "detach", None)) and callable(getattr(old, "new_tensor", None)):
            old.detach().copy_(old.new_tensor(new))  # a torch parameter or buffer: in place, as a module keeps it
        else:
            _assign(instance, path, namespace().asarray(new) if callable(namespace) else new)
        replaced.append(dotted(path))
    return replaced


def _content(value: Any) -> str:
    """An array's shape, dtype and bytes, by digest."""
    return weights_sha256({(): value})


def _is_floating(value: Any) -> bool:
    return "float" in str(getattr(value, "dtype", ""))


def _same(a: Any, b: Any) -> bool:
    import numpy as np

    try:
        x, y = _host(a), _host(b)
        return x.shape == y.shape and bool(np.array_equal(x.astype(np.float64), y.astype(np.float64), equal_nan=True))
    except Exception:
        return False


# Each array library's own global generator, seeded for a construction: a backend adds its own
# (torch's `manual_seed`) when it loads, so this module never imports one.
SEEDERS: list[Callable[[int], contextlib.AbstractContextManager[Any]]] = []


@contextlib.contextmanager
def seeded(seed: int = 0) -> Iterator[None]:
    """Python's and numpy's global generators seeded for one construction (as KernelBench seeds
    torch before building a model), then put back: a reference whose __init__ draws from them
    builds the same weights in every process. An unseeded `np.random.default_rng()` gets the
    next of a fixed sequence of seeds."""
    import numpy as np

    state, np_state = random.getstate(), np.random.get_state()
    make_rng = np.random.default_rng
    drawn = iter(range(seed, seed + 1_000_000))

    def default_rng(given: Any = None, *args: Any, **kwargs: Any) -> Any:
        return make_rng(next(drawn) if given is None else given, *args, **kwargs)

    random.seed(seed)
    np.random.seed(seed)
    np.random.default_rng = default_rng  # type: ignore[assignment]
    try:
        with contextlib.ExitStack() as libraries:
            for seeder in SEEDERS:
                libraries.enter_context(seeder(seed))
            yield
    finally:
        np.random.default_rng = make_rng  # type: ignore[assignment]
        random.setstate(state)
        np.random.set_state(np_state)


class ModelProtocol:
    """One module's Model instance, built at the op-point its shape globals hold now (rebuilt
    when they change; instances are kept per op-point). A candidate's instance takes its
    arguments from the reference's `get_init_inputs` and its weights from the reference's
    instance (`source`)."""

    def __init__(self, module: types.ModuleType, path: Path, role: str, cls: type,
                 init_inputs: Callable[[], Any], shapes: ShapeGlobals, source: ModelProtocol | None = None,
                 weights: str = SHARED) -> None:
        self.module, self.path, self.role, self.cls = module, path, role, cls
        self.shapes = shapes
        self.policy = source.policy if source is not None else weights
        self._randomized: list[str] = []
        self._init_inputs = init_inputs
        self._source = source
        self._instances: dict[str, Any] = {}
        # per op-point: how the candidate got the reference's weights, and their digest as given
        # (the parent checks it against the reference leg's)
        self._given: dict[str, tuple[str, str]] = {}
        # per op-point, as built: the instance, its type and attributes (kept alive: compared by
        # identity, an id cannot be reused), and its weights' digest
        self._built: dict[str, tuple[Any, type, dict[str, Any], str]] = {}

    def _key(self) -> str:
        shapes = self._source.shapes if self._source is not None else self.shapes
        return repr(sorted(shapes.items()))

    def instance(self) -> Any:
        key = self._key()
        if key not in self._instances:
            self._instances[key] = self._build(key)
        return self._instances[key]

    def _build(self, key: str) -> Any:
        shapes = self._source.shapes if self._source is not None else self.shapes
        try:
            with seeded():
                args = self._init_inputs()
                obj = self.cls(*(args if isinstance(args, (list, tuple)) else [args]))
        except KgateError:
            raise
        except Exception as exc:
            raise KgateError(
                f"building the {self.role}'s {self.cls.__name__}(*get_init_inputs()) from {self.path.name} at "
                f"{', '.join(f'{k}={v}' for k, v in shapes.items()) or 'its op-point'} raised {describe(exc)}.",
                f"check the reference's get_init_inputs() and {self.cls.__name__}.__init__ at this op-point "
                "(run the module by hand).") from exc
        if self._source is None and self.policy != SHARED:
            self._randomized = randomize(obj, int(self.policy.partition(":")[2]))
        if self._source is not None:
            given = self._source.instance()
            sha = weights_sha256(named_arrays(given))
            self._given[key] = (share_weights(given, obj), sha)
        self._built[key] = (obj, type(obj), _attributes(obj), weights_sha256(named_arrays(obj)))
        return obj

    def changes(self) -> list[str]:
        """What happened to the instances since they were built: one swapped for another, its
        class changed, an attribute rebound, added (a method shadowed on the instance) or
        deleted. A Model whose own methods set attributes as they run is one too: the reference
        is what it was when built."""
        found: list[str] = []
        label = f"the {self.role}'s {self.cls.__name__} instance"
        for key, (built, cls, attrs, _) in self._built.items():
            obj = self._instances.get(key)
            if obj is not built:
                found.append(f"{label} was replaced")
                continue
            if type(obj) is not cls:
                found.append(f"{label} had its class changed to {type(obj).__name__}")
            now = _attributes(obj)
            found += [f"{label}.{k} was rebound" for k in attrs if k in now and now[k] is not attrs[k]]
            found += [f"{label}.{k} was deleted" for k in attrs if k not in now]
            found += [f"{label}.{k} was added" for k in now if k not in attrs]
        return found

    def keep_current(self) -> None:
        """Let go of the instances built for other op-points (the odd shape's, the full one's
        built while checking an override): they hold weights of their size."""
        key = self._key()
        for other in [k for k in self._instances if k != key]:
            self._instances.pop(other)
            self._built.pop(other, None)
            self._given.pop(other, None)

    def weights(self) -> dict[str, Any]:
        """What the receipt says of the weights: names, their digest as built, the policy, and
        for a candidate how it was given the reference's and their digest as given."""
        arrays = named_arrays(self.instance())
        out: dict[str, Any] = {"names": [dotted(p) for p in arrays], "sha256": self._built[self._key()][3],
                               "policy": self.policy}
        if self._randomized:
            out["randomized"] = list(self._randomized)
        if self._key() in self._given:
            out["shared_by"], out["given_sha256"] = self._given[self._key()]
        return out


def weights_mismatch(reference: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[str]:
    """The reference's weights as its own leg built them against those the candidate's leg was
    given (both legs' `to_json`): they differ when the reference's __init__ is not deterministic,
    or when something in the candidate's process changed them before they were given."""
    built = ((reference.get("model") or {}).get("weights") or {}).get("sha256")
    given = ((candidate.get("model") or {}).get("weights") or {}).get("given_sha256")
    if not built or built == given:
        return []
    if not given:
        return ["the candidate's process reported no digest of the reference's weights it was given"]
    return [f"the reference's Model weights given to the candidate (sha256 {given[:12]}) are not those the "
            f"reference's own process built (sha256 {built[:12]}): its __init__ draws from an unseeded source, "
            "or the candidate's process changed them"]


class ModelEntry:
    """The entry kgate calls: a method of the instance built at the current op-point."""

    def __init__(self, protocol: ModelProtocol, method: str) -> None:
        function = getattr(protocol.cls, method, None)
        kind = inspect.getattr_static(protocol.cls, method, None)
        if not callable(function):
            methods = sorted(n for n, v in vars(protocol.cls).items() if callable(v) and not n.startswith("_"))
            flag = "--entry" if protocol.role == "candidate" else "--reference-entry"
            raise KgateError(
                f"{protocol.role} class {protocol.cls.__name__} in {protocol.path} has no method {method!r}"
                f"{' (methods: ' + ', '.join(methods) + ')' if methods else ''}.",
                f"define {method}(self, *inputs) on it, or name the method with {flag} NAME.")
        self._protocol, self._method = protocol, method
        # The method is resolved now, from the class: the reference's entry is bound before the
        # candidate is imported, and an attribute set on the instance later does not shadow it.
        self._function, self._bound = function, isinstance(kind, (staticmethod, classmethod))
        self.__name__ = method
        self.__qualname__ = f"{protocol.cls.__name__}.{method}"
        try:
            signature = inspect.signature(function)
            params = list(signature.parameters.values())
            self.__signature__ = signature.replace(parameters=params if self._bound else params[1:])
        except (TypeError, ValueError):
            pass

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._bound:
            return self._function(*inputs, **kwargs)
        return self._function(self._protocol.instance(), *inputs, **kwargs)

    def instance(self) -> Any:
        return self._protocol.instance()

    def on(self, instance: Any) -> Callable[..., Any]:
        """The same method called on another instance (a copy of the Model cast for the oracle)."""
        if self._bound:
            return self
        return lambda *inputs, **kwargs: self._function(instance, *inputs, **kwargs)


def _attributes(obj: Any) -> dict[str, Any]:
    ns = getattr(obj, "__dict__", None)
    return dict(ns) if isinstance(ns, dict) else {}


def make_inputs(module: types.ModuleType) -> Callable[[], tuple[Any, ...]]:
    """`create_inputs` for a Model module: its `get_inputs()`, read when called (it reads the
    shape globals as they are then)."""
    def create_inputs() -> tuple[Any, ...]:
        fn = vars(module).get("get_inputs")
        if not callable(fn):
            raise KgateError(f"{module.__file__} follows the Model protocol but has no get_inputs function.",
                             "define get_inputs() returning the list of forward's inputs.")
        made = fn()
        return tuple(made) if isinstance(made, (list, tuple)) else (made,)
    return create_inputs


def init_inputs_of(module: types.ModuleType) -> Callable[[], Any]:
    def get() -> Any:
        fn = vars(module).get("get_init_inputs")
        return fn() if callable(fn) else []  # KernelBench: a model without arguments may omit it
    return get
