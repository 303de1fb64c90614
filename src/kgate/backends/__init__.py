"""One adapter per framework. Nothing above this package imports jax or torch: callers
ask for a backend by name and get an object speaking plain numpy and strings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgate.backends.base import Ablation, DeviceInfo, HostTree, KernelSite, ProgramFacts

if TYPE_CHECKING:
    from kgate.backends.jax_backend import JaxBackend

__all__ = ["Ablation", "DeviceInfo", "HostTree", "KernelSite", "ProgramFacts", "get_backend"]

_INSTANCES: dict[str, object] = {}


def get_backend(name: str = "jax") -> JaxBackend:
    """The backend for `name`, imported on first use (importing jax is slow)."""
    if name != "jax":
        from kgate.errors import KgateError

        raise KgateError(f"backend {name!r} is not available.", "use --backend jax.")
    if name not in _INSTANCES:
        from kgate.backends.jax_backend import JaxBackend

        _INSTANCES[name] = JaxBackend()
    return _INSTANCES[name]  # type: ignore[return-value]
