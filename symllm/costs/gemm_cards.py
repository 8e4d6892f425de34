"""A card's GEMMs against the reference card's, where the ``gemm`` tables of efficiency.json were measured
(the H200): :func:`card_scale`, from the published tables under ``gemm_cards`` in efficiency.json: the
Maximum Achievable Matmul FLOPS table first, then, for a card it lacks, a table of square ``torch.mm``
runs (``gemm_cards.square``), each card against the reference card of its own table.

:func:`symllm.costs.efficiency.gemm` multiplies its measured M-curve by this scale (at most 1 of the card's
own peak); docs/efficiency.md ("Each card's GEMMs") says where each figure comes from.

:func:`small_m_rate`: where an engine's fp16 GEMMs of a few rows run on a library measured on the card
(``gemm.small_m``), the bytes a second their weights stream at most.
"""
from __future__ import annotations

from fractions import Fraction
from statistics import median

from symllm.costs.figures import data, fraction as _x, interpolate

__all__ = ["card_scale", "small_m_rate"]


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


def small_m_rate(engine: str, card: str | None, m: int) -> Fraction | None:
    """The bytes a second at most at which ``engine``'s fp16 GEMMs of ``m`` token rows (its padded rows) stream
    their weights on ``card``, where ``gemm.small_m`` in efficiency.json measured that engine's library on that
    card (cuBLAS 11.10 of torch 2.0.1 on an 80 GB A100, from ``m`` = 8 rows); None elsewhere, and below the
    table's first row count (one row runs cuBLAS's GEMV, not measured there).

    >>> float(small_m_rate("vllm-v0.2", "a100-80gb-pcie", 8)), float(small_m_rate("vllm-v0.2", "a100-80gb", 32))
    (1633000000000.0, 1614000000000.0)
    >>> [small_m_rate(e, c, m) for e, c, m in [("vllm-v0.2", "a10g", 8), ("vllm", "a100-80gb", 8),
    ...                                        ("vllm-v0.2", "a100-80gb", 1)]]
    [None, None, None]
    """
    table = data()["gemm"].get("small_m")
    if not table or engine not in table["engines"] or card not in table["cards"] or m < table["tb_s"][0][0]:
        return None
    return interpolate(table["tb_s"], m) * 10 ** 12
