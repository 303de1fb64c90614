"""`python -m kgate` runs the CLI."""

from kgate.cli import main

main()
