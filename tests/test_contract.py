"""The boundary scripts and agents rely on: exit codes keep their meaning (an exception or a
usage error never exits 1), `--json` stays one object on stdout whatever the candidate prints,
and a closed pipe does not change the verdict's code."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import EXAMPLES

RMS = EXAMPLES / "rmsnorm"
TANH_REFERENCE = (
    "import jax, jax.numpy as jnp\n"
    "CONFIG = {'n': 64}\n"
    "def create_inputs(seed=0):\n"
    "    return (jax.random.normal(jax.random.key(seed), (4, CONFIG['n'])),)\n"
    "def workload(x):\n"
    "    return jnp.tanh(x)\n"
)


def kgate(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "kgate", *map(str, args)], capture_output=True, text=True, **kwargs)


@pytest.mark.full
def test_a_candidate_that_prints_leaves_measure_json_one_object(write_module):
    ref = write_module("reference.py", TANH_REFERENCE)
    cand = write_module(
        "cand.py",
        "import jax.numpy as jnp\nprint('hello at import')\n"
        "def workload(x):\n    print('hello from a call')\n    return jnp.tanh(x)\n",
    )
    proc = kgate("measure", "-r", ref, "-c", cand, "--budget", "1", "--sessions", "2", "--json")
    report = json.loads(proc.stdout)  # nothing before or after the object
    assert report["command"] == "measure" and proc.returncode in (0, 1)
    assert "hello at import" in proc.stderr


@pytest.mark.full
def test_a_crash_inside_measure_exits_2_with_an_error_object_never_1(write_module):
    ref = write_module(
        "reference.py",
        TANH_REFERENCE.replace("    return (jax.random.normal", "    raise ValueError('no inputs today')\n    return (jax.random.normal"),
    )
    cand = write_module("cand.py", "import jax.numpy as jnp\ndef workload(x):\n    return jnp.tanh(x)\n")
    proc = kgate("measure", "-r", ref, "-c", cand, "--budget", "1", "--json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)
    assert error["status"] == "ERROR" and "no inputs today" in error["error"]["problem"] and error["error"]["fix"]
    human = kgate("measure", "-r", ref, "-c", cand, "--budget", "1")
    assert human.returncode == 2 and "error:" in human.stderr and "fix:" in human.stderr
    assert "Traceback" not in human.stderr


def test_usage_errors_exit_2_and_print_the_error_object_under_json():
    missing = kgate("gate", "--json")
    assert missing.returncode == 2
    assert json.loads(missing.stdout)["status"] == "ERROR"
    bad_value = kgate("parity", "-r", RMS / "reference.py", "-c", RMS / "pallas.py", "--seed", "abc", "--json")
    assert bad_value.returncode == 2 and "--seed" in json.loads(bad_value.stdout)["error"]["problem"]
    plain = kgate("gate", "--no-such-option")
    assert plain.returncode == 2 and "error:" in plain.stderr
    for words in ((), ("family",)):  # no command: the help, then what is missing, never an empty error line
        bare = kgate(*words)
        assert bare.returncode == 2 and "error: no command given." in bare.stderr, bare.stderr[-300:]


@pytest.mark.full
def test_a_closed_pipe_keeps_the_verdicts_exit_code():
    for candidate, expected in (("pallas.py", 0), ("bad_ghost.py", 2)):
        proc = subprocess.run(
            f"{sys.executable} -m kgate gate -r {RMS / 'reference.py'} -c {RMS / candidate} | head -c 10 >/dev/null; "
            "exit ${PIPESTATUS[0]}",
            shell=True, executable="/bin/bash", capture_output=True, text=True,
        )
        assert proc.returncode == expected, proc.stderr[-500:]


@pytest.mark.full
@pytest.mark.parametrize("args,expected", [
    (["--version"], 0),  # a short answer: a reader that closes before reading used to make it exit 1
    (["gate", "--json", "--seed", "abc", "-r", "reference.py", "-c", "pallas.py"], 2),  # the usage error's JSON
    (["gate", "--json", "-r", "reference.py", "-c", "nope.py"], 2),  # a bad-input ERROR
    (["verify-receipt", "no-such-receipt.json"], 2),
])
def test_a_reader_that_never_reads_changes_no_exit_code(args, expected):
    proc = subprocess.run(f"{sys.executable} -m kgate {' '.join(args)} | true; exit ${{PIPESTATUS[0]}}", cwd=RMS,
                          shell=True, executable="/bin/bash", capture_output=True, text=True)
    assert proc.returncode == expected and "Traceback" not in proc.stderr, proc.stderr[-1500:]


def test_version_flag():
    from kgate import __version__

    proc = kgate("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == __version__
    as_json = json.loads(kgate("version", "--json").stdout)
    assert as_json["status"] == "OK" and as_json["kgate_version"] == __version__


def _commands(group=None, path=()):
    """Every command of the CLI (a group's too): (its words, its click command)."""
    if group is None:
        import typer.main

        from kgate.cli import app

        group = typer.main.get_command(app)
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def test_every_command_takes_json():
    lacking = [" ".join(words) for words, command in _commands()
               if "--json" not in [opt for param in command.params for opt in getattr(param, "opts", [])]]
    assert lacking == []


def test_lock_under_json_keeps_the_commands_output_off_stdout_and_exits_with_its_code(tmp_path):
    from kgate.jsonio import schema_errors

    proc = kgate("lock", "0", "--lock-dir", tmp_path, "--json", "--", sys.executable, "-c",
                 "print('from the command'); raise SystemExit(3)")
    doc = json.loads(proc.stdout)  # one document: the command's own print went to stderr
    assert proc.returncode == 3 and "from the command" in proc.stderr
    assert doc["status"] == "COMMAND_FAILED" and doc["exit_code"] == 3 and doc["chip"] == 0
    assert doc["lock"] == str(tmp_path / "kgate-chip-0.lock") and schema_errors(doc, "lock") == []
    killed = kgate("lock", "0", "--lock-dir", tmp_path, "--json", "--", "sh", "-c", "kill -TERM $$")
    doc = json.loads(killed.stdout)  # a signal: the shell's 128+N, never a negative status
    assert killed.returncode == 143 and doc["exit_code"] == 143 and doc["signal"] == "SIGTERM"
    for args in ((), ("no-such-command-kgate",)):  # nothing to run, or nothing that starts: the error document
        refused = kgate("lock", "0", "--lock-dir", tmp_path, "--json", "--", *args)
        assert refused.returncode == 2 and json.loads(refused.stdout)["status"] == "ERROR", refused.stdout


def test_a_ctrl_c_exits_2_with_the_error_document_never_130(tmp_path):
    """typer turns a KeyboardInterrupt into a returned 130, the code a command's own exit could
    have: kgate notes the interruption itself and exits 2, as for any run it could not finish,
    while a wrapped command's own 130 stays its code."""
    # SIGINT as a terminal delivers it (a test runner may have it ignored); no preexec_fn: threads run here
    launcher = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.executable, sys.argv[1:])"
    lock = tmp_path / "kgate-chip-0.lock"
    proc = subprocess.Popen([sys.executable, "-c", launcher, sys.executable, "-m", "kgate", "lock", "0", "--lock-dir",
                             str(tmp_path), "--json", "--", "sleep", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while not (lock.is_file() and lock.read_text().startswith("pid")):  # the command runs under the lock
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C does: the whole foreground group
    out, err = proc.communicate(timeout=30)
    error = json.loads(out)
    assert proc.returncode == 2 and error["status"] == "ERROR" and "interrupted" in error["error"]["problem"], err
    own = kgate("lock", "0", "--lock-dir", tmp_path, "--", "sh", "-c", "exit 130")
    assert own.returncode == 130 and "interrupted" not in own.stderr


@pytest.mark.full
def test_every_command_lists_its_exit_codes_and_no_flag_shows_a_type():
    found = [words for words, _ in _commands()]
    assert {("gate",), ("verify",), ("family", "new"), ("lint",)} <= set(found)
    for path in [(), ("family",), *found]:  # the groups say the convention too
        proc = kgate(*path, "--help")
        assert proc.returncode == 0, path
        assert "Exit codes:" in proc.stdout, path
        assert "<bool>" not in proc.stdout, path


def test_help_paragraphs_are_reflowed_so_a_narrow_terminal_never_breaks_a_line_mid_sentence():
    import typer.main

    from kgate.cli import app
    from kgate.cli.common import reflow

    assert reflow("One line\n    goes on.\n\nItems:\n- first\n  still first\n2. second") == \
        "One line goes on.\n\nItems:\n- first still first\n2. second"

    def helps(group):
        for command in group.commands.values():
            yield from helps(command) if hasattr(command, "commands") else [(command.name, command.help or "")]

    for name, text in helps(typer.main.get_command(app)):
        for paragraph in text.split("\n\n"):  # a paragraph's lines are list items, each whole
            assert all(line[:2] in ("- ", "* ") or line[:1].isdigit() for line in paragraph.splitlines()[1:]), (name, paragraph)


def test_advisories_ok_turns_only_a_pass_with_advisories_into_0():
    from kgate.gates.common import Check, GateResult
    from kgate.verify.outcome import Report

    advised = Report("measure", {"timing": GateResult("timing", (Check("interpreted", "ADVISORY", "interpreter"),))})
    failed = Report("measure", {"timing": GateResult("timing", (Check("measured", "FAIL", "no", "fix"),))})
    assert advised.exit_code == 1 and failed.exit_code == 2
    assert replace(advised, advisories_ok=True).exit_code == 0
    assert replace(advised, advisories_ok=True).to_json()["advisories"] == ["timing.interpreted: interpreter"]
    assert replace(failed, advisories_ok=True).exit_code == 2


def test_a_default_receipt_goes_to_a_folder_git_ignores_never_the_current_directory(tmp_path):
    from kgate.verify.screen import default_receipt_path, make_folder

    repo = tmp_path / "repo"
    kernel = repo / "ops" / "kernels"
    kernel.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    path = default_receipt_path(Path("cand.py"), here=kernel)
    assert path.parent == repo.resolve() / ".kgate" / "receipts" and path.name.startswith("kgate-receipt-cand-")
    assert not (repo / ".kgate").exists()  # nothing is made before there is a receipt to write
    make_folder(path.parent)
    path.write_text("{}")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True,
                            text=True, check=True)
    assert status.stdout == ""  # `git add -A` (and `kgate cand`) would commit nothing of it
    outside = default_receipt_path(Path("cand.py"), here=tmp_path)
    assert outside.parent == tmp_path.resolve() / ".kgate" / "receipts"


def test_an_op_point_the_reference_cannot_make_is_one_error_line_not_a_traceback():
    proc = kgate("gate", "-r", RMS / "reference.py", "-c", RMS / "pallas.py", "--set", "seq_len=-4", "--json")
    error = json.loads(proc.stdout)
    assert proc.returncode == 2 and error["status"] == "ERROR"
    assert "create_inputs failed at this op-point" in error["error"]["problem"] and "seq_len=-4" in error["error"]["problem"]
    assert "--set" in error["error"]["fix"]


def test_an_op_point_with_empty_outputs_is_refused_before_anything_is_made():
    """A zero size makes every candidate agree with the reference on nothing: refused up front,
    from shapes, for the checks and for the timing."""
    from kgate.backends.base import Footprint, fits
    from kgate.errors import KgateError

    with pytest.raises(KgateError, match="outputs with no elements.*sizes at 0: batch"):
        fits(Footprint(0, 0, 0, output_elements=0), (2**30, "this machine"), 2, {"batch": 0, "n": 8})
    assert fits(Footprint(8, 8, 16, output_elements=1), (2**30, "this machine"), 2, {"batch": 1})
    proc = kgate("parity", "-r", RMS / "reference.py", "-c", RMS / "xla_rewrite.py", "--set", "batch=0", "--json")
    error = json.loads(proc.stdout)
    assert proc.returncode == 2 and error["status"] == "ERROR" and "no elements" in error["error"]["problem"], proc.stderr


@pytest.mark.parametrize("source,elements", [
    ("def workload(x):\n    return ()\n", None),  # nothing returned: parity's own FAIL, not a size's
    ("def workload(x):\n    return x.sum() > 0, 3\n", 2),  # a 0-d array and a Python value: one element each, traced
    ("_skip_jit = True\nimport numpy as np\ndef workload(n):\n    return jnp.asarray(np.asarray(jnp.ones((n,))))\n",
     None),  # eager and untraceable, its inputs all static: nothing to size it from
])
def test_outputs_are_counted_only_where_their_shapes_are_known(write_module, source, elements):
    """Only a traced reference's arrays say how many elements the outputs hold; a guess (an eager
    entry sized from its inputs) or an entry that returns no array says nothing, and is not
    refused as an empty op-point."""
    from kgate.backends import get_backend
    from kgate.problem import load_reference

    inputs = "(4,)" if "(n)" in source else "(jnp.ones((3, 4)),)"
    path = write_module("reference.py", f"import jax.numpy as jnp\ndef create_inputs(seed=0):\n    return {inputs}\n"
                        + source)
    with load_reference(path) as (reference, _):
        assert get_backend().footprint(reference, None).output_elements == elements


@pytest.mark.full
def test_an_op_point_too_big_for_the_machine_is_refused_before_anything_is_allocated():
    huge = ("--set", "seq_len=4000000", "--set", "emb_dim=8192")  # ~244 GiB of bf16 inputs
    for command in (("parity", "-c", RMS / "pallas.py"), ("measure", "-c", RMS / "pallas.py", "--budget", "1"),
                    ("calibrate", "--budget", "1")):
        proc = kgate(*command, "-r", RMS / "reference.py", *huge, "--json")
        error = json.loads(proc.stdout)
        assert proc.returncode == 2 and error["status"] == "ERROR", command
        assert "needs about" in error["error"]["problem"] and "nothing was allocated" in error["error"]["problem"]


@pytest.mark.full  # it makes arrays up to the memory free: most of a minute beside another worker
def test_numpy_in_create_inputs_that_asks_for_more_than_the_free_memory_is_refused_while_it_is_sized(write_module):
    """numpy runs for real even while create_inputs is only traced for its shapes: before the
    cap, arrays larger together than the free memory were made in the reference leg until the
    kernel killed it (a crash, after minutes of swapping). Here the arrays are never written, so
    a regression fails fast instead of filling the machine."""
    from kgate.backends.base import host_memory

    piece = host_memory()[0] // 2 + 2**30  # two of them: more than is free, and than the 1 GiB of slack
    ref = write_module("reference.py", (
        "import numpy as np\nimport jax.numpy as jnp\nCONFIG = {'n': 8}\n"
        "def create_inputs(seed=0):\n"
        f"    held = [np.empty(({piece},), np.uint8) for _ in range(2)] if CONFIG['n'] > 8 else []\n"
        "    return (jnp.asarray(np.random.default_rng(seed).standard_normal((4, CONFIG['n'])), jnp.float32),)\n"
        "def workload(x):\n    return jnp.tanh(x)\n"))
    proc = kgate("parity", "-r", ref, "-c", ref, "--set", "n=16", "--json")
    error = json.loads(proc.stdout)
    assert proc.returncode == 2 and error["status"] == "ERROR", proc.stdout[-800:]
    assert "asked for more memory than this machine has free" in error["error"]["problem"]
    assert "n=16" in error["error"]["problem"] and "--set" in error["error"]["fix"]
    fine = json.loads(kgate("parity", "-r", ref, "-c", ref, "--json").stdout)  # at its own size: graded
    assert fine["status"] == "PASS", fine


def test_the_memory_estimate_counts_every_probe_held_at_once():
    import pytest

    from kgate.backends.base import Footprint, refuse_if_too_big
    from kgate.errors import KgateError

    one = Footprint(inputs=2**30, outputs=2**30, oracle=2 * 2**30)  # 4 GiB per probe
    refuse_if_too_big(one, 2, 16 * 2**30, "this machine", {"n": 1})  # 8 of 16 GiB: fits
    with pytest.raises(KgateError, match=r"needs about 20 GiB \(5 probes"):
        refuse_if_too_big(one, 5, 16 * 2**30, "this machine", {"n": 1})
    # probes at other shapes count at their own size: 2 at the op-point and one 4x as big no longer fit
    big = Footprint(inputs=4 * 2**30, outputs=4 * 2**30, oracle=8 * 2**30)
    assert refuse_if_too_big(one, 2, 32 * 2**30, "this machine", {"n": 1}, [big]) == 0  # 24 of 24 GiB usable
    with pytest.raises(KgateError, match=r"needs about 24 GiB \(2 probes .* \+ 1 probes at other shapes \(16 GiB\)"):
        refuse_if_too_big(one, 2, 31 * 2**30, "this machine", {"n": 1}, [big])


def test_the_drawn_shapes_take_only_the_memory_left_to_them():
    import math

    from kgate.backends import get_backend
    from kgate.problem import config_set, load_reference
    from kgate.verify.probes import drawn_op_points

    backend = get_backend()
    with load_reference(RMS / "reference.py", use_tiny=True) as (reference, op_point):
        values = dict(op_point.values)
        size = backend.footprint(reference, None).per_probe

        def sizes(shapes: list[dict[str, int]]) -> list[int]:
            found = []
            for updates in shapes:
                with config_set(updates, reference.config):
                    found.append(backend.footprint(reference, None).per_probe)
            return found

        free = drawn_op_points(backend, reference, None, values, 7, None, math.inf)
        assert len(free) == 2 and all(size < s <= 4 * size for s in sizes(free))  # drawn sizes only grow
        assert drawn_op_points(backend, reference, None, values, 7, None, size) == []  # no room for a larger shape
        room = 3 * size
        tight = drawn_op_points(backend, reference, None, values, 7, None, room)
        assert sum(sizes(tight)) <= room and sizes(tight)[:1] <= [room / 2]  # the first takes at most its share


def test_progress_goes_to_stderr_as_plain_periodic_lines_off_a_terminal_and_never_under_json(capsys):
    from kgate.cli.checks import progress_callback

    assert progress_callback(True) is None  # --json: stdout holds the one document, and stderr stays quiet
    show = progress_callback(False, every_s=0.0)
    show(3, 0.25)
    show(4, 0.125)
    out, err = capsys.readouterr()
    assert out == ""
    assert [line.split(" s: ", 1)[1] for line in err.splitlines()] == [
        "round 3, CI relative width 0.2500", "round 4, CI relative width 0.1250"]
    quiet = progress_callback(False, every_s=3600.0)
    quiet(5, 0.1)
    assert capsys.readouterr().err == ""  # at most one line per period


def test_the_clis_phase_budget_default_is_the_verify_layers():
    from kgate.cli.common import PHASE_BUDGET_S as CLI_DEFAULT
    from kgate.verify.early import PHASE_BUDGET_S

    assert CLI_DEFAULT == PHASE_BUDGET_S


@pytest.mark.parametrize("args,says", [
    (["gate", "-o", "{tmp}/a_folder"], "-o {tmp}/a_folder is a folder"),
    (["gate", "-o", "/proc/kgate.json"], "-o /proc/kgate.json cannot be written"),
    (["verify", "-o", "{tmp}/r.json", "--report", "{tmp}/a_folder"], "--report {tmp}/a_folder is a folder"),
    (["verify", "-o", "{tmp}/r.json", "--report", "/proc/report.json"], "--report /proc/report.json cannot be written"),
    (["verify", "-o", "/proc/receipt.json"], "-o /proc/receipt.json cannot be written"),
    (["measure", "--budget", "nan"], "'nan' is not a finite number"),
    (["verify", "--budget", "inf", "-o", "{tmp}/r.json"], "'inf' is not a finite number"),
    (["suite", "--html", "/proc/suite.html"], "--html /proc/suite.html cannot be written"),
    (["suite", "--html", "{tmp}/same.json", "-o", "{tmp}/same.json"], "-o and --html name the same file"),
])
def test_an_output_that_could_not_be_written_or_a_number_that_is_not_one_is_refused_before_anything_runs(
        tmp_path, args, says):
    (tmp_path / "a_folder").mkdir()
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    klass = [] if args[0] == "measure" else ["--class", "xla-rewrite"]  # measure grades no class
    pair = [RMS] if args[0] == "suite" else ["-r", RMS / "reference.py", "-c", RMS / "xla_rewrite.py"]
    proc = kgate(args[0], *klass, *pair, *args[1:], "--json")
    problem = json.loads(proc.stdout)["error"]["problem"]
    assert proc.returncode == 2 and says.replace("{tmp}", str(tmp_path)) in problem, problem
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_folder"]  # no receipt, no report, no probe left
    assert not list((tmp_path / "a_folder").iterdir())


def test_a_long_leg_tells_a_ci_log_its_phase_at_most_every_few_seconds_as_plain_text():
    """Off a terminal, verify (and the sweep and suite rows that run it) print where a long leg
    is, throttled; the phase name is the leg's own text, so only its printable part is shown."""
    from kgate.verify.screen import phase_lines

    lines: list[str] = []
    tell = phase_lines("the measure leg", lines.append, every_s=3600)
    tell("timing session 1")
    tell("timing session 2")  # within the interval: not a line yet
    assert len(lines) == 1 and lines[0].startswith("the measure leg: timing session 1 (")
    late = phase_lines("the measure leg", lines.append, every_s=0.2)
    late("compiling")
    late("timing session 1")  # entered too soon after the last line: held back, not lost
    late("timing session 1")
    assert lines[-1].startswith("the measure leg: compiling (")
    time.sleep(0.25)
    late("timing session 1")  # the interval has passed and the leg is still in it: said now, once
    late("timing session 1")
    assert lines[-1].startswith("the measure leg: timing session 1 (") and len(lines) == 3
    every = phase_lines("the measure leg", lines.append, every_s=0)
    every("compiling\x1b[2J session [/]\r 3" + "x" * 200)
    assert "\x1b" not in lines[-1] and "\r" not in lines[-1] and "[/]" in lines[-1] and len(lines[-1]) < 110
