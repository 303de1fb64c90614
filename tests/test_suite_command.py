"""`kgate suite`: a tree and a manifest of problems and candidates run end to end, rows right,
the summary an honest function of the rows, and an interrupted suite resumed without redoing
or half-writing anything. The summary's statistics on plain rows first."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, kgate
from kgate.errors import KgateError
from kgate.suite import Row, discover, parse_fast_p, summarize
from kgate.suite.summary import ERROR, FAIL, GATE_FAIL, PASS, fast_p, geomean_interval


def _row(problem, status, est=None, low=None, high=None, interpreted=False, name="c.py"):
    speedup = {"estimate": est, "low": low, "high": high} if est is not None else None
    return Row(problem, name, status, speedup=speedup, interpreted=interpreted)


def test_fast_p_counts_only_correct_candidates_whose_interval_clears_p_never_an_interpreted_one():
    rows = [
        _row("a", PASS, 2.5, 2.1, 3.0),  # counts for p = 1, 1.5, 2
        _row("a", PASS, 1.9, 1.2, 2.8),  # its estimate clears 1.5, its lower end does not
        _row("b", PASS, 3.0, 2.5, 3.5, interpreted=True),  # an interpreter's number: never
        _row("b", FAIL, 4.0, 3.0, 5.0),  # fast and wrong: never
        _row("c", GATE_FAIL),
        _row("c", ERROR),
    ]
    assert fast_p(rows, 1.0) == 2 / 6 and fast_p(rows, 1.5) == 1 / 6 and fast_p(rows, 2.0) == 1 / 6
    summary = summarize(rows)
    assert (summary.candidates, summary.problems, summary.correct, summary.timed, summary.interpreted) == (6, 3, 3, 2, 1)
    assert summary.fast_p == {1.0: 2 / 6, 1.5: 1 / 6, 2.0: 1 / 6}
    assert summarize(rows, parse_fast_p("2.2,1.2")).fast_p == {1.2: 1 / 6, 2.2: 0.0}  # --fast-p, in order


@pytest.mark.parametrize("text", ["", "1.5,abc", "0,1", "-1", "inf", "1.5,1.5"])
def test_fast_p_values_that_are_not_speedups_are_refused(text):
    with pytest.raises(KgateError, match="is not a list of speedups"):
        parse_fast_p(text)


def test_the_cli_refuses_fast_p_values_as_bad_input_under_json_before_any_row_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kgate", "suite", str(tmp_path), "--fast-p", "0,1", "--json"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and json.loads(proc.stdout)["status"] == "ERROR", proc.stderr
    assert not (tmp_path / "kgate-suite-results").exists()


def test_the_geometric_mean_resamples_problems_and_has_no_interval_from_one():
    one = geomean_interval([_row("a", PASS, 2.0, 1.5, 2.5), _row("a", PASS, 8.0, 6.0, 9.0)])
    assert one == {"estimate": pytest.approx(4.0), "problems": 1}
    rows = [_row("a", PASS, 2.0, 1.5, 2.5), _row("b", PASS, 8.0, 6.0, 9.0), _row("c", PASS, 1.0, 0.9, 1.1),
            _row("d", FAIL, 100.0, 90.0, 110.0)]
    got = geomean_interval(rows)
    assert got["estimate"] == pytest.approx(math.exp((math.log(2) + math.log(8) + 0) / 3))
    assert got["problems"] == 3 and 1.0 <= got["low"] < got["estimate"] < got["high"] <= 8.0
    assert geomean_interval(rows) == got  # seeded: the same rows give the same interval
    assert geomean_interval([_row("a", GATE_FAIL)]) is None


def test_the_suite_page_plots_each_timed_speedup_and_the_fast_p_curve_and_renders_in_a_browser(tmp_path):
    """`kgate suite --html`: one self-contained page; the plots are well-formed SVG; the fast_p
    curve's dots are the summary's values; a row's text is escaped; a headless browser renders it."""
    import re
    import xml.etree.ElementTree as ET

    from kgate.report.suite import to_html

    rows = [_row("softmax", PASS, 2.5, 2.1, 3.0, name="fast.py"), _row("softmax", PASS, 1.9, 1.2, 2.8, name="close.py"),
            _row("rmsnorm", PASS, 3.0, 2.5, 3.5, interpreted=True, name="pallas.py"),
            Row("rmsnorm", "bad.py", GATE_FAIL, "parity <script>alert(1)</script>"), _row("cumsum", ERROR)]
    summary = summarize(rows)
    page = to_html(rows, summary)
    assert "<script>" not in page and "&lt;script&gt;" in page and "http" not in page.replace(
        "http://www.w3.org/2000/svg", "")  # self-contained: no script, no outside file
    svgs = {ET.fromstring(svg).get("data-plot"): ET.fromstring(svg) for svg in re.findall(r"<svg.*?</svg>", page, re.S)}
    assert set(svgs) == {"speedup", "fast_p"}
    ns = "{http://www.w3.org/2000/svg}"
    plotted = [line.get("data-candidate") for line in svgs["speedup"].iter(f"{ns}line") if line.get("data-candidate")]
    assert plotted == ["softmax/fast.py", "softmax/close.py", "rmsnorm/pallas.py"]  # every timed correct row, no other
    dots = {c.get("data-p"): c.find(f"{ns}title").text for c in svgs["fast_p"].iter(f"{ns}circle")}
    assert dots == {"1": "fast_1 = 0.400", "1.5": "fast_1.5 = 0.200", "2": "fast_2 = 0.200"}  # of 5: close.py clears 1 only
    assert page.count("<tr data-status=") == 5 and "fast_1.5 = 0.200" in page
    html = tmp_path / "suite.html"
    html.write_text(page)
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        if os.environ.get("KGATE_REQUIRE_BROWSER"):
            pytest.fail("no headless browser (chromium) on this machine; .ci/run installs one")
        pytest.skip("no headless browser (chromium) on this machine")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", html.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert dom.count('data-plot="speedup"') == 1 and dom.count('data-plot="fast_p"') == 1
    assert 'data-candidate="softmax/fast.py"' in dom and 'data-p="1.5"' in dom
    shot = tmp_path / "suite.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,1400",
                    f"--screenshot={shot}", html.as_uri()], capture_output=True, timeout=120)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(set(data[100:20000])) > 50  # rendered, not blank


