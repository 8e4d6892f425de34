"""Plan's serving rows as the engine serves them (:func:`symllm.studies.plans.plan`): a replica (its ``tp`` tensor
ranks, ``pp`` stages and ``ep`` expert-parallel ranks) holds the sequences its engine's KV cache holds
(:func:`symllm.costs.serving.capacity`, what ``count --serve`` prints at that layout), is stepped one token a
sequence at the whole context it holds (:func:`decode_point`), and at its batch as the concurrency runs as serving
under load runs it (:func:`symllm.costs.traffic.under_load`, ``count --serve --concurrency``): one answer at every
door.
"""
from __future__ import annotations

from math import ceil

from symllm.costs.workloads import Workload
from symllm.errors import SymllmError
from symllm.studies.ranks import LAYOUT

__all__ = ["decode_point", "engine_peak", "replica", "capacities", "under_load"]


def decode_point(work: Workload) -> Workload:
    """Where plan steps a serving row: one decode step of each sequence (``seq`` 1) at the whole context ``s + n``
    it holds, the KV cache at its fullest (a step under load: :mod:`symllm.costs.traffic`), or at the workload's
    ``context`` where one is given.

    >>> w = decode_point(Workload(seq=1000, gen=100, batch=8)); (w.batch, w.seq, w.gen, w.context)
    (8, 1, 0, 1100)
    >>> decode_point(Workload(seq=1000, gen=100, context=4096)).context
    4096
    """
    return work.replace(seq=1, gen=0, context=work.seq + work.gen if "context" in work.derived else work.context)


def engine_peak(held, working, activation, non_torch) -> int:
    """The per-GPU bytes an engine holds serving a row: what it ``held`` (the weights and the KV and state cache
    of the batch's ``s + n`` tokens) beside the larger of a decode step's ``working`` set at the decode point and
    the ``activation`` peak of its profiled prefill (a chunk of its ``max_num_batched_tokens``: what admitting a
    prompt holds), plus its ``non_torch`` memory; whole bytes (rounded up: vLLM's 0.35 GiB is a fraction).

    >>> engine_peak(16 * 2**30, 2**20, 2 * 2**30, 0.5 * 2**30) == 18.5 * 2**30
    True
    """
    return ceil(held + max(working, activation) + non_torch)


def replica(tp: int, pp: int = 1, dp: int = 1, ep: int = 1) -> str:
    """The name plan gives a replica's layout (its ``sequences`` and ``unserved`` keys): its tensor ranks, and its
    stages and expert-parallel ranks where above 1 (``dp``, the replicas, names none).

    >>> replica(2), replica(2, 1, 4, 4), replica(4, 2)
    ('tp 2', 'tp 2 ep 4', 'tp 4 pp 2')
    """
    return f"tp {tp}" + (f" pp {pp}" if pp > 1 else "") + (f" ep {ep}" if ep > 1 else "")


def capacities(config, work: Workload, layouts, engine: str, evaluate=None,
               serve: dict | None = None) -> tuple[dict, dict]:
    """``engine``'s KV cache for ``config`` on one replica of each of ``layouts`` (``(tp, pp, dp, ep)`` tuples):
    ``({layout: capacity}, {layout: why refused})``, :func:`symllm.costs.serving.capacity`'s at that layout, what
    ``count --serve --tp T --pp P --dp D --ep E`` prints, once a layout; a layout it refuses in the second, with its
    one-line reason. ``evaluate`` as capacity's, ``serve`` its options (``count --serve``'s:
    ``gpu_memory_utilization``, ``max_num_batched_tokens``, ...).

    >>> caps, refused = capacities("llama3.1-8b", Workload(gpu="h100-sxm", seq=1000, gen=100), [(1, 1, 1, 1)], "hf")
    >>> from symllm.costs.serving import most_sequences
    >>> most_sequences(caps[1, 1, 1, 1]), refused
    (459, {})
    """
    from symllm.costs import serving
    caps, refused = {}, {}
    for layout in layouts:
        try:
            caps[layout] = serving.capacity(config, work.replace(**dict(zip(LAYOUT[False], layout)), batch=1,
                                                                 engine=engine), evaluate=evaluate, **(serve or {}))
        except SymllmError as why:
            refused[layout] = str(why)
    return caps, refused


#: the figures under load a plan row carries (:func:`symllm.costs.traffic.under_load`'s, and its bound's), one
#: replica's
LOAD = ("ttft_s", "itl_s", "output_tokens_per_s")


def under_load(config, work: Workload, layout: tuple, batch: int, engine: str, evaluate=None,
               serve: dict | None = None) -> dict | None:
    """One replica of ``layout`` (``(tp, pp, dp, ep)``, as :func:`capacities`') serving ``batch`` sequences at a time
    (its concurrency): ``count --serve --tp T --pp P --dp D --ep E --concurrency B``'s figures
    (:func:`symllm.costs.traffic.under_load`): time to first token, inter-token latency and output tokens/s (one
    replica's), expected and in ``bound`` the roofline's, each with the output tokens/s of all ``replicas`` (the
    layout's ``dp``, as the row's ``tokens_per_s``) beside; None where it refuses. ``serve``: serving's options, as
    :func:`capacities`'.

    >>> r = under_load("llama3.1-8b", Workload(gpu="h100-sxm", seq=1000, gen=100), (1, 1, 2, 1), 64, "vllm")
    >>> sorted(r), r["bound"]["itl_s"] < r["itl_s"]
    (['bound', 'itl_s', 'output_tokens_per_s', 'output_tokens_per_s_all_replicas', 'replicas', 'ttft_s'], True)
    >>> r["output_tokens_per_s_all_replicas"] == 2 * r["output_tokens_per_s"]
    True
    """
    from symllm.costs import traffic
    try:
        r = traffic.under_load(config, work.replace(**dict(zip(LAYOUT[False], layout)), batch=1, engine=engine),
                               concurrency=batch, evaluate=evaluate, **(serve or {}))
    except SymllmError:
        return None
    replicas = layout[LAYOUT[False].index("dp")]
    return {**_all(r, replicas), "replicas": replicas, "bound": _all(r["bound"], replicas)}


def _all(figures: dict, replicas: int) -> dict:
    """:data:`LOAD`'s ``figures`` of one replica, with the output tokens/s of ``replicas`` of them."""
    return {**{k: figures[k] for k in LOAD}, "output_tokens_per_s_all_replicas": replicas * figures[
        "output_tokens_per_s"]}
