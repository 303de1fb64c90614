"""The problem-module protocol: load reference and candidate modules, resolve entries,
apply op-point overrides, and snapshot what a candidate's import must not change."""

from kgate.problem.module import LoadedPair, ProblemModule, config_set, load_pair, load_reference, load_requested_pair
from kgate.problem.oppoint import parse_overrides, OpPoint
from kgate.problem.snapshot import ModuleSnapshot, snapshot_module

__all__ = [
    "LoadedPair",
    "ModuleSnapshot",
    "OpPoint",
    "ProblemModule",
    "config_set",
    "load_pair",
    "load_requested_pair",
    "load_reference",
    "parse_overrides",
    "snapshot_module",
]