def test_a_row_reads_back_as_it_was_written():
    row = Row("p", "c.py", PASS, "", {"estimate": 2.0, "low": 1.5, "high": 2.5}, False, "k" * 64, {"receipt": "r.json"})
    assert Row.from_json(json.loads(json.dumps(row.to_json()))) == row


def test_a_tree_is_problem_folders_with_a_baseline_and_candidates_beside_it(tmp_path):
    for problem in ("softmax", "cumsum"):
        (tmp_path / problem).mkdir()
        (tmp_path / problem / "baseline.py").write_text("")
        (tmp_path / problem / "fast.py").write_text("")
        (tmp_path / problem / "_helper.py").write_text("")
    (tmp_path / "notes").mkdir()
    entries = discover(tmp_path, klass="xla-rewrite")
    assert [(e.problem, e.candidate.name, e.klass) for e in entries] == [
        ("cumsum", "fast.py", "xla-rewrite"), ("softmax", "fast.py", "xla-rewrite")]
    with pytest.raises(KgateError, match="no problem with candidates"):
        discover(tmp_path / "notes")


@pytest.mark.parametrize("manifest, says", [
    ("[[problem]]\nreference = 'missing.py'\ncandidates = ['x.py']\n", "is not a .py file"),
    ("[[problem]]\nreference = 'ref.py'\n", "lacks reference or candidates"),
    ("title = 'no problems'\n", "has no [[problem]] tables"),
    ("[[problem]]\nreference = 'ref.py'\ncandidates = [{path = 'ref.py', class = 'magic'}]\n", "magic"),
    ("[[problem\n", "is not valid TOML"),
])
def test_a_bad_manifest_is_refused_naming_the_problem(tmp_path, manifest, says):
    (tmp_path / "ref.py").write_text("")
    (tmp_path / "suite.toml").write_text(manifest)
    with pytest.raises(KgateError, match=says.replace("[", r"\[")):
        discover(tmp_path, tmp_path / "suite.toml")


def _tree(root: Path) -> Path:
    """A JAXBench-style tree from the bundled cumsum problem: a correct rewrite (about 2x on this
    CPU), a wrong one, one that does not import and one that hangs at import."""
    folder = root / "suite" / "cumsum"
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLES / "cumsum" / "reference.py", folder / "reference.py")  # the candidates import it by name
    for name in ("xla_rewrite.py", "bad_exclusive.py"):
        shutil.copy(EXAMPLES / "cumsum" / name, folder / name)
    (folder / "crashes_at_import.py").write_text("raise RuntimeError('this candidate does not import')\n")
    (folder / "hangs_at_import.py").write_text("import time\ntime.sleep(300)\n\n\ndef workload(x):\n    return x\n")
    return root / "suite"


