"""The `kgate` command line: parse, call one library function, render, exit.

Exit codes: 0 pass, 1 pass with advisory findings, 2 gate failure / anomaly / bad input /
could not evaluate. Nothing else exits 1: a usage error, an interruption or an exception
inside kgate exits 2 with an `error:` line and a `fix:` line (and, under `--json`, the
ERROR object on stdout).
The commands live in `checks` (gate, parity, measure, ...) and `records` (init, stub,
cand, ..., verdict, report); importing them registers them on `app`, in help order.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
import typer.main

try:  # typer vendors click from 0.2x on; older ones use click itself
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover
    from click import exceptions as click_exceptions

_EXIT = tuple({typer.Exit, getattr(click_exceptions, "Exit", typer.Exit)})
_ABORT = tuple({typer.Abort, getattr(click_exceptions, "Abort", typer.Abort), KeyboardInterrupt})

from kgate import __version__
from kgate.cli import checks, records  # noqa: F401  (registers the commands)
from kgate.cli.common import ClosedPipeSafe, app, exit_codes_in_help, silence_stdout
from kgate.errors import KgateError, describe


@app.command()
def version(
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON document: kgate's version and Python's (schemas/version-v1).")] = False,
) -> None:
    """Print kgate's version."""
    if not as_json:
        print(__version__)
        return
    import platform

    from kgate.jsonio import document

    print(document({"status": "OK", "exit_code": 0, "kgate_version": __version__,
                    "python": platform.python_version()}, "version"))


def _print_version(value: bool) -> None:
    if value:
        print(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_print_version, help="Print kgate's version and exit.")
    ] = False,
) -> None:
    """Make kernel-optimization claims trustworthy: parity, firing audit, honest timing, experiment records, verdicts.

    Exit codes: 0 pass, 1 pass with advisories, 2 fail, anomaly, bad input or could not evaluate.
    """


exit_codes_in_help(app)


def main() -> None:
    """Run one command; turn whatever escapes it into exit code 2, never 1."""
    as_json = "--json" in sys.argv[1:]
    if not isinstance(sys.stdout, ClosedPipeSafe):
        sys.stdout = ClosedPipeSafe(sys.stdout)  # a reader that goes away never changes the exit code
    interrupted: list[BaseException] = []
    command = typer.main.get_command(app)
    invoke = command.invoke

    def invoke_and_note_an_interruption(ctx: typer.Context) -> object:
        try:
            return invoke(ctx)
        except KeyboardInterrupt as exc:  # typer turns it into a returned 130, like a command's own exit
            interrupted.append(exc)
            raise

    command.invoke = invoke_and_note_an_interruption  # type: ignore[method-assign]
    try:
        result = command.main(prog_name="kgate", standalone_mode=False)
        code = result if isinstance(result, int) else 0
        if interrupted:
            code = _fail(as_json, KgateError("interrupted: nothing was written.", "run the command again."))
    except _EXIT as exc:
        code = exc.exit_code
        if code == 130:  # typer's own exit for a Ctrl-C it caught: an interruption is exit 2 here
            code = _fail(as_json, KgateError("interrupted: nothing was written.", "run the command again."))
    except click_exceptions.UsageError as exc:
        # no command at all (`kgate`, `kgate family`): the help was printed; say what is missing
        problem = exc.format_message().strip() or "no command given."
        code = _fail(as_json, KgateError(problem, _usage_fix(exc)))
    except _ABORT:
        code = _fail(as_json, KgateError("interrupted: nothing was written.", "run the command again."))
    except BrokenPipeError:
        silence_stdout()  # the reader went away (`| head`): the verdict's code is already decided
        code = 2
    except Exception as exc:  # a bug in kgate or an environment it did not foresee: still exit 2
        code = _fail(as_json, KgateError(
            f"kgate could not finish: {describe(exc)}.",
            "if the message does not say what to change, report it as a kgate bug with the command line.",
        ))
    sys.exit(code)


def _usage_fix(exc: click_exceptions.UsageError) -> str:
    command = exc.ctx.command_path if exc.ctx is not None else "kgate"
    return f"see `{command} --help` for the options and their values."


def _fail(as_json: bool, exc: KgateError) -> int:
    from kgate.cli.common import fail_usage

    try:
        fail_usage(exc, as_json)
    except _EXIT as done:
        return done.exit_code
    return 2


__all__ = ["app", "main"]
