"""Lazy attributes for symllm's packages: a name is imported on first use, so ``import symllm`` (and the
``symllm`` command) pays only for what it touches."""
from __future__ import annotations

import importlib


def attributes(package: str, names: dict[str, tuple[str, str | None]]):
    """``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps a public name to (module below
    ``package``, attribute; None for the module itself).

    >>> getattr_, dir_ = attributes("symllm", {"errors": ("errors", None)})
    >>> getattr_("errors").__name__
    'symllm.errors'
    """

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = names[name]
        mod = importlib.import_module(f"{package}.{module}")
        return mod if attr is None else getattr(mod, attr)

    def __dir__():
        return sorted(names)

    return __getattr__, __dir__
