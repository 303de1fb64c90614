"""The two probe legs of `gate`, `parity` and verify's checks, each in its own process.

The reference leg imports the reference alone and makes every probe's inputs; the
candidate leg imports the reference module and the candidate, then receives those
inputs (values, never seeds), runs the candidate, audits what ran, and reports. Only
once the candidate's process (and everything it started) is gone does the reference leg
compute the reference's and the oracle's outputs, and send them to the parent over a
pipe. No expected answer exists anywhere while candidate code is alive. Grading happens
in the parent, which imports neither module.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kgate.backends import get_backend, import_frameworks, wire
from kgate.backends.base import EDGE_KINDS, Skip, refuse_if_too_big, write_new
from kgate.errors import KgateError, describe
from kgate.gates import parity
from kgate.gates.parity import DRAWN_LABEL, ODD_LABEL, PAST_LABEL, ROWS_LABEL
from kgate.problem import config_set, load_reference, load_requested_pair
from kgate.verify.seals import TREE, keep, seal
from kgate.verify.spawn import beat
from kgate.verify.watch import Watch


def reference_leg(req: dict[str, Any], wait_for_go: Callable[[], bool]) -> dict[str, Any]:
    """Phase 1: make and hand over every probe's inputs, then wait. Phase 2, once the
    candidate's process is gone: the reference's and the oracle's outputs, sent over a pipe."""
    beat("phase importing the reference")
    backend = get_backend(req.get("backend", "jax"))
    # programs earlier reference legs compiled, loaded only when their bytes hash to the digests
    # the parent holds (kgate.verify.refcache); this process never runs candidate code
    programs = backend.reuse_programs(req.get("programs")) if hasattr(backend, "reuse_programs") else None
    folder = Path(req["workdir"])
    trees: dict[str, Any] = {}
    probes: list[dict[str, Any]] = []
    with load_reference(req["reference"], overrides=req["overrides"], use_tiny=req["use_tiny"],
                        entry=req.get("reference_entry", "workload"), weights=req.get("weights", "shared"),
                        registered=req.get("registered")) as (
            reference, op_point):
        made: list[Any] = []

        def hand_over(probe: dict[str, Any], inputs: Any) -> None:
            probe.update(input_sha256=backend.digest(inputs),
                         file_sha256=backend.save_inputs(inputs, folder / f"inputs-{probe['key']}.pkl"))
            probes.append(probe)
            made.append(inputs)

        beat("phase making inputs")
        backend.refuse_ineffective(reference, req["dtype"], op_point, req["overrides"], req.get("registered"))
        # every probe is held at once: a first estimate (the shape probes at least the op-point's size),
        # and the memory free now, before any input exists; once chosen, each shape counts at its own
        available = backend.available_memory()
        base = tiny_base(reference, op_point.values) if req.get("odd") == "tiny" else {}
        # the shape probes at TINY, or (moved from TINY) the one past the op-point, at most twice its size;
        # the edge battery of one floating input, each probe counted whole, and the edges' rows at a shape
        edges = len(EDGE_KINDS) + 1 if req.get("edges") else 0
        held = len(req["seeds"]) + edges + (3 if req.get("odd") and not base else 0) + (2 if req.get("odd") and base else 0)
        sized = backend.ensure_fits(reference, req["dtype"], held, op_point.values)
        for seed in req["seeds"]:
            inputs, how = backend.create_inputs(reference, seed, req["dtype"])
            hand_over({"key": f"p{len(probes)}", "seed": seed, "seeding": how}, inputs)
        if req.get("edges"):  # from the first seed's inputs
            for label, inputs in backend.edge_inputs(made[0], seed=req["seeds"][-1]):  # the run's drawn seed
                hand_over({"key": f"p{len(probes)}", "seed": req["seeds"][0], "label": label, "seeding": "edge"}, inputs)
        # the candidate's process starts on these while the shape probes' inputs are made
        handed = announce(probes, 0)

        shaped: list[tuple[dict[str, Any], Any]] = []  # the odd and drawn shapes' probes, with their inputs

        def edged_rows_at_a_shape() -> None:
            """With the edge battery on: one more probe at one of the odd and drawn shapes (drawn from
            the run's seed), three rows in four of its inputs taken from the row-wise edges
            (`backend.mixed_inputs`), since the battery runs at the first seed's shapes alone; a probe
            of its own, so a reference those rows make non-finite loses it alone, not the shape."""
            if not req.get("edges") or not shaped:
                return
            probe, inputs = shaped[req["seeds"][-1] % len(shaped)]
            hand_over({"key": f"p{len(probes)}", "seed": probe["seed"], "label": ROWS_LABEL,
                       "seeding": probe["seeding"], "config": probe["config"]},
                      backend.mixed_inputs(inputs, req["seeds"][-1]))

        beat("phase making the shape probes' inputs")
        odd_note = ""
        # the shapes move from `base` over the op-point: from the op-point itself (the gate's, TINY
        # already), or, at a verified op-point, from TINY (a kernel right only at the op-point's
        # shapes meets other ones at the cost of TINY's), the drawn sizes up to the op-point's scale
        # (a tail wrong only past several tiles is met too); each probe's config is whole from there
        at_op_point = backend.footprint(reference, req["dtype"]) if base and sized else None
        with config_set(base, reference.config) if base else contextlib.nullcontext():
            values = {**op_point.values, **base}
            odd = odd_op_point(backend, reference, req["dtype"], values) if req.get("odd") and sized else None
            if req.get("odd") and not odd:
                odd_note = ("no odd-shape probe: " + ("create_inputs cannot be sized by shapes alone (it needs "
                            "concrete values)" if not sized else "the reference accepts no integer size "
                            "made odd (3 x 2^a - 1, or plus one), or its shapes do not follow its op-point (CONFIG "
                            "or shape globals)"))
            if odd:
                room = shape_room(backend, reference, req["dtype"], available, len(made), op_point.values, [odd],
                                  at_op_point)
                with config_set(odd, reference.config):
                    inputs, how = backend.create_inputs(reference, req["seeds"][0], req["dtype"])
                hand_over({"key": f"p{len(probes)}", "seed": req["seeds"][0], "label": ODD_LABEL, "seeding": how,
                           "config": {**base, **odd}}, inputs)
                shaped.append((probes[-1], inputs))
                # two more shapes, from the run's drawn seed: which sizes move, and by how much
                shapes = drawn_op_points(backend, reference, req["dtype"], values, req["seeds"][-1], odd, room,
                                         ceiling=op_point.values if base else None, at_op_point=at_op_point)
                if len(shapes) < 2:
                    odd_note = (f"{len(shapes)} of 2 drawn-shape probes: no other draw of {DRAWS} the reference accepts, "
                                "that builds another program, and fits (at most 4x the bytes of the shape they move "
                                "from or the op-point's bytes, and the memory left)")
                for n, drawn in enumerate(shapes, 1):
                    with config_set(drawn, reference.config):
                        inputs, how = backend.create_inputs(reference, req["seeds"][-1], req["dtype"])
                    hand_over({"key": f"p{len(probes)}", "seed": req["seeds"][-1], "label": f"{DRAWN_LABEL}{n}",
                               "seeding": how, "config": {**base, **drawn}}, inputs)
                    shaped.append((probes[-1], inputs))
                edged_rows_at_a_shape()
                if base:  # a verified op-point: one size past it (a kernel right up to the op-point's sizes only)
                    room = shape_room(backend, reference, req["dtype"], available, len(made), op_point.values,
                                      [], at_op_point)
                    past = past_op_point(backend, reference, req["dtype"], op_point.values, base, req["seeds"][-1],
                                         room, at_op_point)
                    if past is None:
                        odd_note = ((odd_note + "; ") if odd_note else "") + (
                            f"no probe past the op-point: no draw of {DRAWS} that moves one size past the op-point's "
                            "the reference accepts and that fits (at most twice the op-point's bytes, and the memory "
                            "left)")
                    else:
                        with config_set(past, reference.config):
                            inputs, how = backend.create_inputs(reference, req["seeds"][-1], req["dtype"])
                        hand_over({"key": f"p{len(probes)}", "seed": req["seeds"][-1], "label": PAST_LABEL,
                                   "seeding": how, "config": {**base, **past}}, inputs)
        announce(probes[handed:], 1)
        arithmetic: dict[str, Any] | None = None
        if req.get("reference_arithmetic") and made and hasattr(backend, "arithmetic"):
            beat("phase counting the reference's arithmetic")  # while the candidate's process runs
            try:
                arithmetic = backend.arithmetic(reference.entry, made[0]).to_json()
            except Exception as exc:  # an op-by-op reference that cannot be traced whole
                arithmetic = {"outside": 0.0, "kernel_calls": 0, "error": f"not traced ({describe(exc, 160)})"}
        beat("phase waiting")
        if not wait_for_go():
            raise KgateError("the grading process stopped the reference leg.", "re-run the command.")
        self_check = ""
        for inputs, probe in zip(made, probes):
            key, seed = probe["key"], probe["seed"]
            beat(f"phase reference and oracle outputs on probe {key}")
            try:
                with config_set(probe.get("config", {}), reference.config):
                    ref_out = backend.run(reference.entry, inputs, eager=reference.eager)
                    oracle = _oracle(backend, reference, inputs, ref_out, probe)
                    reordered = _reordered(backend, reference, inputs, probe)
            except Exception as exc:
                if probe.get("label"):  # an edge the reference itself cannot take: skipped, and said
                    probe["reference_error"] = describe(exc)
                    continue
                raise KgateError(
                    f"the reference {reference.path.name} failed on seed {seed}: {describe(exc)}",
                    "fix the reference module; kgate cannot grade against a reference that does not run.",
                ) from exc
            if not probe.get("label") and not self_check:
                self_check = _self_consistent(backend, reference, inputs, ref_out, oracle, seed)
            trees[f"{key}-inputs"] = backend.to_host(tuple(x for x in inputs if not backend.is_static(x)))
            trees[f"{key}-reference"] = ref_out
            trees[f"{key}-oracle"] = oracle
            if reordered is not None:
                trees[f"{key}-reordered"] = reordered
        reference_compiled = None
        reference_essential = ""
        uncompiled = ""
        if req.get("reference_compiled") and made:
            try:
                reference_compiled = backend.compiled_text(reference.entry, made[0])
                if hasattr(backend, "essential_text"):  # its own operations that did nothing, left out
                    reference_essential = backend.essential_text(reference.entry, made[0])
            except Exception as exc:
                if not reference.eager:
                    raise
                uncompiled = f"the reference runs op by op and cannot be compiled whole ({describe(exc, 160)})"
        _send(trees)
        return {
            "status": "DONE",
            "probes": probes,
            "reference": reference.to_json(),
            "op_point": op_point.to_json(),
            "has_tiny": bool(vars(reference.module).get("TINY")),
            "reference_compiled": reference_compiled,
            "reference_essential": reference_essential,
            "reference_uncompiled": uncompiled,
            "reference_arithmetic": arithmetic,
            "odd_note": odd_note,
            "static_inputs": backend.static_inputs(made[0]) if made else [],
            "reference_self_check": self_check or "not run",
            "device": backend.device().to_json(),
            "interpreted": backend.interpreted,
            "programs": programs.report() if programs is not None else None,
        }




