"""kgate: make kernel-optimization claims trustworthy (parity, firing audit, honest timing)."""

__version__ = "0.3.4"

from kgate import clock as _clock  # noqa: E402,F401  (binds the clocks first)
from kgate.errors import KgateError  # noqa: E402

__all__ = ["KgateError", "__version__"]
