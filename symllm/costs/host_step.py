"""What an engine's host does a step beyond its layers' kernels while the GPU waits: Ray's control plane where an
engine drives its ranks as Ray actors (``control_plane.ray`` in efficiency.json) and an eager engine's own host work
(its inputs' copies, the embedding, the sampler's launches: ``step_host`` under an engine), read by
:func:`symllm.costs.efficiency.expected`'s decode step.

>>> round(float(ray_step_s(2)) * 1e6, 1)   # 1/2057.1 + 1/7183.9 s
625.3
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.figures import data, fraction as _x

__all__ = ["ray_step_s", "step_host_s"]


def ray_step_s(workers: int) -> Fraction:
    """Seconds a step's control plane takes where an engine drives ``workers`` ranks as Ray actors
    (``control_plane.ray`` in efficiency.json, Ray 2.7.0's release microbenchmarks): one synchronous actor call's
    round trip, and each further call's submission at the asynchronous rate; nothing for one rank (no Ray).

    >>> round(float(ray_step_s(4)) * 1e6, 1), ray_step_s(1)   # 1/2057.1 + 3/7183.9 s
    (903.7, Fraction(0, 1))
    """
    if workers <= 1:
        return Fraction(0)
    ray = data()["control_plane"]["ray"]
    return 1 / _x(ray["sync_calls_per_s"]) + (workers - 1) / _x(ray["async_calls_per_s"])


def step_host_s(serve: dict, tp: int) -> Fraction:
    """Seconds an eager engine's host spends a step beyond its layers' kernels while the GPU waits for it
    (``step_host`` under an engine in efficiency.json, counted in its code: its inputs' copies, the embedding,
    the sampler's launches between its syncs): ``launches`` at ``kernel.host_s``; over ``tp`` > 1 ranks
    ``split_launches`` and ``per_rank_launches`` a rank more (the embedding's all-reduce and the logits' gather
    are calls of the step's collectives, :func:`step_collectives`). Nothing for an engine without the figure.

    >>> from symllm.costs.figures import engine
    >>> round(float(step_host_s(engine("vllm-v0.2"), 4)) * 1e6, 1)   # (30 + 8 + 4) x 24 us
    1008.0
    >>> step_host_s(engine("vllm"), 4)
    Fraction(0, 1)
    """
    host = serve.get("step_host")
    if not host:
        return Fraction(0)
    launches = host["launches"] + ((host["split_launches"] + tp * host["per_rank_launches"]) if tp > 1 else 0)
    return launches * _x(data()["kernel"]["host_s"])
