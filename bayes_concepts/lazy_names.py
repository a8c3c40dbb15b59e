"""Public names of a package imported on first use (PEP 562), so that importing the package stays light."""
from __future__ import annotations

from importlib import import_module
from typing import Callable, Mapping


def lazy_getattr(package: str, exports: Mapping) -> Callable:
    """A module ``__getattr__`` for ``package`` that imports ``exports[name]`` (a module path
    relative to ``package``, ``".fit"``) when ``name`` is first asked for."""
    def __getattr__(name):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(module, package), name)
    return __getattr__


__all__ = ["lazy_getattr"]
