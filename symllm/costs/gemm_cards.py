"""A card's GEMMs against the reference card's, where the ``gemm`` tables of efficiency.json were measured
(the H200): :func:`card_scale`, from the published tables under ``gemm_cards`` in efficiency.json.

:func:`symllm.costs.efficiency.gemm` multiplies its measured M-curve by this scale (at most 1 of the card's
own peak); docs/efficiency.md ("GEMMs on other cards") says where each figure comes from.
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.figures import data, fraction as _x

__all__ = ["card_scale"]


def card_scale(table: str, card: str | None) -> Fraction:
    """How much more (or less) of its dense peak ``card``'s GEMMs reach than the reference card's (the H200,
    where the ``gemm`` tables were measured): the ratio of their Maximum Achievable Matmul FLOPS efficiencies
    (``gemm_cards`` in efficiency.json, one published table for both); 1 for a card without a figure.

    >>> card_scale("bf16", "a100-80gb"), card_scale("bf16", "h100-sxm"), card_scale("bf16", "l40s")
    (Fraction(111757, 103285), Fraction(1, 1), Fraction(1, 1))
    """
    figures = data()["gemm_cards"]
    if card not in (rows := figures[table]):
        return Fraction(1)

    def efficiency(row) -> Fraction:
        return _x(row["mamf"]) / _x(row["theory"])
    return efficiency(rows[card]) / efficiency(rows[figures["reference"]])
