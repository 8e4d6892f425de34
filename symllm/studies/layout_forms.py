"""The closed forms :func:`symllm.studies.plans.plan` evaluates over its layouts, every layout at once: the per-stage
forms :func:`symllm.costs.phases.stage_memory` and :func:`symllm.costs.hardware.stage_times` that ``workload()``
evaluates at one layout (:func:`closed_forms`, built once per ZeRO stage, recomputation, sequence parallelism and
expert layout), compiled into kernels over the layouts' arrays (:func:`vector`; :mod:`symllm.numbers.kernels`),
the largest stage's figure row by row (:func:`largest`) and a decode step's roofline seconds
(:func:`decode_step`).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy as sp

from symllm.arch.algebra import substitute
from symllm.costs import hardware, parallel
from symllm.costs import phases as costs
from symllm.numbers.kernels import compile_expr

__all__ = ["closed_forms", "vector", "floats", "largest", "decode_step"]


def vector(expr, args: dict, n: int) -> np.ndarray:
    """``expr`` over ``n`` layouts: a compiled kernel (:func:`symllm.numbers.kernels.compile_expr`) of its symbols'
    arrays or numbers (``args``, by name).

    >>> from symllm.arch import symbols as S
    >>> vector(S.d / S.N_t, {"d": 4096, "N_t": np.array([1, 2, 4])}, 3).tolist()
    [4096, 2048, 1024]
    """
    kernel = compile_expr(expr)
    out = kernel.vector(**{a.name: args[a.name] for a in kernel.args})
    return np.broadcast_to(np.asarray(out), (n,))


def floats(x: np.ndarray) -> np.ndarray:
    """``x`` (exact numbers or machine ones) as float64.

    >>> from fractions import Fraction
    >>> floats(np.array([Fraction(1, 4), 3], dtype=object)).tolist()
    [0.25, 3.0]
    """
    return np.asarray([float(v) for v in x.tolist()]) if x.dtype == object else x.astype(np.float64)


def largest(exprs, sub: dict, m: int) -> np.ndarray:
    """The largest of ``exprs`` (one a pipeline stage) over the ``m`` layouts ``sub``, row by row.

    >>> from symllm.arch import symbols as S
    >>> largest((S.d, 2 * S.N_t), {"d": 4, "N_t": np.array([1, 4])}, 2).tolist()
    [4, 8]
    """
    values = [vector(e, sub, m) for e in exprs]
    top = values[0]
    for v in values[1:]:
        top = np.where(np.asarray(v >= top, dtype=bool), v, top)
    return top


def decode_step(forms: dict, sub: dict, m: int, base: dict, bw: dict) -> np.ndarray:
    """A decode step's roofline seconds over the ``m`` layouts ``sub``, its slowest stage's (``forms["stages"]``,
    :func:`closed_forms`'): FLOPs at the peak ``base["P"]`` or bytes at the bandwidth ``base["B_mem"]``, the longer,
    plus its tensor-parallel bytes over the link (``bw["tp"]``, at ``N_t`` above 1).

    >>> from symllm.arch import symbols as S
    >>> forms = {"stages": ((2 * S.d, S.d, S.d),)}   # 2 FLOPs and 1 byte a unit of d, 1 tensor-parallel byte
    >>> decode_step(forms, {"d": 10, "N_t": np.array([1, 2])}, 2, {"P": 10, "B_mem": 5}, {"tp": 10}).tolist()
    [2.0, 3.0]
    """
    tp_on = sub["N_t"] > 1
    return np.max([np.maximum(floats(vector(fl, sub, m)) / base["P"], floats(vector(by, sub, m)) / base["B_mem"])
                   + np.where(tp_on, floats(vector(tp, sub, m)) / bw["tp"], 0.0)
                   for fl, by, tp in forms["stages"]], axis=0)


@lru_cache(maxsize=64)
def closed_forms(mdl, kind: str, zero: int, rec: bool, seq_par: bool, stack: str, training: bool,
                 optimizer: str = "adamw", experts: str = "split", columns: str = "dtensor",
                 float8: tuple = ()) -> dict:
    """The closed forms plan evaluates for one ZeRO stage, recomputation, sequence parallelism and expert layout
    (``experts``: :data:`symllm.costs.workloads.EXPERT_TP`): each pipeline stage's per-GPU ``kind`` peak
    (:func:`symllm.costs.phases.stage_memory`), and its times' terms (:func:`symllm.costs.hardware.stage_times`;
    ``training``: the step's FLOPs per stage and the bytes sent, :func:`symllm.costs.parallel.comm`, as the training
    engine's ``columns`` run it: :func:`symllm.costs.collectives.column_parallel`, its ``float8`` all-gathers at one
    byte; serving: a decode step's FLOPs, bytes and tensor-parallel bytes, what a stage holds and, of it, its
    ``states``: the state cache as transformers holds it, which an engine may hold in its own layout).

    >>> from symllm.arch import resolved
    >>> from symllm.costs.workloads import Workload
    >>> mdl = costs.model_of(resolved.spec("llama3.2-1b"), Workload())
    >>> sorted(closed_forms(mdl, "inference_peak", 0, False, False, "fused", False))
    ['handoff', 'held', 'peaks', 'stages', 'states']
    """
    defs = dict(mdl.definitions)
    stages = parallel.stages(mdl, seq_par, experts)
    terms = hardware.stage_times(mdl, True, seq_par, rec, costs.flops, experts)
    out = {"peaks": tuple(substitute(costs.stage_memory(stages, i, kind, zero, rec, stack, optimizer), defs)
                          for i in range(len(stages)))}
    if training:
        comm = parallel.comm(mdl, seq_par, rec, zero, experts, columns=columns, float8=float8)
        out.update(flops=tuple(st["training_flops"] for st in terms["stages"]),
                   comm={k: comm.get(k, sp.S.Zero) for k in ("tp", "ep", "dp")},  # and ranks.floors' terms
                   floors=tuple(tuple(st[k] for k in ("training_core_flops", "training_expert_flops", "expert_active",
                                                     "expert_params", "expert_layers")) for st in terms["stages"]),
                   handoff=terms["training_handoff"])
    else:
        out.update(stages=tuple((st["decode_flops"], st["decode_bytes"], st["decode_tp"]) for st in terms["stages"]),
                   handoff=terms["decode_handoff"],  # and what a stage holds beside its working set
                   held=tuple(substitute(sum(costs.stage_memory(stages, i, k) for k in ("weights", "kv_cache",
                                                                                       "state_cache")), defs)
                              for i in range(len(stages))),  # its state cache in transformers' layout, apart
                   states=tuple(substitute(costs.stage_memory(stages, i, "state_cache"), defs)
                                for i in range(len(stages))))
    return out
