"""`kgate fit`: the compile-only envelope over a grid of the candidate's keyword arguments,
lowered for the device from shapes at the op-point (nothing runs)."""

import json

import pytest

from conftest import EXAMPLES, kgate
from kgate.errors import KgateError
from kgate.gates.fit import MAX_POINTS, parse_grid, points


def _fit(*args):
    proc = kgate(EXAMPLES, "fit", "--json", *args)
    return proc, (json.loads(proc.stdout) if proc.stdout.strip() else None)


def test_each_point_is_a_row_with_its_reason_and_the_ones_that_fit_pass():
    proc, report = _fit("-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas.py",
                        "--grid", "block_rows=4,8,24,2048", "--chip-kind", "v4")
    assert proc.returncode == 1, proc.stderr  # a pass with advisories: some points do not fit
    rows = {row["label"]: row for row in report["gates"]["fit"]["points"]}
    assert {label: row["status"] for label, row in rows.items()} == {
        "block_rows=4": "FAIL", "block_rows=8": "FITS", "block_rows=24": "FITS", "block_rows=2048": "FAIL"}
    assert "divisible by 8 and 128" in rows["block_rows=4"]["reason"]  # off the tiling
    assert rows["block_rows=2048"]["reason"].startswith("vmem_fits:")  # the row says why, in short
    vmem = next(c for c in rows["block_rows=2048"]["checks"] if c["name"].endswith("vmem_fits"))
    assert "16 MiB of VMEM per core of a TPU v4" in vmem["detail"]  # 2 x 2 x 4 MiB blocks; its check keeps every word
    assert rows["block_rows=8"]["vmem_bytes"] == 3 * 2 * 16 * 1024 * 2  # three [8, 1024] bf16 blocks, padded, x2
    summary = report["gates"]["fit"]["checks"][-1]
    assert summary["name"] == "some_point_fits" and summary["status"] == "PASS"
    assert report["op_point"]["values"]["seq_len"] == 512  # the op-point, not TINY


@pytest.mark.full
def test_no_point_fitting_fails_and_a_keyword_the_entry_lacks_is_refused_naming_what_it_takes():
    proc, report = _fit("-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas.py", "--grid", "block_rows=4,12")
    assert proc.returncode == 2 and report["status"] == "FAIL"
    assert report["gates"]["fit"]["checks"][-1]["status"] == "FAIL"
    proc, refused = _fit("-r", "rmsnorm/reference.py", "-c", "rmsnorm/pallas.py", "--grid", "block_k=128")
    assert proc.returncode == 2 and refused["status"] == "ERROR"
    assert "block_k" in refused["error"]["problem"] and "block_rows" in refused["error"]["problem"]


def test_grid_parsing_takes_literals_and_refuses_what_is_not_a_grid():
    assert parse_grid(["block_rows=8,16", "mode=causal"]) == {"block_rows": [8, 16], "mode": ["causal"]}
    assert points({"a": [1, 2], "b": [3]}) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]
    for bad in (["block_rows"], ["block_rows="], ["2x=1"], ["a=1,1"], ["a=1", "a=2"], []):
        with pytest.raises(KgateError):
            parse_grid(bad)
    with pytest.raises(KgateError, match="points"):
        points({"a": list(range(MAX_POINTS)), "b": [1, 2]})
