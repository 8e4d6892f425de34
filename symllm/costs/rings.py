"""Bytes ring collectives send: one collective's busiest rank (:func:`ring`), and a training step's data-parallel
collectives under each ZeRO stage (:func:`dp_bytes`), over the parameters that get a gradient where the
implementation reduces theirs only.

**Parameters that get no gradient** (``Rules.no_grad``: DeepSeek Sparse Attention's indexer, DeepSeek-V4's, and
DeepSeek-V4's compressors while the prompt closes none of their windows;
:meth:`~symllm.arch.components.base.Component.trained`):

* ZeRO 3, as FSDP2 runs it, reduce-scatters only the gradients that exist: ``FSDPParamGroup.post_backward``
  collects ``fsdp_params_with_grad`` (an accumulated gradient or ``unsharded_param.grad is not None``) and adds
  a parameter without one only under ``reduce_scatter_unused_params``, False by default (torch 2.13.0,
  ``torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py``). Its all-gathers still carry every parameter
  (the forward reads the indexer's weights too).
* ZeRO 0, as DDP runs it, all-reduces whole buckets, laid out over every parameter that requires grad: a
  parameter that never gets a gradient stops the second step unless ``find_unused_parameters=True`` ("Expected
  to have finished reduction in the prior iteration"), which marks it ready and all-reduces its bucket with it
  (its slot zero-filled), then leaves its ``.grad`` None (torch 2.13.0, checked with a gloo group of one and a
  comm hook reading each bucket's size): every parameter's bytes, as before.
* ZeRO 1 and 2 keep every parameter's gradient bytes too: their implementations (DeepSpeed's flat partitions,
  Megatron's distributed optimizer over its gradient buffers) lay out every parameter that requires grad.
"""
from __future__ import annotations

import sympy as sp

from symllm.arch import symbols as S
from symllm.costs import zero

__all__ = ["ring", "dp_bytes"]


def ring(full: sp.Expr, n: sp.Expr) -> sp.Expr:
    """Whole bytes the busiest of ``n`` ranks sends in a ring all-gather or reduce-scatter of a
    ``full``-byte tensor: ``n - 1`` of the ``n`` chunks, the smallest (``⌊full/n⌋``) stays, so
    ``full - ⌊full/n⌋``, written ``⌈(n-1)·full/n⌉`` (the same for whole ``full``; ``(n-1)/n·full``
    when ``n`` divides it); an all-reduce sends twice this.

    >>> ring(S.b, S.N_d)
    ceiling(b*(N_d - 1)/N_d)
    >>> ring(sp.Integer(10), 3), ring(sp.Integer(12), 3), ring(sp.Integer(10), 1)   # chunks 4, 3, 3; 4, 4, 4
    (7, 8, 0)
    """
    return zero.share((n - 1) * full, n)


def dp_bytes(params: sp.Expr, ranks: sp.Expr, zero_stage: int, grad_bytes, rounds, trained=None) -> sp.Expr:
    """Whole bytes one GPU sends a step in the data-parallel collectives of ``params`` over ``ranks``: each of
    ``rounds`` rounds reduces the gradients at ``grad_bytes`` a parameter (an all-reduce at ZeRO 0, a
    reduce-scatter above) and at ZeRO 3 all-gathers the bf16 weights twice (forward, backward); ZeRO 1 and 2
    all-gather the updated weights once, after the optimizer's step. At ZeRO 3 the reduce-scatter carries the
    ``trained`` of them only (those that get a gradient; None: all); below it every parameter's (the module
    docstring).

    >>> dp_bytes(sp.Integer(12), 4, 3, 2, 1), dp_bytes(sp.Integer(12), 4, 3, 2, 1, trained=8)  # 18 + 2·18; 12 + 36
    (54, 48)
    >>> dp_bytes(sp.Integer(12), 4, 0, 2, 1, trained=8)  # DDP all-reduces whole buckets: 2·18
    36
    """
    weights = ring(zero.MIXED_PRECISION_ADAM["weights"] * params, ranks)
    graded = params if trained is None or not zero.sharded("weights", zero_stage) else trained
    reduce = ring(grad_bytes * graded, ranks)
    if not zero.sharded("optimizer", zero_stage):  # ZeRO 0: the gradients all-reduced
        return rounds * 2 * reduce
    if zero.sharded("weights", zero_stage):
        return rounds * (reduce + 2 * weights)
    return rounds * reduce + weights