INPUT_BEAT = "input "  # one probe whose inputs are made, on the beat channel
INPUTS_DONE_BEAT = "inputs end "  # the end of a batch of them
PROBE_KEY = re.compile(r"p[0-9]{1,4}")


def announce(probes: list[dict[str, Any]], batch: int) -> int:
    """Tell the parent, on the beat channel (a pipe only it reads: nothing on disk to forge or
    plant first), which probes' inputs are ready, one line each, and what it needs to hand them
    over, never a seed: the candidate's process, alive now, can read this folder (the seeds come
    back in the result, once it is gone). How many were told."""
    for probe in probes:
        beat(INPUT_BEAT + json.dumps({k: v for k, v in probe.items() if k != "seed"}))
    beat(f"{INPUTS_DONE_BEAT}{batch} {len(probes)}")
    return len(probes)


SELF_CHECK_FIX = (
    "re-run with XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type= (it turns off the XLA:CPU fusion known to "
    "miscompile a matmul against all-zero weights on jaxlib 0.10.2; it also changes some programs' numerics and "
    "timings), or use other op-point inputs; report the program to the jax project.")


def _self_consistent(backend: Any, reference: Any, inputs: Any, ref_out: Any, oracle: Any, seed: int) -> str:
    """The reference's compiled program against the same reference run op by op, on the first
    seed: a compiler that got the reference wrong must never be graded against. Raises when
    they disagree far beyond rounding; what was checked otherwise."""
    if reference.eager:
        return "not needed: the reference runs op by op already"
    try:
        eager = backend.run_eager(reference.entry, inputs)
    except Exception as exc:
        return f"not checked: the reference cannot run op by op ({describe(exc)})"
    found = parity.self_disagreement(ref_out, eager, oracle)
    if found:
        raise KgateError(
            f"the reference's compiled program disagrees with itself on seed {seed}: {found}. Run op by op, the same "
            f"reference {reference.path.name} gives another answer: the compiler got it wrong here, and kgate never "
            "grades a candidate against a reference its compiler got wrong.",
            SELF_CHECK_FIX,
        )
    return f"compiled and op-by-op runs agree on seed {seed}"


