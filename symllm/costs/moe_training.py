"""A mixture of experts' training costs beyond its GEMMs, by micro-batch: its all-to-all, token permutation and router
passes (:func:`moe_training_s`), the host's launches of a dropless layer (:func:`moe_host_launch_s`) and a dropless
Megatron-Core layer's measured floor (:func:`moe_layer_floor_s`); figures from ``efficiency.json``'s ``moe``
section. :func:`symllm.costs.efficiency.expected` adds them to a training step.

>>> float(moe_host_launch_s(moe_layers=1, n_e=8, ep=1, fp8=False))   # (6 x 8 + 32) x 24 us
0.00192
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.collectives import alltoall_s, forward_runs, moe_alltoalls
from symllm.costs.figures import data, fraction as _x

__all__ = ["moe_training_s", "moe_host_launch_s", "moe_layer_floor_s"]


def moe_training_s(*, layers, rows, k, d, n_e, act_bytes, rate, ep_bytes=0, link=None, ep: int = 1,
                   recompute: bool = False, syncs: int = 0) -> dict:
    """Seconds a training micro-batch of ``rows`` tokens (``b·s``) spends in ``layers`` MoE layers beyond their
    GEMMs: ``alltoall`` (``ep_bytes`` sent per GPU over ``ep`` ranks, :func:`symllm.costs.collectives.alltoall_s`, a
    layer's :func:`symllm.costs.collectives.moe_alltoalls`: 4, or 6 with full recomputation), ``permute``
    (``moe.permute_passes`` passes a layer, each of ``(1 + k)·rows`` rows of ``d`` activations of
    ``act_bytes``; 6 with recomputation) and ``router`` (``moe.router_passes`` passes over ``rows·n_e`` fp32
    scores), both at ``rate`` (bytes/s: the bandwidth at :func:`symllm.costs.efficiency.stream`'s fraction for the
    card's memory kind, as every memory-bound pass of a training step); ``sync``: ``syncs`` device-to-host round trips
    (``moe.sync_s``) a layer's forward, the forward's again with recomputation (a dropless layer's tokens per
    expert, where there is an all-to-all).

    >>> from symllm.costs.efficiency import stream
    >>> t = moe_training_s(layers=2, rows=1000, k=8, d=1024, n_e=64, act_bytes=2, rate=stream() * 10 ** 12)
    >>> float(t["permute"]), float(t["router"]), t["alltoall"]   # 2·4·9000·1024·2 and 2·6·1000·64·4 bytes at 0.88 TB/s
    (0.00016756363636363637, 3.490909090909091e-06, Fraction(0, 1))
    >>> link = ("NVLink 4", 450 * 10 ** 9)
    >>> t = moe_training_s(layers=2, rows=1000, k=8, d=1024, n_e=64, act_bytes=2, rate=stream() * 10 ** 12,
    ...                    ep_bytes=1, link=link, syncs=1)
    >>> round(float(t["sync"]) * 1e6, 2)   # 2 layers x 26.11 us
    52.22
    """
    moe = data()["moe"]
    again = Fraction(3, 2) if recompute else 1  # the forward's passes (half of them) run again
    permute = again * moe["permute_passes"] * layers * (1 + k) * rows * d * act_bytes / rate
    router = again * moe["router_passes"] * layers * rows * n_e * 4 / rate
    calls = moe_alltoalls(recompute) * layers
    forwards = forward_runs("all_to_all", recompute)
    sync = forwards * syncs * layers * _x(moe["sync_s"]) if ep_bytes and link is not None else Fraction(0)
    return {"alltoall": alltoall_s(calls, ep_bytes, link, ep) if ep_bytes else Fraction(0),
            "permute": Fraction(permute), "router": Fraction(router), "sync": sync}


def moe_host_launch_s(*, moe_layers: int, n_e: int, ep: int, fp8: bool) -> Fraction:
    """Seconds the host takes to launch a training micro-batch's dropless MoE layers, forward and backward,
    one kernel at a time (``moe.launches``: ``per_local_expert`` launches an expert of the ``n_e / ep`` on a
    rank, ``per_local_expert_bf16`` without FP8's quantizations, plus ``fixed``), each at ``kernel.host_s``:
    dynamic shapes keep them out of CUDA graphs, so the micro-batch's GPU time is at least this.

    >>> float(moe_host_launch_s(moe_layers=24, n_e=128, ep=8, fp8=True))   # 24 x (18 x 16 + 32) x 24 us
    0.18432
    >>> float(moe_host_launch_s(moe_layers=36, n_e=128, ep=8, fp8=False))  # 36 x (6 x 16 + 32) x 24 us
    0.110592
    """
    launches = data()["moe"]["launches"]
    local = -(-n_e // ep)
    each = launches["per_local_expert"] if fp8 else launches["per_local_expert_bf16"]
    return moe_layers * (each * local + launches["fixed"]) * _x(data()["kernel"]["host_s"])


def moe_layer_floor_s(*, moe_layers: int, n_e: int, ep: int, fp8: bool = False) -> Fraction:
    """The least a training micro-batch's dropless MoE layers take, forward and backward, where a rank holds at
    least ``moe.layer_floor.local_experts`` of the ``n_e`` experts (a Megatron-Core layer's measured floor, BF16,
    0 below); ``fp8`` (Transformer Engine's current scaling): the floor plus the host's launches of the
    quantizations FP8 adds an expert (:func:`moe_host_launch_s`'s FP8 count less its BF16 one).

    >>> float(moe_layer_floor_s(moe_layers=24, n_e=128, ep=8)), moe_layer_floor_s(moe_layers=24, n_e=128, ep=64)
    (0.21696, Fraction(0, 1))
    >>> float(moe_layer_floor_s(moe_layers=24, n_e=128, ep=8, fp8=True))  # 24 x (9.04 ms + (18 - 6) x 16 x 24 us)
    0.327552
    """
    floor = data()["moe"]["layer_floor"]
    if -(-n_e // ep) < floor["local_experts"]:
        return Fraction(0)
    host = dict(moe_layers=moe_layers, n_e=n_e, ep=ep)
    casts = moe_host_launch_s(**host, fp8=True) - moe_host_launch_s(**host, fp8=False) if fp8 else 0
    return moe_layers * _x(floor["s"]) + casts
