"""Gates: pure functions from measurements (numpy arrays, program text, snapshots) to
results with a status and the numbers behind it. No framework imports here."""

from kgate.gates.common import Check, GateResult

__all__ = ["Check", "GateResult"]
