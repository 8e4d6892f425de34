"""Lazy attributes for symllm's packages: a name is imported on first use, so ``import symllm`` (and the
``symllm`` command) pays only for what it touches."""
from __future__ import annotations

import importlib
import sys


def attributes(package: str, names: dict[str, tuple[str, str | None]], base: str | None = None):
    """``__getattr__`` and ``__dir__`` for the module ``package``: ``names`` maps a public name to (module
    below ``base``, by default ``package`` itself; attribute, None for the module itself).

    >>> getattr_, dir_ = attributes("symllm", {"errors": ("errors", None)})
    >>> getattr_("errors").__name__
    'symllm.errors'
    """

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = names[name]
        mod = importlib.import_module(f"{base or package}.{module}")
        value = mod if attr is None else getattr(mod, attr)
        sys.modules[package].__dict__.setdefault(name, value)  # found directly next time (3 us a call)
        return value

    def __dir__():
        return sorted(names)

    return __getattr__, __dir__


class module:  # noqa: N801 (stands for a module)
    """A module imported on first attribute use: ``sp = module("sympy")`` lets a module whose tables are
    read without SymPy (``symllm count``) write its formulas with ``sp.`` as usual.

    >>> m = module("fractions")
    >>> m.Fraction(1, 2)
    Fraction(1, 2)
    """

    __slots__ = ("_name",)

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str):
        name = object.__getattribute__(self, "_name")
        mod = sys.modules.get(name)
        return getattr(mod if mod is not None else importlib.import_module(name), attr)

    def __repr__(self):
        return f"<lazy module {object.__getattribute__(self, '_name')!r}>"