@pytest.mark.full
def test_a_tree_runs_end_to_end_and_the_summary_is_the_rows_own(tmp_path):
    suite = _tree(tmp_path)
    args = ["suite", suite, "--class", "xla-rewrite", "--results", tmp_path / "results", "--budget", "2",
            "--phase-budget", "20", "--json"]
    done = kgate(tmp_path, *args, "--html", tmp_path / "suite.html")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    page = (tmp_path / "suite.html").read_text()  # the page holds the run's rows and its fast_p
    assert page.count("<tr data-status=") == 4 and 'data-plot="fast_p"' in page
    assert f"fast_1 = {report['summary']['fast_p']['1']:.3f}" in page
    status = {r["candidate"]: r["status"] for r in report["rows"]}
    assert status == {"bad_exclusive.py": GATE_FAIL, "crashes_at_import.py": ERROR,
                      "hangs_at_import.py": GATE_FAIL, "xla_rewrite.py": PASS}
    reasons = {r["candidate"]: r["reason"] for r in report["rows"]}
    assert "parity" in reasons["bad_exclusive.py"] and "does not import" in reasons["crashes_at_import.py"]
    assert "importing the candidate" in reasons["hangs_at_import.py"]
    rows = [Row.from_json(r) for r in report["rows"]]
    by_hand = {f"{p:g}": sum(1 for r in rows if r.status == PASS and r.speedup and not r.interpreted
                             and r.speedup["low"] > p) / len(rows) for p in (1.0, 1.5, 2.0)}
    assert report["summary"]["fast_p"] == by_hand and report["summary"]["correct"] == 1
    passed = next(r for r in report["rows"] if r["status"] == PASS)
    assert Path(passed["receipt"]).is_file() and kgate(tmp_path, "verify-receipt", passed["receipt"]).returncode == 0
    again = kgate(tmp_path, *args)  # everything is done: nothing runs again
    assert again.returncode == 0 and again.stderr.count("done before") == 4
    assert json.loads(again.stdout)["rows"] == report["rows"]


@pytest.mark.full
def test_an_interrupted_suite_keeps_what_finished_and_resumes_without_redoing_it(tmp_path):
    suite = _tree(tmp_path)
    (suite / "cumsum" / "xla_rewrite.py").unlink()  # the gate-only candidates: quick
    results = tmp_path / "results"
    # As from a terminal: a test worker may run with SIGINT ignored, which its children inherit;
    # a small launcher restores it and execs kgate (as test_verify's interrupt test does).
    launcher = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.executable, sys.argv[1:])"
    cmd = [sys.executable, "-c", launcher, sys.executable, "-m", "kgate", "suite", str(suite), "--class", "xla-rewrite",
           "--results", str(results), "--phase-budget", "60"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list(results.glob("*.json"))) < 2 and time.monotonic() < deadline:  # two rows done, the third hangs
        time.sleep(0.2)
    assert len(list(results.glob("*.json"))) == 2
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C does: the whole foreground group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err[-2000:]
    assert sorted(p.suffix for p in results.iterdir()) == [".json", ".json"]  # no partial file
    (suite / "cumsum" / "hangs_at_import.py").write_text("def workload(x):\n    return x\n")  # now it returns
    again = kgate(tmp_path, "suite", suite, "--class", "xla-rewrite", "--results", results, "--json")
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stderr.count("done before") == 2
    assert {r["candidate"]: r["status"] for r in json.loads(again.stdout)["rows"]}["hangs_at_import.py"] == GATE_FAIL


def test_a_speedup_plot_stays_in_its_frame_whatever_an_interval_holds():
    """An open end (inf), an unknown one (NaN) or an unknown estimate is drawn at the plot's edge
    or left out: never a coordinate that is not a number, never off the page."""
    import math
    import xml.etree.ElementTree as ET

    from kgate.report.author import SpeedupPoint, speedup_svg

    svg = speedup_svg((SpeedupPoint("a", 1.5, math.nan, 2.0, False, None),
                       SpeedupPoint("b", math.nan, 0.5, math.inf, False, 2.0),
                       SpeedupPoint("c", 1.2, 1.1, 1.3, True, None)))
    assert "nan" not in svg.lower() and "inf" not in svg
    root = ET.fromstring(svg)
    width = float(root.get("width"))
    xs = [float(e.get(k)) for e in root.iter() for k in ("x1", "x2", "cx") if e.get(k) is not None]
    assert xs and all(0 <= v <= width for v in xs)
    assert len([e for e in root.iter() if e.tag.endswith("circle")]) == 2  # b's estimate is unknown: no dot


def test_a_verified_row_says_what_verify_checked():
    """A PASS row's 'why' is what verify checked: parity's probes with the worst error against
    the floor, and firing; a row that did not pass keeps its reason."""
    from kgate.gates.common import Check, GateResult
    from kgate.suite.run import checked
    from kgate.suite.summary import Row
    from kgate.verify.outcome import Report

    probes = [{"name": "seed42", "outputs": [{"max_abs_over_floor": 0.99}]},
              {"name": "edge-spikes-in0", "outputs": [{"max_abs_over_floor": 2.5}, {"path": "aux"}]}]
    report = Report("verify", {
        "parity": GateResult("parity", (Check("seed42.error", "PASS", "ok"),), {"probes": probes, "spec": "floor:5"}),
        "firing": GateResult("firing", (Check("kernel_present", "PASS", "1 kernel"),), {"kernel_sites": [{"at": "x"}]}),
    })
    said = checked(report)
    assert said == "parity PASS: 2 probes, worst 2.5x the floor (floor:5); firing PASS: 1 kernel site"
    assert Row("p", "c.py", "PASS", "", extra={"checked": said}).why == said
    assert Row("p", "c.py", "GATE_FAIL", "FAIL: parity").why == "FAIL: parity"