def _reordered(backend: Any, reference: Any, inputs: Any, probe: dict[str, Any]) -> Any:
    """The reference with its floating sums taken in sequence (kgate.backends.reorder): the
    floor's second measurement, where an oracle to measure against exists. None where it cannot
    be had, said in `reordered_note` (the floor is then the reference's own error alone)."""
    if probe.get("oracle_kind") == "reference":
        return None
    if reference.eager or not hasattr(backend, "run_reordered"):
        why = "it runs op by op" if reference.eager else f"the {backend.name} backend does not take sums in another order"
        probe["reordered_note"] = (f"the floor is the reference's own error alone ({why}): an honest kernel that sums "
                                   "in another order can be off by more than the reference's own order is")
        return None
    try:
        return backend.run_reordered(reference.entry, inputs)
    except Exception as exc:
        probe["reordered_note"] = ("the floor is the reference's own error alone: its sums could not be taken in "
                                   f"another order ({describe(exc, 200)})")
        return None


def _oracle(backend: Any, reference: Any, inputs: Any, ref_out: Any, probe: dict[str, Any]) -> Any:
    """The reference recomputed with its floating inputs in float32, or in float64 where the
    float32 floor is degenerate. An oracle that fails is the oracle's failure, never the
    reference's: said in `oracle_note`, with the fallback used (float64 -> float32 -> the
    reference's own output, whose zero floor only tightens the grading)."""
    try:
        oracle = backend.run_oracle(reference.entry, inputs, "float32", reference.eager)
    except Exception as exc:
        probe.update(oracle_kind="reference", oracle_note=(
            f"the float32 oracle (the reference recomputed with float32 inputs) failed: {describe(exc).rstrip('.')}; the "
            "reference itself ran, and is graded against its own output (a zero floor: only rounding-level differences pass)"))
        return ref_out
    probe["oracle_kind"] = "float32"
    if parity.floor_is_degenerate(ref_out, oracle):
        try:
            oracle, probe["oracle_kind"] = backend.run_oracle(reference.entry, inputs, "float64", reference.eager), "float64"
            if backend.oracle_fallback:
                probe["oracle_note"] = (
                    "the float64 oracle is the reference run on float64 inputs, not its program widened to float64 "
                    f"throughout ({backend.oracle_fallback.rstrip('.')}): a float32 step inside the reference stays "
                    "float32 in the oracle, which then shares that step's rounding")
        except Exception as exc:
            probe["oracle_note"] = (
                f"the float64 oracle (the reference recomputed with float64 inputs) failed: {describe(exc).rstrip('.')}; the "
                "reference itself ran, and is graded against the float32 oracle (its floor is degenerate here: only "
                "rounding-level differences pass)")
    return oracle


