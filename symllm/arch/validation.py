"""Checks on single values read from a config file, and the one-line form a bad value is echoed in.

>>> positive_int("dim", 4096.0), short(10**400)
(4096, 'an integer of 1329 bits')
"""
from __future__ import annotations

import math

from symllm.errors import SymllmError

__all__ = ["MAX_FLOAT_INT", "short", "positive_int", "positive_float"]

#: the largest float accepted for an integer field (``4096.0``): past 2**53 a double no longer holds
#: every integer, so ``1e30`` is refused rather than read as 1000000000000000019884624838656
MAX_FLOAT_INT = 2**53


def short(value) -> str:
    """``repr(value)``, cut to one short line (a 4,000-digit integer is not echoed in full).

    >>> short("x" * 100)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."
    """
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 else f"an integer of {value.bit_length()} bits"
    return text if len(text) <= 60 else text[:57] + "..."


def positive_int(field: str, value, *, optional: bool = False):
    """``value`` as a positive int (an integral float up to :data:`MAX_FLOAT_INT` too: a Meta
    ``params.json`` may say ``4096.0``); ``None`` passes when ``optional``.

    >>> positive_int("n_layers", 0)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: n_layers: expected a positive integer, got 0
    """
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and 0 < value <= MAX_FLOAT_INT:
            return int(value)
        raise SymllmError(f"{field}: expected a positive integer, got {short(value)}")
    if value <= 0:
        raise SymllmError(f"{field}: expected a positive integer, got {short(value)}")
    return value


def positive_float(field: str, value) -> float:
    """``value`` as a positive finite float.

    >>> positive_float("norm_eps", 1)
    1.0
    """
    try:
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0
        out = float(value) if ok else None
    except OverflowError:  # an integer beyond a double's range
        ok = False
    if not ok:
        raise SymllmError(f"{field}: expected a positive number, got {short(value)}")
    return out
