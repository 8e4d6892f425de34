"""Validators and their messages, once: a config's, a workload's, a sweep's and a formula's options are
checked by these, and each refusal is one line that names the field (``symllm: error: <field>: <what>``).

>>> positive_int("seq", 0)
Traceback (most recent call last):
...
symllm.errors.SymllmError: seq: expected a positive integer, got 0
>>> choice("attention", "flash", ("dense", "causal"))
Traceback (most recent call last):
...
symllm.errors.SymllmError: attention: unknown 'flash' (known: dense, causal)
"""
from __future__ import annotations

import math

from symllm.errors import SymllmError

__all__ = ["WIDTH", "MAX_FLOAT_INT", "ZERO_STAGES", "listed", "short", "shown_path", "positive_int", "integer", "positive_number", "boolean",
           "choice", "zero_stage"]

#: the largest float accepted for an integer read from a file (``4096.0``): past 2**53 a double no longer
#: holds every integer, so ``1e30`` is refused rather than read as 1000000000000000019884624838656
MAX_FLOAT_INT = 2**53

#: the ZeRO stages (0: none; 1 shards the optimizer states, 2 the gradients too, 3 the weights too)
ZERO_STAGES = (0, 1, 2, 3)


#: the widest line symllm prints on a terminal (tables, derivations, help), an error line included: "symllm:
#: error: " and a message of at most 85 characters (a list of names or a path is cut to fit: listed, shown_path)
WIDTH = 100


def listed(names, room: int = 40) -> str:
    """``names`` joined by ", ", as many as fit in ``room`` characters, then "...": the known names a one-line
    message shows (the message says where the whole list is when it is cut).

    >>> listed(["dense", "causal"])
    'dense, causal'
    >>> listed(["h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200", "a100-40gb", "a100-80gb"])
    'h100-sxm, h100-pcie, h100-nvl, h200, ...'
    """
    names = [str(n) for n in names]
    text = ", ".join(names)
    if len(text) <= room:
        return text
    out = []
    for name in names:
        if len(", ".join(out + [name, "..."])) > room:
            break
        out.append(name)
    return ", ".join(out + ["..."])


def shown_path(path, room: int = 32) -> str:
    """A path as a message quotes it (``repr``), in at most ``room`` characters: past that its start is cut
    to "..." (the file's name and the folders nearest it stay).

    >>> shown_path("/tmp/a.json")
    "'/tmp/a.json'"
    >>> shown_path("/tmp/pytest-of-root/pytest-293/popen-gw1/test_hostile_config_files_are_0/c.json")
    "'.../c.json'"
    >>> shown_path("/home/me/models/llama/config.json")
    "'.../llama/config.json'"
    """
    text = repr(str(path))
    if len(text) <= room:
        return text
    keep = room - 6  # room for the quotes and ".../"
    while keep > 1 and len(repr(str(path)[-keep:])) > room - 4:  # escapes (\x08) take more than a column
        keep -= 1
    tail = str(path)[-keep:]
    cut = tail.find("/")
    return repr(".../" + (tail[cut + 1:] if 0 <= cut < len(tail) - 1 else tail))


def short(value, room: int = 40) -> str:
    """``repr(value)``, cut to one short line of at most ``room`` characters (a 4,000-digit integer is not
    echoed in full).

    >>> short(2**300), short("x" * 100, 10)
    ('an integer of 301 bits', "'xxxxxx...")
    """
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 else \
        f"an integer of {value.bit_length()} bits"
    return text if len(text) <= room else text[:room - 3] + "..."


def integer(field: str, value, *, low: int = 1, optional: bool = False, floats: bool = False):
    """``value`` as an int of at least ``low`` (1: "positive", 0: "non-negative"); ``optional``: ``None``
    passes; ``floats``: an integral float up to :data:`MAX_FLOAT_INT` is read as its int (JSON's
    ``4096.0``). A bool is never an integer.

    >>> integer("gen", 0, low=0), integer("dim", 4096.0, floats=True)
    (0, 4096)
    """
    if value is None and optional:
        return None
    if isinstance(value, float) and floats and value.is_integer() and low <= value <= MAX_FLOAT_INT:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        kind = "positive" if low == 1 else "non-negative" if low == 0 else f">= {low}"
        raise SymllmError(f"{field}: expected a {kind} integer, got {short(value)}")
    return value


def positive_int(field: str, value, *, optional: bool = False, floats: bool = False):
    """:func:`integer` of at least 1."""
    return integer(field, value, optional=optional, floats=floats)


def positive_number(field: str, value) -> float:
    """``value`` (an int or a float, finite, above 0) as a float.

    >>> positive_number("ffn_dim_multiplier", 1.3)
    1.3
    """
    try:
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0
        out = float(value) if ok else None
    except OverflowError:  # an integer beyond a double's range
        ok = False
    if not ok:
        raise SymllmError(f"{field}: expected a positive number, got {short(value)}")
    return out


def boolean(field: str, value) -> bool:
    """``value`` if it is a bool (``"no"`` and ``1`` are not: a truthy string would silently switch on).

    >>> boolean("tied", "no")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tied: expected True or False, got 'no'
    """
    if not isinstance(value, bool):
        raise SymllmError(f"{field}: expected True or False, got {short(value)}")
    return value


def choice(field: str, value, known):
    """``value`` if it is one of ``known``."""
    try:
        ok = value in known
    except TypeError:  # an unhashable value asked of a dict
        ok = False
    if not ok:
        raise SymllmError(f"{field}: unknown {short(value)} (known: {listed(known, 50)})")
    return value


def zero_stage(value) -> int:
    """``value`` if it is a ZeRO stage (:data:`ZERO_STAGES`).

    >>> zero_stage(4)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: zero_stage: expected 0, 1, 2 or 3, got 4
    """
    if isinstance(value, bool) or not isinstance(value, int) or value not in ZERO_STAGES:
        raise SymllmError(f"zero_stage: expected 0, 1, 2 or 3, got {short(value)}")
    return value
