"""The registered terms of a family and its open experiment, for `--family SLUG` on gate,
parity, measure and verify: the reference and target as the family pinned them, the
op-point, the graded dtype, and the stub's parity spec, class and bar. A flag that
contradicts a registered term is refused with the registered value; nothing is retyped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgate.errors import KgateError
from kgate.jsonio import as_json
from kgate.record import experiment, nopeek
from kgate.record.family import load as load_family
from kgate.record.page import Page
from kgate.record.workspace import NATIVE, Workspace


@dataclass(frozen=True)
class Terms:
    slug: str
    reference: Path  # in the family's worktree
    target: Path  # the candidate's ship path, in the worktree
    overrides: dict[str, Any]
    dtype: str
    parity: str
    klass: str | None  # None while no experiment is open
    bar: str | None
    experiment: str | None  # "<slug> vNNN", or None
    chip: str | None = None  # the TPU device kind of the experiment's variant ("tpu:TPU v5 lite"), or None
    no_peek: tuple[str, ...] = ()  # the open experiment's no-peek list: a candidate reaching an item is refused
    activity: str | None = None
    worktree: Path | None = None  # the family's worktree, where no-peek paths are resolved
    home_repo: Path | None = None  # the worktree's parent repository (its paths count as the worktree's)
    weights: str = "shared"  # a Model reference's weights policy, as the family registered it
    backend: str = "auto"  # the framework the family's checks run with, as it registered it (`--backend`)


def families_around(start: Path) -> list[tuple[str, Path]]:
    """(slug, family folder) of every family of every workspace at `start` or above it (a
    family's worktree holds a copy of the home repo, kgate.toml included: the outer one counts too)."""
    from kgate.record.family import BINDING
    from kgate.record.workspace import FILENAME, load

    found: list[tuple[str, Path]] = []
    for folder in [start.resolve(), *start.resolve().parents]:
        if (folder / FILENAME).is_file():
            try:
                ws = load(folder / FILENAME)
            except KgateError:
                continue
            found += [(b.parent.name, b.parent) for b in sorted(ws.experiments.glob(f"*/{BINDING}"))]
    return found


def family_at(start: Path) -> str | None:
    """The family whose folder (its pages, and its worktree with the work dir) holds `start`."""
    here = start.resolve()
    return next((slug for slug, folder in families_around(start) if here == folder or folder in here.parents), None)


def registered(ws: Workspace, slug: str) -> Terms:
    family = load_family(ws, slug)
    wt = family.worktree
    klass = bar = tag = chip = activity = None
    no_peek: tuple[str, ...] = ()
    parity = family.parity
    try:
        ex = experiment.current(ws, slug)
    except KgateError:
        ex = None  # the family has no open experiment: its own terms only
    if ex is not None:
        front = Page.load(ex.page_path).front
        klass, bar, parity, tag = str(front.get("intervention_class")), str(front.get("bar")), str(front.get("parity")), ex.tag()
        platform, _, kind = str(front.get("variant", "")).partition(":")
        chip = kind if platform == "tpu" and kind else None
        listed = front.get("no_peek") or []
        no_peek, activity = tuple(str(i) for i in (listed if isinstance(listed, list) else [listed])), front.get("activity")
    return Terms(slug, wt / family.reference, wt / family.target, dict(family.op_point), family.graded_dtype, parity,
                 klass, bar, tag, chip, no_peek, None if activity is None else str(activity), wt, ws.home_repo,
                 family.weights, family.backend)


def resolve(terms: Terms, **given: Any) -> dict[str, Any]:
    """The run's settings: each registered term, unless the flag given for it contradicts it
    (refused). `given` holds the flags as typed (None: not given); `candidate` may name any
    file (a scratch kernel), defaulting to the family's target."""
    from kgate.gates.parity import ParitySpec
    from kgate.problem.model import parse_weights

    where = f"family {terms.slug}" + (f" ({terms.experiment})" if terms.experiment else "")
    checks = {
        "reference": (terms.reference, lambda a, b: Path(a).resolve() == Path(b).resolve(), "--reference"),
        # a --set agrees when every key it sets is registered with that value (a part of the op-point, typed again)
        "overrides": (terms.overrides, lambda a, b: all(k in b and as_json(v) == as_json(b[k]) for k, v in dict(a).items()),
                      "--set"),
        "dtype": (terms.dtype, lambda a, b: a == b, "--dtype"),
        "parity": (terms.parity, lambda a, b: ParitySpec.parse(str(a)).describe() == ParitySpec.parse(str(b)).describe(),
                   "--parity"),
        "klass": (terms.klass, lambda a, b: a == b, "--class"),
        "bar": (terms.bar, lambda a, b: " ".join(str(a).split()) == " ".join(str(b).split()), "--bar"),
        "weights": (terms.weights, lambda a, b: parse_weights(str(a)) == parse_weights(str(b)), "--weights"),
        "backend": (terms.backend, lambda a, b: a == b, "--backend"),
    }
    out: dict[str, Any] = {"candidate": given.get("candidate") or terms.target}
    if terms.dtype == NATIVE and "dtype" in given:  # the reference makes its own dtype: no --dtype can be given
        if given["dtype"] is not None:
            raise KgateError(f"--dtype {given['dtype']} contradicts the {where} registered dtype: the one its "
                             "reference makes (it takes no dtype).",
                             f"drop --dtype: --family {terms.slug} runs in the reference's own dtype.")
        checks.pop("dtype")
        out["dtype"] = None
    for name, (value, same, flag) in checks.items():
        if name not in given:
            continue
        typed = given[name]
        if typed is not None and typed != {} and value is not None and not same(typed, value):
            shown = _shown(flag, value)
            raise KgateError(f"{flag} {_shown(flag, typed, bare=True)} contradicts the {where} registered {shown}.",
                             f"drop {flag}: --family {terms.slug} supplies it (other terms need a new experiment).")
        out[name] = value if value is not None else typed
    if "overrides" in given:  # the op-point alone, for a command that runs at TINY over it (gate, lower, sweep)
        out["registered"] = dict(terms.overrides or {})
    if "chip_kind" in given:  # the chip VMEM is compared with: as given, else the experiment's TPU variant
        out["chip_kind"] = given["chip_kind"] or terms.chip
    # the stub's activity constraint: a candidate reaching a no-peek item is not checked under the family's terms
    if terms.no_peek and terms.worktree is not None:
        nopeek.refuse([Path(out["candidate"])], terms.worktree, list(terms.no_peek), also=terms.home_repo,
                      activity=terms.activity)
    return out


def _shown(flag: str, value: Any, bare: bool = False) -> str:
    if flag == "--set":
        text = " ".join(f"{k}={v}" for k, v in dict(value).items()) or "(none: CONFIG as shipped)"
    else:
        text = str(value)
    return text if bare else f"{flag} {text}"
