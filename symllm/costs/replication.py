"""Key/value heads replicated over tensor-parallel ranks: a ``tp`` that is a multiple of the key/value heads
(and divides the query heads) holds one key/value head a rank, its ``wk`` and ``wv`` columns and its KV cache
whole, replicated on ``tp / n_kv`` ranks, as vLLM's ``QKVParallelLinear`` does
(vllm/model_executor/layers/linear.py: ``if tp_size >= total_num_kv_heads: num_kv_heads = 1;
num_kv_head_replicas = divide(tp_size, total_num_kv_heads)``).

The per-GPU closed forms (:mod:`symllm.costs.parallel`) split ``n_kv·d_h`` columns over ``N_t`` ranks; at
``n_kv = tp`` they give each rank one head, whole. So one GPU's numbers are those forms at ``n_kv = tp``
(:func:`kv_heads_split`), and the whole model's (its parameters, FLOPs, KV cache) stay at its own ``n_kv``
(:class:`ReplicatedKV`): no second set of forms, and the forms of every layout that divides the heads unchanged.
SymPy-free (a count read back from kept kernels runs it).

>>> kv_heads_split(8, 16)
16
"""
from __future__ import annotations

__all__ = ["kv_heads_split", "ReplicatedKV"]


def kv_heads_split(n_kv, tp):
    """The key/value heads whose split over ``tp`` tensor-parallel ranks gives what each rank holds: ``n_kv``
    where ``tp`` divides them, else ``tp`` (a multiple of ``n_kv``: each rank holds one key/value head, its
    ``wk`` and ``wv`` columns and its cache, replicated over ``tp / n_kv`` ranks, as vLLM's
    ``QKVParallelLinear`` does: ``num_kv_heads = 1``, ``num_kv_head_replicas = tp_size // total_num_kv_heads``).
    The per-GPU closed forms give rank 0 ``⌈n_kv·d_h/N_t⌉`` columns of ``wk`` and ``n_kv/N_t`` heads of cache:
    at ``n_kv = tp``, one head's. Scalars or numpy arrays.

    >>> kv_heads_split(8, 4), kv_heads_split(8, 16), kv_heads_split(1, 8)
    (8, 16, 8)
    """
    if hasattr(tp, "dtype") or hasattr(n_kv, "dtype"):
        import numpy as np
        return np.where(tp > n_kv, tp, n_kv)
    return tp if tp > n_kv else n_kv


#: the groups of :func:`symllm.costs.phases.quantities` that are the whole model's (not one GPU's), but
#: ``params.per_gpu``
_WHOLE_GROUPS = ("params", "flops", "memory")


class ReplicatedKV:
    """The numbers of a workload whose ``tp`` is a multiple of the key/value heads above them
    (:func:`kv_heads_split`): one GPU's forms (``params.per_gpu``, ``memory_per_gpu``, ``comm``, the roofline's)
    at ``n_kv = tp``, the whole model's (its parameters, FLOPs and memory: the model FLOPs of an MFU too) at
    the model's own ``n_kv``. ``ev``: a :class:`symllm.numbers.runtime.Numbers`."""

    __slots__ = ("whole", "rank", "forms", "vals")

    def __init__(self, ev, tp: int):
        from symllm.numbers.runtime import Numbers
        self.whole = ev
        self.rank = Numbers(ev.forms, {**ev.vals, "n_kv": tp})
        self.forms, self.vals = ev.forms, self.rank.vals

    @staticmethod
    def _whole(name: str) -> bool:
        return name.partition(".")[0] in _WHOLE_GROUPS and name != "params.per_gpu"

    def __contains__(self, name) -> bool:
        return name in self.forms

    def __call__(self, name: str, **put):
        return (self.whole if self._whole(name) else self.rank)(name, **put)

    def table(self) -> dict:
        whole, rank = self.whole.table(), self.rank.table()
        return {name: whole[name] if self._whole(name) else rank[name] for name in whole}
