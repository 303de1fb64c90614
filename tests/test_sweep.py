"""`kgate sweep`: a grid of the candidate's keyword arguments, each point through the
early-kill gate, only the points that pass it timed; and `--kwarg`, one point alone."""

import json

import pytest

from conftest import EXAMPLES, kgate
from kgate.errors import KgateError
from kgate.gates.sweep import PointOutcome, evaluate
from kgate.problem.module import kwargs_from_wire, kwargs_to_wire, parse_kwargs


def timed(point, estimate, low, high, **kw):
    return PointOutcome(point, "PASS", speedup={"estimate": estimate, "low": low, "high": high}, **kw)


def checks(result):
    return {c.name: c for c in result.checks}


def test_the_best_point_is_told_apart_only_when_its_interval_clears_the_runner_up():
    clear = checks(evaluate([timed({"b": 8}, 1.2, 1.1, 1.3), timed({"b": 16}, 1.5, 1.4, 1.6)]))
    assert clear["best"].status == "PASS" and "best point b=16: 1.5x [1.4, 1.6]" in clear["best"].detail
    assert "told apart from the runner-up b=8" in clear["best"].detail
    close = checks(evaluate([timed({"b": 8}, 1.2, 1.0, 1.45), timed({"b": 16}, 1.3, 1.1, 1.5)]))
    assert close["best"].status == "ADVISORY" and "the intervals overlap" in close["best"].detail
    alone = checks(evaluate([timed({"b": 8}, 1.2, 1.1, 1.3)]))
    assert alone["best"].status == "PASS" and "the only point timed" in alone["best"].detail


def test_a_point_that_failed_its_gate_is_never_the_best_and_never_timed():
    # a failing point that somehow carries a speedup (a fast wrong kernel) is still only a row
    wrong_but_fast = PointOutcome({"b": 4}, "FAIL", "parity (3 checks FAIL): ...",
                                  speedup={"estimate": 9.0, "low": 8.0, "high": 10.0})
    result = evaluate([wrong_but_fast, timed({"b": 8}, 1.1, 1.0, 1.2)])
    found = checks(result)
    assert found["b=4"].status == "ADVISORY" and "gate FAIL" in found["b=4"].detail and "not timed" in found["b=4"].detail
    assert "best point b=8" in found["best"].detail
    assert result.status == "PASS"


def test_no_passing_point_fails_the_sweep_and_interpreter_timings_name_no_best():
    none = evaluate([PointOutcome({"b": 4}, "FAIL", "lowering"), PointOutcome({"b": 2}, "ANOMALY", "integrity")])
    assert none.status == "FAIL" and checks(none)["some_point_passes"].fix
    interpreted = checks(evaluate([timed({"b": 8}, 3.0, 2.5, 3.5, interpreted=True), timed({"b": 16}, 1.0, 0.9, 1.1)]))
    assert interpreted["best"].status == "ADVISORY" and "interpreter timings" in interpreted["best"].detail
    untimed = checks(evaluate([PointOutcome({"b": 8}, "PASS", not_timed="a kernel runs in an interpreter here")]))
    assert untimed["best"].status == "ADVISORY" and "no point was timed" in untimed["best"].detail


def test_kwargs_parse_as_literals_and_cross_to_a_leg_unchanged():
    parsed = parse_kwargs(["block_rows=16", "block=(8, 128)", "mode=causal", "scale=0.5"])
    assert parsed == {"block_rows": 16, "block": (8, 128), "mode": "causal", "scale": 0.5}
    assert kwargs_from_wire(json.loads(json.dumps(kwargs_to_wire(parsed)))) == parsed  # a tuple stays a tuple
    for bad in (["block_rows"], ["1x=2"], ["b=1", "b=2"], ["b="]):
        with pytest.raises(KgateError):
            parse_kwargs(bad)


