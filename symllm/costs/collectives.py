"""Collectives' and the control plane's expected seconds: the collectives a tensor-parallel inference step runs
(:func:`step_collectives`, the one count its bytes, its latencies and the host's calls read), a tensor-parallel
all-reduce and a MoE all-to-all by the link they cross (nccl-tests and DeepEP figures in ``efficiency.json``:
:func:`collective`), and the round trip of an engine that drives its ranks as Ray actors, and the host work an
eager engine does a step beyond its layers (:func:`step_host_s`). :mod:`symllm.costs.efficiency` adds them to a step.

>>> float(alltoall_s(1, 0, ("NVLink 4", 450 * 10 ** 9))) == float(allreduce_s(1, 0, ("NVLink 4", 450 * 10 ** 9)))
True
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.figures import data, fraction as _x

__all__ = ["step_collectives", "collective", "allreduce_s", "alltoall_s", "ray_step_s", "step_host_s"]


def step_collectives(stage, experts: str = "split") -> dict:
    """The collectives one forward pass through a pipeline ``stage`` (a component as tensor rank 0 holds it) runs
    over the tensor ranks, by kind, repeats included: ``residual``, the all-reduces of the residual stream, one a
    sublayer the ranks sum (:func:`symllm.costs.parallel.reduced_sublayers`) and the embedding's where the stage
    holds one split over the vocabulary (:func:`symllm.costs.parallel.summed`: vLLM's and SGLang's
    ``VocabParallelEmbedding`` all-reduces its partial rows); ``logits``, the all-gather of the logits where it
    holds a head split over the vocabulary (``column``: vLLM's and SGLang's ``LogitsProcessor``); ``norms``, the
    fp32 all-reduce of each Mamba-2 gated norm whose one group spans the ranks
    (:func:`symllm.arch.components.mamba.spanning_norms`). A part laid out whole on every rank runs none. The one
    count a step's bytes (:func:`symllm.costs.hardware.stage_times`), its latencies and the host's calls
    (:func:`symllm.costs.efficiency.expected`) read: their sum is the step's collective calls.

    >>> from symllm.arch.components import model
    >>> from symllm.costs import parallel
    >>> first, last = parallel.stages(model())
    >>> step_collectives(first)   # the head here only without a pipeline
    {'residual': 2*ceiling(L/N_p) + 1, 'logits': 1 - Min(1, N_p - 1), 'norms': 0}
    >>> step_collectives(last)    # no embedding on the last stage
    {'residual': 2*floor(L/N_p), 'logits': 1, 'norms': 0}
    """
    import sympy as sp
    from symllm.arch.components.mamba import spanning_norms
    from symllm.costs import parallel

    def count(comp, weight: str, split) -> sp.Expr:
        own = 1 if comp.rules.weight == weight and split(comp) else 0
        return comp.repeat * (own + sum((count(c, weight, split) for c in comp.children), sp.S.Zero))
    embeddings = count(stage, "embedding", parallel.summed)
    heads = count(stage, "head", lambda c: c.rules.split == "column")
    return {"residual": parallel.reduced_sublayers(stage, experts) + embeddings, "logits": heads,
            "norms": spanning_norms(stage)}


def _link_kind(topology: str) -> str:
    t = topology.lower()
    if "nvlink" in t:
        return "nvlink"
    if "infinity" in t:
        return "infinity-fabric"
    if "pcie" in t:
        return "pcie"
    return "network"


def collective(topology: str) -> dict:
    """The all-reduce figures of a link (``collectives`` in efficiency.json): by its exact name where
    measured (``NVLink 3``, ``NVLink 4``), else by its kind (nvlink, pcie, infinity-fabric, network).

    >>> collective("NVLink 3")["efficiency"], collective("PCIe Gen4 x16")["latency_s"]
    ('0.69', '0.00002')
    """
    table = data()["collectives"]
    return table[topology] if topology in table else table[_link_kind(topology)]


def allreduce_s(calls: int, sent_bytes, link: tuple[str, int] | None, serve: dict | None = None) -> Fraction:
    """Seconds ``calls`` ring all-reduces take that together send ``sent_bytes`` per GPU over ``link``
    (topology, bytes/s one way): each call's latency plus the bytes at the link's bus bandwidth
    (:func:`collective`). An inference engine ``serve`` whose own one-shot all-reduce replaces NCCL's over
    NVLink (``custom_allreduce_s``) pays that latency instead.

    >>> float(allreduce_s(2, 0, ("NVLink 4", 450 * 10 ** 9)))
    2e-05
    >>> # 20 us + 24,576 B at 0.58 x 32 GB/s
    >>> round(float(allreduce_s(1, 24576, ("PCIe Gen4 x16", 32 * 10 ** 9))) * 1e6, 4)
    21.3241
    >>> from symllm.costs.figures import engine
    >>> float(allreduce_s(2, 0, ("NVLink 4", 450 * 10 ** 9), engine("trtllm")))
    9.6e-06
    """
    if link is None or (not calls and not sent_bytes):
        return Fraction(0)
    c = collective(link[0])
    latency = c["latency_s"]
    if serve is not None and serve.get("custom_allreduce_s") and _link_kind(link[0]) == "nvlink":
        latency = serve["custom_allreduce_s"]
    return calls * _x(latency) + Fraction(sent_bytes) / (_x(c["efficiency"]) * link[1])


def alltoall_s(calls: int, sent_bytes, link: tuple[str, int] | None) -> Fraction:
    """Seconds ``calls`` all-to-alls take that together send ``sent_bytes`` per GPU over ``link`` (topology,
    bytes/s one way): each call's latency (the link's all-reduce latency, :func:`collective`) plus the bytes at the
    fraction of the link a MoE dispatch reaches (``moe.alltoall``; the link's all-reduce efficiency where none is
    given).

    >>> float(alltoall_s(4, 765 * 10 ** 6, ("NVLink 4", 10 ** 12)))   # 4 x 10 us + 765 MB at 0.765 TB/s
    0.00104
    """
    if link is None or (not calls and not sent_bytes):
        return Fraction(0)
    c = collective(link[0])
    eff = data()["moe"]["alltoall"].get(_link_kind(link[0]), c["efficiency"])
    return calls * _x(c["latency_s"]) + Fraction(sent_bytes) / (_x(eff) * link[1])


def ray_step_s(workers: int) -> Fraction:
    """Seconds a step's control plane takes where an engine drives ``workers`` ranks as Ray actors
    (``control_plane.ray`` in efficiency.json, Ray's release microbenchmarks): one synchronous actor call's
    round trip, and each further call's submission at the asynchronous rate; nothing for one rank (no Ray).

    >>> round(float(ray_step_s(4)) * 1e6, 1), ray_step_s(1)   # 1/2011.9 + 3/8663.7 s
    (843.3, Fraction(0, 1))
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
