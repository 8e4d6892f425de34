"""Data-parallel and pipeline traffic's calls and expected seconds: the data-parallel collectives a training step runs
by ZeRO stage and FSDP unit (:func:`dp_collectives`, those :func:`symllm.costs.rings.dp_bytes` sizes) and their time
(:func:`training_dp_s`), and a pipeline's point-to-point sends (:func:`p2p_latency_s`, :func:`p2p_s`), each at the
latency of its link (:mod:`symllm.costs.collectives`' figures). :mod:`symllm.costs.efficiency` adds them to a step.

>>> dp_collectives(1, 2)
{'all_reduce': 0, 'all_gather': 1, 'reduce_scatter': 2}
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.collectives import allreduce_latency_s, allreduce_s, gather_latency_s, link_kind
from symllm.costs.figures import data, fraction as _x

__all__ = ["dp_collectives", "training_dp_s", "p2p_latency_s", "p2p_s"]


def dp_collectives(zero_stage: int, rounds: int, layers: int = 0, pp: int = 1, units: dict | None = None) -> dict:
    """The data-parallel collectives a training step runs (those :func:`symllm.costs.rings.dp_bytes` sizes), by kind:
    ZeRO 0 one all-reduce a round (DDP's gradient buckets not counted); ZeRO 1 and 2 a reduce-scatter a round and
    one all-gather of the updated weights; ZeRO 3 each FSDP unit all-gathered in forward and again in backward and
    reduce-scattered once, every round. ``units``: an engine's ``fsdp_units`` (efficiency.json: one a block of the
    ``layers`` a stage holds, ``extra`` more, ``kept`` of them not resharded after forward; through a pipeline, where
    ``pp`` > 1, a stage holds one of the extra units and gathers each unit once a step); without it the stage's
    weights are one unit, gathered twice a round as the bytes count them.

    >>> dp_collectives(0, 1), dp_collectives(2, 1)["all_gather"]
    ({'all_reduce': 1, 'all_gather': 0, 'reduce_scatter': 0}, 1)
    >>> dp_collectives(3, 4, 32, units={"extra": 2, "kept": 1})   # 34 units: 4 x (2 x 34 - 1) gathers, 4 x 34
    {'all_reduce': 0, 'all_gather': 268, 'reduce_scatter': 136}
    >>> dp_collectives(3, 1, 16, pp=8, units={"extra": 2, "kept": 1})   # 17 units, each gathered once
    {'all_reduce': 0, 'all_gather': 17, 'reduce_scatter': 17}
    >>> dp_collectives(3, 1, 16, pp=8)   # no engine's units: the stage's weights, gathered twice
    {'all_reduce': 0, 'all_gather': 2, 'reduce_scatter': 1}
    """
    out = {"all_reduce": 0, "all_gather": 0, "reduce_scatter": 0}
    # by the stage's number, as the expected step reads it (symllm.costs.zero.sharded would import SymPy)
    if zero_stage == 0:
        out["all_reduce"] = rounds
    elif zero_stage < 3:
        out.update(reduce_scatter=rounds, all_gather=1)
    else:
        count = layers + units["extra"] - (pp > 1) if units else 1
        gathers = (count if pp > 1 else 2 * count - units["kept"]) if units else 2
        out.update(reduce_scatter=rounds * count, all_gather=rounds * gathers)
    return out


def training_dp_s(calls: dict, sent_bytes, link: tuple[str, int] | None, ranks: int) -> Fraction:
    """Seconds a training step's data-parallel collectives ``calls`` (:func:`dp_collectives`) take over ``link``,
    ``sent_bytes`` per GPU at the link's bus bandwidth: each all-reduce at the link's latency
    (:func:`~symllm.costs.collectives.allreduce_s`), each all-gather and reduce-scatter over ``ranks`` at NCCL's ring
    share of it (:func:`~symllm.costs.collectives.gather_latency_s`).

    >>> calls, link = {"all_reduce": 0, "all_gather": 2, "reduce_scatter": 1}, ("InfiniBand NDR", 400 * 10 ** 9)
    >>> round(float(training_dp_s(calls, 0, link, 2)) * 1e6, 3)   # 3 x 15.5 us
    46.5
    """
    gathers = calls["all_gather"] + calls["reduce_scatter"]
    return allreduce_s(calls["all_reduce"], sent_bytes, link, ranks=ranks) + gathers * gather_latency_s(link, ranks)


def p2p_latency_s(link: tuple[str, int] | None) -> Fraction:
    """The latency of one point-to-point send between two ranks across ``link`` (a pipeline's hand-off):
    ``collectives.p2p_latency`` by the link's kind where a send was measured, else the link's all-reduce latency
    between two ranks (:func:`~symllm.costs.collectives.allreduce_latency_s`); none without a link.

    >>> us = lambda s: round(float(s) * 1e6, 3)
    >>> us(p2p_latency_s(("NVLink 4", 450 * 10 ** 9))), us(p2p_latency_s(("InfiniBand NDR", 50 * 10 ** 9)))
    (3.0, 20.0)
    >>> us(p2p_latency_s(("PCIe Gen4 x16", 32 * 10 ** 9)))   # 4.8 + 2 x 2.6 us
    10.0
    """
    if link is None:
        return Fraction(0)
    measured = data()["collectives"]["p2p_latency"].get(link_kind(link[0]))
    return _x(measured) if measured is not None else allreduce_latency_s(link, 2)


def p2p_s(sends: int, sent_bytes, link: tuple[str, int] | None) -> Fraction:
    """Seconds ``sends`` point-to-point sends take that together carry ``sent_bytes`` over ``link``: each at
    :func:`p2p_latency_s`, the bytes at the link's bus bandwidth (:func:`~symllm.costs.collectives.allreduce_s`'s).

    >>> round(float(p2p_s(4, 0, ("NVLink 4", 450 * 10 ** 9))) * 1e6, 3)   # 4 x 3 us
    12.0
    """
    if link is None or (not sends and not sent_bytes):
        return Fraction(0)
    return sends * p2p_latency_s(link) + allreduce_s(0, sent_bytes, link)
