"""Human and machine rendering of reports; nothing here measures or decides."""

from kgate.report.text import render_error, render_report
from kgate.jsonio import dumps, write_atomic

__all__ = ["dumps", "render_error", "render_report", "write_atomic"]