@pytest.mark.full
def test_a_kwarg_the_entry_does_not_take_is_refused_with_what_it_takes(tmp_path):
    proc = kgate(EXAMPLES, "gate", "-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas.py", "--kwarg", "blk=16", "--json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert "takes no keyword argument 'blk'" in error["problem"] and "block_rows" in error["problem"]


@pytest.mark.full
def test_a_sweep_gates_every_point_and_never_times_a_failing_one():
    # block_rows=4 breaks the TPU's tiling (lowering FAIL, interpret parity right); sub_rows=12
    # leaves rows unwritten where it does not divide block_rows (parity FAIL). The docs' session
    # runs six points (block_rows=32 too, wrong only at the odd shape).
    proc = kgate(EXAMPLES, "sweep", "-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas_tiles.py",
                 "--grid", "block_rows=4,16", "--grid", "sub_rows=16,12", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["status"] == "PASS", proc.stderr[-2000:]  # advisories: the failing points
    rows = {p["label"]: p for p in report["gates"]["sweep"]["points"]}
    assert len(rows) == 4
    for label in ("block_rows=4,sub_rows=16", "block_rows=4,sub_rows=12"):
        assert rows[label]["gate"] == "FAIL" and rows[label]["reason"].startswith("lowering")
        assert "parity" not in rows[label]["reason"]  # right in the interpreter: only the lowering sees it
    assert rows["block_rows=16,sub_rows=12"]["gate"] == "FAIL" and "parity" in rows["block_rows=16,sub_rows=12"]["reason"]
    assert rows["block_rows=16,sub_rows=16"]["gate"] == "PASS"
    assert "interpreter" in rows["block_rows=16,sub_rows=16"]["not_timed"]
    assert all("speedup" not in row for row in rows.values())  # interpreted here: nothing timed
    found = {c["name"]: c for c in report["gates"]["sweep"]["checks"]}
    assert found["best"]["status"] == "ADVISORY" and "no point was timed" in found["best"]["detail"]
    assert "sweep: point 4/4" in proc.stderr  # progress, on stderr only


@pytest.mark.full
def test_a_point_right_at_the_gate_and_wrong_where_it_is_timed_is_never_timed_or_best(tmp_path):
    # The bundled RMSNorm problem with a small op-point (64 rows; TINY 16). mode=1 is right at the
    # gate's shapes (16 rows, 23 at the odd shape, at most 32 at a drawn one: a drawn size grows by
    # at most itself) and wrong at 64 rows: verify at the op-point catches it.
    # mode=2 is wrong only in the process that times it: the timed answer is held against the
    # checked one. Neither is timed; mode=3 raises (a row, never timed); mode=0, honest, is timed
    # with an interval and is the best.
    source = (EXAMPLES / "rmsnorm" / "reference.py").read_text()
    (tmp_path / "reference.py").write_text(source.replace('"batch": 4, "seq_len": 512', '"batch": 1, "seq_len": 64'))
    (tmp_path / "xla_rewrite.py").write_text((EXAMPLES / "rmsnorm" / "xla_rewrite.py").read_text())
    (tmp_path / "tricky.py").write_text(
        "import sys\nimport jax.numpy as jnp\nfrom xla_rewrite import workload as honest\n"
        "TIMED = 'measure' in sys.argv\n"
        "def workload(x, w, *, mode=0):\n"
        "    if mode == 3:\n        raise ValueError('mode 3 is not written yet')\n"
        "    if (mode == 1 and x.shape[1] >= 64) or (mode == 2 and TIMED):\n"
        "        return (x.astype(jnp.float32) * w.astype(jnp.float32)).astype(x.dtype)\n"
        "    return honest(x, w)\n")
    proc = kgate(tmp_path, "sweep", "-r", "reference.py", "-c", "tricky.py", "--class", "xla-rewrite",
                 "--grid", "mode=0,1,2,3", "--budget", "2", "--json")
    report = json.loads(proc.stdout)
    rows = {p["label"]: p for p in report["gates"]["sweep"]["points"]}
    assert rows["mode=0"]["gate"] == "PASS", proc.stderr[-3000:]
    interval = rows["mode=0"]["speedup"]
    assert interval["low"] <= interval["estimate"] <= interval["high"]
    assert rows["mode=3"]["gate"] == "FAIL" and "mode 3 is not written yet" in rows["mode=3"]["reason"]
    assert rows["mode=1"]["gate"] == "FAIL" and rows["mode=1"]["failed_at"] == "verify"  # passed its gate at TINY
    assert rows["mode=2"]["gate"] == "ANOMALY" and rows["mode=2"]["failed_at"] == "verify"
    assert "same_answer_as_checked" in rows["mode=2"]["reason"]
    assert all("speedup" not in rows[m] for m in ("mode=1", "mode=2", "mode=3"))
    best = {c["name"]: c for c in report["gates"]["sweep"]["checks"]}["best"]
    assert best["status"] == "PASS" and "best point mode=0" in best["detail"] and "the only point timed" in best["detail"]
    assert "kgate verify at the op-point" in proc.stderr
    assert report["op_point"]["source"].startswith("TINY") and report["timed_op_point"]["values"]["seq_len"] == 64
    # a module that timed another answer at one point is trusted at none: the sweep is an ANOMALY
    assert proc.returncode == 2 and report["status"] == "ANOMALY"
    assert [c["name"] for c in report["gates"]["integrity"]["checks"]] == ["mode=2.untampered"]


def test_a_sweep_with_bad_input_is_refused_before_anything_runs():
    proc = kgate(EXAMPLES, "sweep", "-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas_tiles.py")
    assert proc.returncode == 2 and "no --grid given" in proc.stderr
    proc = kgate(EXAMPLES, "sweep", "-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas_tiles.py",
                 "--grid", "block_rows=8", "--budget", "0")
    assert proc.returncode == 2 and "--budget 0 is not a time budget" in proc.stderr
    proc = kgate(EXAMPLES, "sweep", "-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas_tiles.py",
                 "--grid", "block_rows=8,16", "--kwarg", "block_rows=32")
    assert proc.returncode == 2 and "given by --grid and by --kwarg" in proc.stderr
    proc = kgate(EXAMPLES, "sweep", "-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas_tiles.py",
                 "--grid", "block_rows=8,1e999")
    assert proc.returncode == 2 and "not a plain value" in proc.stderr
    assert "sweep: point" not in proc.stderr  # nothing ran
