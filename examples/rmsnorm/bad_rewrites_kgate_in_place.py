"""KNOWN-BAD (grader patching, in place): importing this candidate writes into the bytecode of
one of kgate's parity functions where the interpreter runs it (through ctypes), turning its
first comparison around: the function, its code object and `co_code` stay the very objects they
were, so no rebinding shows, and only the bytes the interpreter executes differ. The rewrite
itself is right; a grader that ran in its process would be wrong. kgate grades in a process that
never imported it, and the watch reads the executed bytecode again at the end: an ANOMALY."""

import ctypes
import dis
import sys

from xla_rewrite import workload  # noqa: F401  (the right values)


def _turn_first_comparison(fn):
    code = fn.__code__
    live = getattr(code, "_co_code_adaptive", None)
    if live is None:  # an interpreter that runs co_code itself: nothing hidden to write into
        return
    memory = ctypes.string_at(id(code), sys.getsizeof(code))
    at = memory.find(live)
    for i in range(0, len(live), 2):
        if at > 0 and live[i] == dis.opmap["COMPARE_OP"]:
            ctypes.memmove(id(code) + at + i + 1, bytes([live[i + 1] ^ 1]), 1)  # `<` <-> `<=`, `==` <-> `!=`
            return


parity = sys.modules.get("kgate.gates.parity")
if parity is not None:
    _turn_first_comparison(parity.computes)