def size_keys(values: Mapping[str, Any]) -> list[str]:
    """The op-point keys that are sizes: positive integers (not booleans)."""
    return [k for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 1]


def tile_unfriendly(n: int) -> int:
    """The smallest size above `n` of the form 3 * 2**a - 1 (2, 5, 11, 23, 47, 95, 191, 383, ...):
    its remainder against every power-of-two tile up to 2**a is the largest there is (all low bits
    set), and against 2**(a+1) it is half a tile. `n + 1` leaves one element past a tile of 2**k
    when n is a multiple of it: a kernel that drops that element's share of a reduction stays
    within rounding, where it cannot here."""
    m = 2
    while m <= n:
        m = 2 * m + 1
    return m


def tiny_base(reference: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """The sizes of the module's TINY that differ from the op-point's `values` (a verified
    op-point's shape probes move from there); empty without a TINY, where they move from the
    op-point itself."""
    tiny = vars(reference.module).get("TINY")
    if not isinstance(tiny, Mapping):
        return {}
    return {k: v for k, v in tiny.items() if k in values and isinstance(v, int) and not isinstance(v, bool)
            and v != values[k]}


def odd_op_point(backend: Any, reference: Any, dtype: str | None, values: Mapping[str, Any]) -> dict[str, int] | None:
    """Sizes that are not multiples of any tile, with large remainders: every integer op-point
    key taken to `tile_unfriendly` size (or, where the reference cannot make that, to size plus
    one), else the first single key so taken that it can (checked by shapes alone, nothing
    allocated), and that builds another program (a hard-coded shape would not). None when it
    accepts none."""
    keys = size_keys(values)
    base = backend.program_signature(reference, dtype)
    steps = (lambda v: tile_unfriendly(v), lambda v: v + 1)
    tries = [{k: step(values[k]) for k in keys} for step in steps] if len(keys) > 1 else []
    tries += [{k: step(values[k])} for k in keys for step in steps]
    for updates in tries:
        try:
            with config_set(updates, reference.config):  # a Model's __init__ may refuse the sizes: next
                if backend.footprint(reference, dtype) is not None and (
                        base is None or backend.program_signature(reference, dtype) != base):
                    return updates
        except Exception:
            continue
    return None


def drawn_size(n: int, rng: random.Random, ceiling: int | None = None) -> int:
    """`n` grown by a drawn amount from 1 to `n`: half the time a power of two (a size that is
    a multiple of a smaller tile only, or of a larger one), otherwise drawn evenly on a log scale
    (a remainder of one element as likely as one of half the size; `tile_unfriendly` always
    leaves the largest). With a `ceiling` (the op-point's size, where `n` is TINY's) more than
    twice `n`: grown the same way from the largest power of two below the ceiling, so at the
    op-point's scale: a kernel whose tail goes wrong only past several of its tiles (wider than
    TINY, and the op-point a whole number of them) meets such a size."""
    if ceiling is not None and ceiling > 2 * n:
        n = 2 ** ((ceiling - 1).bit_length() - 1)
    top = max(n, 1).bit_length()  # 2**(top - 1) <= n
    if rng.random() < 0.5:
        return n + 2 ** rng.randrange(top)
    low = 2 ** rng.randrange(top)
    return n + rng.randint(low, min(2 * low - 1, max(n, 1)))


DRAWS = 8  # tries at each drawn shape


def shape_draws(values: Mapping[str, Any], seed: int,
                ceiling: Mapping[str, Any] | None = None) -> list[list[dict[str, int]]]:
    """The sizes the two drawn shapes try, in order, from `seed` alone. The integer op-point keys
    are split at random in two (with one key, it is in both): the first shape moves one part, the
    second the other, so every size is moved in one shape while the others keep theirs (a kernel
    right when every size is odd and wrong when only some are must meet that case), and each
    moved size grows by `drawn_size` (up to its `ceiling` size's scale, where one is given: the
    op-point's, when `values` are TINY's). Half the tries of each shape keep its part; the rest
    move a part drawn afresh (for a reference that refuses the first)."""
    keys = size_keys(values)
    if not keys:
        return []
    rng = random.Random(seed)
    tops = {k: v for k, v in (ceiling or {}).items() if k in keys and isinstance(v, int) and not isinstance(v, bool)}

    def part() -> list[str]:
        while True:
            moved = [k for k in keys if rng.random() < 0.5]
            if moved and (len(moved) < len(keys) or len(keys) == 1):
                return moved

    first = part()
    parts = (first, first) if len(keys) == 1 else (first, [k for k in keys if k not in first])
    shapes = []
    for moved in parts:
        tries = [{k: drawn_size(values[k], rng, tops.get(k)) for k in moved} for _ in range(DRAWS // 2)]
        tries += [{k: drawn_size(values[k], rng, tops.get(k)) for k in part()} for _ in range(DRAWS - DRAWS // 2)]
        shapes.append(tries)
    return shapes


def shape_room(backend: Any, reference: Any, dtype: str | None, available: tuple[int, str] | None, probes: int,
               values: Mapping[str, Any], shapes: list[dict[str, int]], at_op_point: Any = None) -> float:
    """Bytes left of `available` (taken before any input was made) for more probes once `probes`
    probes at the op-point and one at each of `shapes` are held, each counted at its own size
    (refused when they cannot fit); unbounded where the memory or the footprint is unknown.
    `at_op_point`: the op-point's footprint where the shapes move from elsewhere (TINY, set now)."""
    size = at_op_point if at_op_point is not None else backend.footprint(reference, dtype)
    if available is None or size is None:
        return math.inf
    footprints = []
    for updates in shapes:
        with config_set(updates, reference.config):
            footprints.append(backend.footprint(reference, dtype))
    return refuse_if_too_big(size, probes, available[0], available[1], dict(values), [f for f in footprints if f])


def drawn_op_points(backend: Any, reference: Any, dtype: str | None, values: Mapping[str, Any], seed: int,
                    taken: Mapping[str, int] | None, room: float = math.inf, *,
                    ceiling: Mapping[str, Any] | None = None, at_op_point: Any = None) -> list[dict[str, int]]:
    """Two shapes no one knows before the run (`shape_draws` from the run's drawn seed, recorded):
    for each, the first try the reference accepts like the odd shape (sized from shapes, another
    program), at most four times the bytes of the shape it moves from (or the op-point's,
    `at_op_point`, where they move from TINY up to the `ceiling` op-point's sizes) and its share
    of the `room` left, and not a shape already probed."""
    base = backend.program_signature(reference, dtype)
    size = backend.footprint(reference, dtype)
    draws = shape_draws(values, seed, ceiling)
    found: list[dict[str, int]] = []
    cap = max(4 * size.per_probe if size is not None else math.inf,
              at_op_point.per_probe if at_op_point is not None else 0)
    for left, tries in zip(range(len(draws), 0, -1), draws):
        most = min(room / left, cap)
        for updates in tries:
            if updates == taken or updates in found:
                continue
            try:
                with config_set(updates, reference.config):
                    footprint = backend.footprint(reference, dtype)
                    if footprint is not None and footprint.per_probe <= most and (
                            base is None or backend.program_signature(reference, dtype) != base):
                        found.append(updates)
                        room -= footprint.per_probe
                        break
            except Exception:
                continue
    return found


PAST_OCTAVES = 4  # the size past the op-point's is drawn from up to 2**PAST_OCTAVES times it


def past_op_point(backend: Any, reference: Any, dtype: str | None, values: Mapping[str, Any],
                  base: Mapping[str, Any], seed: int, room: float = math.inf,
                  at_op_point: Any = None) -> dict[str, int] | None:
    """At a verified op-point (`values`, with TINY's sizes `base` set now): one size, drawn from the
    run's `seed`, grown past the op-point's (an octave drawn from the first `PAST_OCTAVES`, then a
    `drawn_size` within it: from one element past the op-point's size to 16 times it), every other
    size at the op-point's, or, where that is too large, at TINY's. A kernel right at every size up
    to the op-point's (or a bound past it) and wrong beyond (a grid capped at the op-point's tiles,
    blocks that carry nothing from one to the next) meets it; one that does not support the size
    may refuse it (said, never a FAIL). The first of `DRAWS` tries the reference accepts, of at
    most twice the op-point's bytes and within `room`; None where none does."""
    keys = size_keys(values)
    if not keys:
        return None
    rng = random.Random(f"past-op-point:{seed}")
    at = {k: values[k] for k in base if k in values}  # the sizes TINY moved, back at the op-point's
    cap = min(room, 2 * at_op_point.per_probe if at_op_point is not None else math.inf)
    for _ in range(DRAWS):
        key = rng.choice(keys)
        grown = drawn_size(int(values[key]) << rng.randrange(PAST_OCTAVES), rng)
        for others in (at, {k: v for k, v in base.items() if k != key}):
            updates = {**others, key: grown}
            try:
                with config_set(updates, reference.config):
                    footprint = backend.footprint(reference, dtype)
                    if footprint is not None and footprint.per_probe <= cap:
                        return updates  # every size TINY moved is in it, at the op-point's or TINY's
            except Exception:
                continue
    return None


def _send(trees: dict[str, Any]) -> None:
    """The reference's arrays go to the parent over a pipe, never through a file."""
    fd = int(os.environ["KGATE_DATA_FD"])
    buffer = io.BytesIO()
    wire.write_trees(buffer, trees)
    with os.fdopen(fd, "wb") as stream:
        stream.write(buffer.getvalue())


# The candidate leg's result entries sealed as they are made (`kgate.verify.seals`); its runs,
# changes and output trees are sealed too.
SEALED_KEYS = ("reference_changes", "config_mismatches", "config_labels", "interprets", "prefill", "facts",
               "trace_error", "ablation_error", "bypass_error", "transplant_error", "transplant_skipped",
               "experiments_error",
               "lowering_skipped", "lowering", "lowering_error", "graded_runs")  # edge_audit: each entry


def _timed_program(backend: Any, pair: Any, probe: Mapping[str, Any], inputs: Any) -> str:
    """The candidate's program on the first probe's inputs, as a timed process digests it
    (`backend.timed_program`), or why there is none (which no digest equals)."""
    try:
        with config_set(probe.get("config", {}), pair.reference.config, pair.candidate.config):
            return backend.timed_program(pair.candidate.entry, inputs) or "no program: the call failed when traced"
    except Exception as exc:
        return f"no program: {describe(exc)}"


def candidate_leg(req: dict[str, Any], wait_for_inputs: Callable[[], bool]) -> dict[str, Any]:
    beat("phase importing the candidate")
    backend = get_backend(req.get("backend", "jax"))
    folder = Path(req["workdir"])
    import_frameworks(req["reference"], req["candidate"])
    watch = Watch(backend)
    with load_requested_pair(req, use_tiny=req["use_tiny"]) as pair:
        watch.check("at import")
        imported: dict[str, Any] = {}  # what loading the pair found, sealed before the candidate runs
        for name in ("reference_changes", "config_mismatches", "config_labels"):
            keep(imported, name, list(getattr(pair, name)))
        beat("phase waiting")
        if not wait_for_inputs():
            watch.note("kgate's control channel was read by someone else (the candidate consumed stdin)")
            return {"status": "DONE", "changes": watch.changes, "candidate": pair.candidate.to_json(), "runs": [],
                    **imported}
        runs: list[dict[str, Any]] = []
        outputs: dict[str, Any] = {}
        first: tuple[Any, ...] | None = None
        handed: list[dict[str, Any]] = []
        for probe in handed_over(Path(req["probes_file"])):
            handed.append(probe)
            key = probe["key"]
            inputs = backend.load_inputs(folder / f"inputs-{key}.pkl", probe["file_sha256"])
            received = backend.digest(inputs)
            first = inputs if first is None else first
            run: dict[str, Any] = {"key": key, "received_sha256": received}
            try:
                with config_set(probe.get("config", {}), pair.reference.config, pair.candidate.config):  # CONFIG follows
                    out = backend.run(pair.candidate.entry, inputs,
                                      phase=lambda step: beat(f"phase {step} the candidate on probe {key}"))
                run["output_sha256"] = out.sha256()
                keep(outputs, f"{key}-candidate", out, "output", known=TREE + run["output_sha256"])
                launches = backend.last_launches()
                if launches is not None:  # what this graded run launched (the audit's runs must match it)
                    run["launches"] = launches
            except Exception as exc:  # the candidate's failure is evidence, not a crash
                run["error"] = describe(exc)
                if getattr(exc, "unsupported", False):  # the interpreter's limitation, not the kernel's fault
                    run["unsupported"] = True
            watch.check(f"after the candidate ran on probe {key}")
            if first is inputs and "error" not in run:  # the inputs verify's measure leg times: held to this program
                run["timed_program"] = _timed_program(backend, pair, probe, inputs)
                watch.check(f"after the candidate's program was digested on probe {key}")
            try:
                run["after_sha256"] = backend.digest(inputs)
            except Exception:
                run["after_sha256"] = ""
            seal(f"run {key}", run)  # before the candidate runs again (kgate.verify.seals)
            runs.append(run)
        result: dict[str, Any] = {"status": "DONE", "runs": runs}
        audits_edges = req["with_firing"] and hasattr(backend, "ablation")
        if audits_edges:  # a draw the candidate planted before the parent's is not read
            (folder / AUDITED_EDGES).unlink(missing_ok=True)
        keep(result, "graded_runs", len(runs))  # the parent draws the edges the audit runs on once it has this
        edges = drawn_edges(folder, handed, runs) if audits_edges else []  # read at once, before the candidate runs
        if first is not None:  # a kernel-free program on the CPU is compiled code, not an interpreter's
            beat("phase tracing the programs for kernels")
            try:
                keep(result, "interprets", backend.interprets(pair.reference.entry, first, pair.reference.eager)
                     or backend.interprets(pair.candidate.entry, first))
            except Exception:
                keep(result, "interprets", backend.interpreted)
            watch.check("after tracing for kernels")
        if backend.interpreted and first is not None and "error" not in runs[0]:
            try:
                zero = backend.run(pair.candidate.entry, first, uninitialized="zero",
                                   phase=lambda step: beat(f"phase {step} the candidate with zero-filled buffers"))
                keep(result, "prefill", parity.compare_prefill(outputs[f"{runs[0]['key']}-candidate"], zero))
            except Exception as exc:
                keep(result, "prefill", f"the candidate failed when fresh buffers were zero-filled: {describe(exc)}")
            watch.check("after the zero-filled run")
        if req["with_firing"] and first is not None:
            beat("phase firing audit (tracing the candidate with its kernels replaced)")
            try:
                keep(result, "facts", backend.inspect(pair.candidate.entry, first, ablate=False).to_json())
            except Exception as exc:
                keep(result, "trace_error", describe(exc))
            try:
                if "facts" not in result:
                    raise _Skipped
                moves, bypassed = backend.kernel_experiments(pair.candidate.entry, first)
                if isinstance(moves, str):
                    keep(result, "ablation_error", moves)
                else:
                    keep(outputs, "ablation-moves", moves, "output")
                if isinstance(bypassed, str):
                    keep(result, "bypass_error", bypassed)
                else:
                    for name, tree in bypassed.items():
                        keep(outputs, f"bypass-{name}", tree, "output")
                donor = _second_seed_probe(req)
                if hasattr(backend, "transplant") and donor is not None:
                    other = backend.load_inputs(folder / f"inputs-{donor['key']}.pkl", donor["file_sha256"])
                    moved = backend.transplant(pair.candidate.entry, first, other)
                    if isinstance(moved, Skip):  # kernels two runs do not line up (JAX: other steps or branches)
                        keep(result, "transplant_skipped", moved.reason)
                    elif isinstance(moved, str):
                        keep(result, "transplant_error", moved)
                    else:
                        keep(outputs, f"transplant-{donor['key']}", moved, "output")
                if audits_edges:  # the ablation again where an edge's answer may come from elsewhere
                    result["edge_audit"] = []
                for edge in edges:
                    entry = {"key": edge["key"], "label": edge["label"]}
                    if edge.get("skipped"):
                        entry["skipped"] = edge["skipped"]
                    else:
                        beat(f"phase firing audit on {edge['label']}")
                        on_edge = backend.load_inputs(folder / f"inputs-{edge['key']}.pkl", edge["file_sha256"])
                        moves, entry["audited_sha256"] = backend.ablation(pair.candidate.entry, on_edge)
                        if isinstance(moves, str):
                            entry["error"] = moves
                        else:
                            keep(outputs, f"edge-ablation-{edge['key']}", moves, "output")
                    result["edge_audit"].append(entry)
                    seal(f"edge_audit {len(result['edge_audit']) - 1}", entry)  # each as it is made
            except _Skipped:
                pass
            except Exception as exc:  # the program was inspected; an experiment on it raised
                keep(result, "experiments_error", describe(exc))
            watch.check("after the firing audit")
        if req.get("lower_for", "none") != "none" and getattr(backend, "lowering_unavailable", ""):
            keep(result, "lowering_skipped", backend.lowering_unavailable)
        elif req.get("lower_for", "none") != "none" and first is not None:
            beat("phase lowering the candidate for its device")
            try:
                keep(result, "lowering", lowered_programs(backend, pair, first, req))
            except KgateError:
                raise  # bad input (an unknown --chip-kind): the run's error, not the candidate's
            except Exception as exc:
                keep(result, "lowering_error", describe(exc))
            watch.check("after the lowering")
        watch.check("at the end", "deep")
        packed = io.BytesIO()
        wire.write_trees(packed, outputs)
        write_new(folder / "candidate.npz", packed.getvalue())  # fresh: never into a file planted first
        result["outputs_file_sha256"] = hashlib.sha256(packed.getvalue()).hexdigest()  # bound by the result's digest
        result.update(
            changes=watch.changes,
            candidate=pair.candidate.to_json(),
            **imported,
        )
        return result


AUDITED_EDGES = "audited-edges.json"  # the parent's draw, written once the graded runs are over


def drawn_edges(folder: Path, handed: list[dict[str, Any]], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The edge probes the parent drew for the firing audit's ablation to run on too (torch),
    where a candidate may hand the answer to a library on the inputs its kernel gets wrong (an
    overflow repaired by the reference's own operator). The candidate is never told which probes
    are edges; the parent writes its draw only once this leg sealed the end of its graded runs,
    so nothing graded could depend on it. Empty where the parent drew none, or it never came."""
    path = folder / AUDITED_EDGES
    beat("phase waiting for the edges the firing audit runs on")
    if not _appears(path, 600):
        return []
    by_key = {p["key"]: p for p in handed}
    failed = {run["key"] for run in runs if "error" in run}
    drawn = []
    for e in json.loads(path.read_text()):
        if isinstance(e, dict) and e.get("key") in by_key:
            skipped = {"skipped": "the candidate raised there when graded"} if e["key"] in failed else {}
            drawn.append({**by_key[e["key"]], "label": str(e.get("label", "")), **skipped})
    return drawn


class _Skipped(Exception):
    """The program could not be inspected: the experiments on it are not run."""


def handed_over(first: Path) -> Iterator[dict[str, Any]]:
    """The probes the parent hands over: those in `first`, then, once the reference's process has
    made their inputs, those of the other shapes (`probes-shapes.json` beside it)."""
    yield from json.loads(first.read_text())
    shapes = first.with_name("probes-shapes.json")
    if not shapes.exists():
        beat("phase waiting for the shape probes' inputs")
        if not _appears(shapes, 3600):
            raise KgateError("the shape probes' inputs never came.", "re-run the command.")
    yield from json.loads(shapes.read_text())


def _appears(path: Path, seconds: float) -> bool:
    """Whether a file the parent writes (whole, renamed into place) appears within `seconds`: the
    parent stops this process sooner; a parent gone never does."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _second_seed_probe(req: Mapping[str, Any]) -> dict[str, Any] | None:
    """The second probe, when it is a seed's at the same shapes as the first (not an edge or
    the odd shape): the donor of the firing audit's transplant."""
    probes = json.loads(Path(req["probes_file"]).read_text())
    if len(probes) < 2 or probes[1].get("config"):
        return None
    return probes[1]


def target_platform(backend: Any, entry: Any, inputs: Any, req: Mapping[str, Any]) -> str | None:
    """The platform to lower `entry` for: --lower-for when given, a TPU when a chip is named
    (whatever the kernels say), else the machine's or the kernels' own; None: no kernel."""
    platform = backend.kernel_platform(entry, inputs)
    if platform is None or req["lower_for"] == "auto" and not req.get("chip_kind"):
        return platform
    return req["lower_for"] if req["lower_for"] != "auto" else "tpu"


def lowered_programs(backend: Any, pair: Any, first: Any, req: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The candidate lowered for its device from shapes alone: on `first`'s shapes (TINY, when
    the run is at TINY) and at the op-point the run would use without TINY. [] when its
    program calls no kernel."""
    entry = pair.candidate.entry
    platform = target_platform(backend, entry, first, req)
    if platform is None:
        return []
    at_tiny = "TINY" in pair.op_point.source
    chip = req.get("chip_kind")
    programs = [backend.lower_for(entry, first, platform, "TINY" if at_tiny else "op-point", chip)]
    if at_tiny:  # the TINY keys put back as the op-point has them
        full = pair.op_point.without_tiny(req["overrides"], req.get("registered"))
        with config_set(full, pair.reference.config, pair.candidate.config):
            try:
                shapes = backend.input_shapes(pair.reference, req["dtype"])
            except Exception as exc:
                from kgate.backends.base import LoweredProgram

                programs.append(LoweredProgram(platform, "op-point", "", unavailable=(
                    f"the op-point's input shapes could not be found without making the inputs ({describe(exc)})")))
            else:
                programs.append(backend.lower_for(entry, shapes, platform, "op-point", chip))
    return [p.to_json() for p in programs]
