"""The `kgate` command line: parse, call one library function, render, exit.

Exit codes: 0 pass, 1 pass with advisory findings, 2 gate failure / anomaly / bad input.
The commands live in `checks` (gate, parity, measure, ...) and `records` (init, stub,
cand, ..., verdict, report); importing them registers them on `app`, in help order.
"""

from __future__ import annotations

from kgate import __version__
from kgate.cli import checks, records  # noqa: F401  (registers the commands)
from kgate.cli.common import app


@app.command()
def version() -> None:
    """Print kgate's version."""
    print(__version__)


def main() -> None:
    app(prog_name="kgate")


__all__ = ["app", "main"]
