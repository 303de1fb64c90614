"""Known-bad (hostile): puts the Triton interpreter's launcher back to the function kgate
wrapped, so its launches would go unrecorded (and unperturbed by the firing audit). The
launcher is part of the watched surface: integrity.process_untouched FAILs (ANOMALY)."""

import triton.runtime.interpreter as interpreter

from softmax_triton import ModelNew  # noqa: F401

_run = interpreter.InterpretedFunction.run
interpreter.InterpretedFunction.run = lambda self, *a, **kw: _run.__wrapped__(self, *a, **kw) if hasattr(
    _run, "__wrapped__") else _run(self, *a, **kw)
