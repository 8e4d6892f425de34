"""The expected-time layer's figures: ``efficiency.json`` beside this module (every figure with its source and
date, read once) and an engine's conventions by name. :mod:`symllm.costs.efficiency` composes them into expected
times, :mod:`symllm.costs.collectives` into collectives' times.

>>> fraction("0.721")
Fraction(721, 1000)
"""
from __future__ import annotations

import json
import math
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from symllm.errors import SymllmError
from symllm.validate import choice

__all__ = ["data", "engine", "engine_for", "on_backend", "runs", "KINDS", "fraction", "interpolate"]

#: the kinds of work an engine runs: each quantity is one kind's (its conventions and its tensor-parallel layout:
#: :func:`engine_for`, :func:`symllm.costs.workloads.kind_layout`)
KINDS = ("inference", "training")


@lru_cache(maxsize=1)
def data() -> dict:
    """The shipped figures (``efficiency.json``), read once: decimal strings, read as exact fractions by
    :func:`fraction`.

    >>> sorted(data()["defaults"])
    ['inference', 'training']
    """
    return json.loads((Path(__file__).parent / "efficiency.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=4096)
def fraction(text) -> Fraction:
    """A figure of efficiency.json (a decimal string or a number) as an exact fraction (kept: a plan reads the same
    figures in every row it times)."""
    return Fraction(str(text))


def engine(name: str | None, kind: str = "inference") -> dict:
    """An engine's conventions (``--engine``), by name; None: the default engine for ``kind`` (inference,
    training); an entry's ``figures_of`` names the engine whose entry gives what it does not state. The dict
    holds ``name`` too.

    >>> engine("hf")["kernels_per_layer"], engine(None)["name"]
    (90, 'vllm')
    >>> engine("vllm")["cuda_graphs"], engine(None, "training")["name"]
    (True, 'megatron')
    >>> engine("vLLM")["name"]
    'vllm'
    >>> engine("gpt-fast")["kernels_per_layer"] == engine("torch")["kernels_per_layer"]  # its figures_of
    True
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
    entry = table[key]
    if "figures_of" in entry:  # what this entry does not state, another engine's entry gives (one place)
        entry = {**table[entry["figures_of"]], **entry}
    return {"name": key, **entry}


def runs(name: str | None, kind: str) -> bool:
    """Whether the engine ``name`` (``--engine``) runs ``kind`` work (:data:`KINDS`): inference where its entry's
    ``kind`` is inference, training where it states a training step's figure (``train_factor``: Megatron, torchtitan,
    ...; transformers' Trainer too, ``hf``); None runs neither (no engine given).

    >>> runs("mlc", "inference"), runs("mlc", "training"), runs("megatron", "training"), runs("hf", "training")
    (True, False, True, True)
    """
    choice("kind", kind, KINDS)
    if name is None:
        return False
    entry = engine(name)
    return entry.get("kind") == "inference" if kind == "inference" else "train_factor" in entry


def engine_for(name: str | None, kind: str) -> dict:
    """The engine whose conventions ``kind`` quantities follow under ``--engine name``: that engine where it runs
    ``kind`` work (:func:`runs`), else the default engine of ``kind`` (efficiency.json's ``defaults``): MLC's
    training step is Megatron's, as no one trains with MLC. The one choice of an engine per kind (its layout:
    :func:`symllm.costs.workloads.kind_layout`).

    >>> engine_for("mlc", "inference")["name"], engine_for("mlc", "training")["name"]
    ('mlc', 'megatron')
    >>> engine_for("torchtitan", "inference")["name"], engine_for(None, "training")["name"]
    ('vllm', 'megatron')
    """
    return engine(name if runs(name, kind) else None, kind)


def on_backend(name: str | None, backend: str | None, card: str = "this card") -> str | None:
    """The engine a workload on a card of ``backend`` (gpus.json ``backend``: "metal", an Apple GPU; None: CUDA or
    ROCm) runs under ``--engine name``: ``name`` where the backend runs it, the backend's default where none is
    given (efficiency.json ``backends``: llama.cpp on Metal, as vLLM has no Metal backend), an inference engine the
    backend does not run refused in one line naming ``card``. A training engine is not judged here.

    >>> on_backend(None, "metal"), on_backend("mlc", "metal"), on_backend(None, None), on_backend("vllm", None)
    ('llama.cpp', 'mlc', None, 'vllm')
    >>> on_backend("vllm", "metal", "apple-m2-ultra")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: engine: vllm has no metal backend for apple-m2-ultra; use llama.cpp, mlc, hf, torch
    """
    if backend is None:
        return name
    declared = data()["backends"][backend]
    if name is None:
        return declared["default"]
    key = engine(name)["name"]
    if runs(key, "inference") and key not in declared["engines"]:
        raise SymllmError(f"engine: {key} has no {backend} backend for {card}; use {', '.join(declared['engines'])}")
    return key


def interpolate(table, x) -> Fraction:
    """A table of ``[x, value]`` points read at ``x``: linear in log2(x) between its points, flat beyond its ends.

    >>> interpolate([[1024, "0.5"], [4096, "0.7"]], 2048), interpolate([[1024, "0.5"], [4096, "0.7"]], 10)
    (Fraction(3, 5), Fraction(1, 2))
    """
    points = [(int(a), fraction(b)) for a, b in table]
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            f = Fraction(math.log2(x) - math.log2(x0)) / Fraction(math.log2(x1) - math.log2(x0))
            return y0 + (y1 - y0) * f
    return points[-1][1]
