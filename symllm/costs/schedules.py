"""Pipeline schedules (``--schedule``): the bubble a schedule leaves and the hand-offs on a step's critical path,
what the expected training time (:func:`symllm.costs.efficiency.expected`) and the planner read.

>>> bubble(2, 4), handoffs(2, 4)
(Fraction(1, 4), 5)
"""
from __future__ import annotations

from fractions import Fraction

from symllm.validate import choice

__all__ = ["SCHEDULES", "bubble", "handoffs"]

#: pipeline schedules (``--schedule``): one forward and one backward in turn, or interleaved virtual stages
SCHEDULES = ("1f1b", "interleaved")


def bubble(stages: int, micro_batches: int, schedule: str = "1f1b", chunks: int = 2) -> Fraction:
    """The pipeline bubble as a fraction of the ideal step: ``(p-1)/m`` for 1F1B over ``m`` micro-batches
    (idle time ``(p-1)/(m+p-1)`` of the whole), ``(p-1)/(v·m)`` interleaved over ``v`` chunks a stage
    (Narayanan et al. 2021, sec. 2.2.2), but never a step shorter than one micro-batch's own way through the
    ``p`` stages and back, ``p`` stage-times (``(p-m)/m``: fewer micro-batches than stages leave the chunks
    nothing to fill the wait with).

    >>> bubble(4, 8), bubble(4, 8, "interleaved"), bubble(1, 1), bubble(4, 1, "interleaved", 4)
    (Fraction(3, 8), Fraction(3, 16), Fraction(0, 1), Fraction(3, 1))
    """
    choice("schedule", schedule, SCHEDULES)
    v = chunks if schedule == "interleaved" else 1
    return max(Fraction(stages - 1, v * micro_batches), Fraction(stages - micro_batches, micro_batches))


def handoffs(stages: int, micro_batches: int, schedule: str = "1f1b") -> int:
    """One-way sends of a micro-batch's activations or their gradient (``β_a·b·s·d``) on a 1F1B step's critical
    path: Megatron-LM's ``forward_backward_pipelining_without_interleaving`` (megatron/core/pipeline_parallel/
    schedules.py, commit d98e8a64) sends each micro-batch on and its gradient back at every boundary, waiting on
    each exchange (a middle stage two a micro-batch, each both ways at once; an end stage one). Traced, sends
    shorter than a stage's work: ``2(p-1)`` for one micro-batch, ``m+1`` over two stages, else ``2m+2p-5``.
    Interleaved: one micro-batch's ``2(p-1)`` (its sends, ``v`` chunks a stage and overlapped, not traced).

    >>> handoffs(1, 8), handoffs(2, 2), handoffs(4, 1), handoffs(4, 8), handoffs(4, 8, "interleaved")
    (0, 3, 6, 19, 6)
    """
    p, m = stages, micro_batches
    if p == 1 or m == 1 or schedule == "interleaved":
        return 2 * (p - 1)
    return m + 1 if p == 2 else 2 * m + 2 * p - 5
