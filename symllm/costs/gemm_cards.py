"""A card's GEMMs against the reference card's, where the ``gemm`` tables of efficiency.json were measured
(the H200): :func:`card_scale`, from the published tables under ``gemm_cards`` in efficiency.json: the
Maximum Achievable Matmul FLOPS table first, then, for a card it lacks, a table of square ``torch.mm``
runs (``gemm_cards.square``), each card against the reference card of its own table.

:func:`symllm.costs.efficiency.gemm` multiplies its measured M-curve by this scale (at most 1 of the card's
own peak); docs/efficiency.md ("Each card's GEMMs") says where each figure comes from.
"""
from __future__ import annotations

from fractions import Fraction
from statistics import median

from symllm.costs.figures import data, fraction as _x

__all__ = ["card_scale"]


def card_scale(table: str, card: str | None) -> Fraction:
    """How much more (or less) of its dense peak ``card``'s GEMMs reach than the reference card's (the H200,
    where the ``gemm`` tables were measured): the ratio of their Maximum Achievable Matmul FLOPS efficiencies
    (``gemm_cards`` in efficiency.json, one published table for both), else of their square ``torch.mm``
    efficiencies (``gemm_cards.square``: the median of a card's machines over its catalogue bf16 peak, against
    the same table's H200); 1 for a card in neither.

    >>> card_scale("bf16", "a100-80gb"), card_scale("bf16", "h100-sxm"), card_scale("bf16", "h100-nvl")
    (Fraction(111757, 103285), Fraction(1, 1), Fraction(1, 1))
    >>> [round(float(card_scale("bf16", c)), 4) for c in ("rtx4090", "h100-pcie", "l40s")], card_scale("fp8", "l40s")
    ([1.2624, 0.8213, 0.9307], Fraction(1, 1))
    """
    figures = data()["gemm_cards"]
    if card in (rows := figures[table]):
        def efficiency(name: str) -> Fraction:
            return _x(rows[name]["mamf"]) / _x(rows[name]["theory"])
    elif card in (rows := figures["square"].get(table, {})):
        from symllm.costs.accelerators import gpu

        def efficiency(name: str) -> Fraction:
            return median(_x(x) for x in rows[name]["tflops"]) * 10 ** 12 / gpu(name).bf16
        figures = figures["square"]
    else:
        return Fraction(1)
    return efficiency(card) / efficiency(figures["reference"])
