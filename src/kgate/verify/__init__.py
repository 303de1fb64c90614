"""Orchestration: run gates in order against loaded modules and combine them into a report."""

from kgate.verify.outcome import Report
from kgate.verify.early import CheckRequest, run_gate, run_parity

__all__ = ["CheckRequest", "Report", "run_gate", "run_parity"]
