"""The expected-time layer's figures: ``efficiency.json`` beside this module (every figure with its source and
date, read once) and an engine's conventions by name. :mod:`symllm.costs.efficiency` composes them into expected
times, :mod:`symllm.costs.collectives` into collectives' times.

>>> fraction("0.721")
Fraction(721, 1000)
"""
from __future__ import annotations

import json
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from symllm.validate import choice

__all__ = ["data", "engine", "fraction"]


@lru_cache(maxsize=1)
def data() -> dict:
    """The shipped figures (``efficiency.json``), read once: decimal strings, read as exact fractions by
    :func:`fraction`.

    >>> sorted(data()["defaults"])
    ['inference', 'training']
    """
    return json.loads((Path(__file__).parent / "efficiency.json").read_text(encoding="utf-8"))


def fraction(text) -> Fraction:
    """A figure of efficiency.json (a decimal string or a number) as an exact fraction."""
    return Fraction(str(text))


def engine(name: str | None, kind: str = "inference") -> dict:
    """An engine's conventions (``--engine``), by name; None: the default engine for ``kind`` (inference,
    training). The dict holds ``name`` too.

    >>> engine("hf")["kernels_per_layer"], engine(None)["name"]
    (90, 'vllm')
    >>> engine("vLLM")["name"]
    'vllm'
    >>> engine("tensorflow")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: engine: unknown 'tensorflow' (known: all ...: see docs/efficiency.md)
    """
    table = data()["engines"]
    if name is None:
        name = data()["defaults"][kind]
    key = name.lower() if isinstance(name, str) else name
    if key not in table or key == "about":
        choice("engine", name, [k for k in table if k != "about"], see="docs/efficiency.md")
    return {"name": key, **table[key]}
