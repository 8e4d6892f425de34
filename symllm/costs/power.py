"""A card run below the board power its peaks are rated at: what its compute-bound kernels keep of their speed.

``power_limit`` in efficiency.json holds one die's bf16 matmul measured at two board powers (the A100 PCIe at
300 W and the A100 SXM at 400 W, one table); gpus.json gives a card its rated board power (``power_w``) and,
where it runs lower, its limit (``power_limit_w``); ``--power-cap`` (Workload.power_cap) sets one.
:func:`symllm.costs.efficiency.expected` slows the GEMMs and the attention core by :func:`power_fraction` and
leaves memory streams alone (docs/efficiency.md, "Power limits").
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from symllm.costs.figures import data, fraction as _x

__all__ = ["power_fraction"]


@lru_cache(maxsize=256)  # a card's name and a number: what each expected time and plan row asks again
def power_fraction(card: str | None, limit_w=None) -> Fraction:
    """The fraction of its rated speed a compute-bound kernel (a GEMM, the attention core) holds on ``card``
    (a catalogue name) run at a board power limit below the one its peaks are rated at: ``limit_w``, else
    the card's ``power_limit_w`` (gpus.json); 1 where no limit is below its ``power_w``, or the card is
    unknown. ``(limit / rated)^gamma``, ``gamma`` from one die's bf16 matmul measured at two board powers
    (``power_limit`` in efficiency.json: the A100 PCIe at 300 W against the SXM at 400 W). Memory-bound work
    is not slowed (the caller applies this to compute only).

    >>> round(float(power_fraction("h100-sxm-hbm2e")), 4), power_fraction("h100-sxm"), power_fraction(None)
    (0.9215, Fraction(1, 1), Fraction(1, 1))
    >>> round(float(power_fraction("h100-pcie", 310)), 4)  # the 310 W of the 300 W sense-pin setting
    0.971
    """
    if card is None:
        return Fraction(1)
    from symllm.costs.accelerators import gpu
    g = gpu(card)
    limit = limit_w if limit_w is not None else g.power_limit_w
    if not g.power_w or limit is None or limit >= g.power_w:
        return Fraction(1)
    pair = data()["power_limit"]
    low, high = pair["low"], pair["high"]
    gamma = math.log(_x(low["mamf"]) / _x(high["mamf"])) / math.log(Fraction(low["w"], high["w"]))
    return Fraction(math.exp(gamma * math.log(Fraction(str(limit)) / g.power_w))).limit_denominator(10 ** 6)
