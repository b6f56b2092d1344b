"""Lazy public names (PEP 562): a package lists where each of its public names lives, and
the module that defines a name is imported the first time the name is read.

``import symroof`` then costs what the question asked needs, not the whole package: the
command line's ``report`` never loads matplotlib, the NumPy twin, the training plans or the
strategy search. A name moved to a subpackage fails with where it lives now.

>>> import sys, types
>>> pkg = sys.modules["pkg"] = types.ModuleType("pkg")     # a package of its own
>>> pkg.__getattr__, pkg.__dir__ = attach("pkg", {"dot": "symroof.ops"},
...                                        moved={"rmsnorm": "symroof.ops"})
>>> pkg.dot.__name__
'dot'
>>> pkg.rmsnorm
Traceback (most recent call last):
...
AttributeError: pkg.rmsnorm is not a top-level name: it lives in symroof.ops (from ...)
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["attach"]


class _Package(types.ModuleType):
    """A package whose public names win over its submodules of the same name: importing
    ``symroof.evaluate`` (the module) binds it as an attribute of ``symroof``, which would
    hide ``sr.evaluate`` (the function) from ``__getattr__``; that binding is skipped."""

    def __setattr__(self, name: str, value: Any) -> None:
        if (isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}"
                and name in vars(self).get("_lazy_names", ())):
            return
        super().__setattr__(name, value)


def attach(package: str, names: Mapping[str, str], moved: Mapping[str, str] | None = None,
           modules: Mapping[str, str] | None = None
           ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` for ``names`` (public name
    -> the module that defines it, relative to ``package``) and ``modules`` (public name ->
    a module that is the value itself); ``moved`` names the modules of names that are no
    longer public at this level. A name read once is cached in the package, so the second
    read is a plain attribute lookup.

    >>> import sys, types
    >>> sys.modules["tiny_pkg"] = types.ModuleType("tiny_pkg")
    >>> get, _ = attach("tiny_pkg", {"Cost": "symroof.cost"})
    >>> get("Cost").__name__
    'Cost'
    """
    moved, modules = dict(moved or {}), dict(modules or {})
    target = sys.modules[package]
    target._lazy_names = frozenset(names)
    target.__class__ = _Package

    def __getattr__(name: str) -> Any:
        if name in modules:
            value = importlib.import_module(modules[name], package)
            setattr(sys.modules[package], name, value)
            return value
        where = names.get(name)
        if where is None:
            if name in moved:
                raise AttributeError(
                    f"{package}.{name} is not a top-level name: it lives in {moved[name]} "
                    f"(from {moved[name]} import {name})")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(names) | set(modules) | set(vars(sys.modules[package])))

    return __getattr__, __dir__
