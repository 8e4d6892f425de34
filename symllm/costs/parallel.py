"""Parallel training: what one GPU holds and sends under tensor (``N_t``), pipeline (``N_p``), data
(``N_d``), expert (``N_e``) and sequence parallelism, derived from the component tree.

Conventions, stated once (docs/parallel.md):

* **Tensor parallelism** splits each component as it declares (:class:`symllm.arch.components.Rules`'
  ``split``; under an engine that lays a part out otherwise, the part's own split for it, ``Rules.engines``:
  :func:`layout`, vLLM's DeepSeek-V4), which for LLaMA is the standard plan of torch's DTensor: ``wq``, ``wk``,
  ``wv``, ``w1``, ``w3`` and ``lm_head`` column-wise (output features split), ``wo`` and ``w2`` row-wise (input features
  split, a bias replicated), the embedding split over the vocabulary, every other component (the norms,
  QK-norms, a mixture-of-experts router) replicated; gpt-oss's attention sinks, one per query head, split
  with the heads (``⌈n_h/N_t⌉`` on rank 0: transformers' ``local_rowwise``). A split dimension that ``N_t`` does not
  divide is split as DTensor splits it: rank 0 holds the ceiling, ``⌈n/N_t⌉`` rows of the ``n`` split (per
  element, so ``⌈n_h·d_h/N_t⌉`` columns of ``wq``; a head split across ranks cannot run attention, so
  :mod:`symllm.costs.checks` refuses it; an ``N_t`` that is a multiple of ``n_kv`` holds one key/value head a
  rank, replicated: these forms at ``n_kv = N_t``, :mod:`symllm.costs.replication`). Per-GPU numbers are tensor
  rank 0's.
* **Mamba-2 mixers** (Nemotron-H) are split by their heads and groups as vLLM's ``MambaMixer2`` and
  Megatron-Core's ``MambaMixer`` split them (:data:`_MAMBA`): ``in_proj`` declares ``"merged"`` (its gate, x, B,
  C and dt rows each split by its own heads or groups), the convolution, ``A_log``, ``D``, ``dt_bias`` and the
  gated norm ``"heads"`` (split with the rank's heads and groups, no collective), ``out_proj`` row-wise; the
  state cache, the scan's FLOPs and activations with rank 0's heads and groups.
* **Pipeline parallelism**: stages of contiguous blocks, ``⌈L/N_p⌉`` on the first ``L mod N_p``
  stages and ``⌊L/N_p⌋`` on the rest (all ``L/N_p`` when ``N_p`` divides ``L``); the embedding on the
  first stage, the final norm and the head on the last (a tied head keeps a copy of the embedding
  there). Per-GPU figures are for the largest stage: ``max`` of the first and the last (a middle stage
  holds no more than the first).
* **Mixture of experts**: a model whose blocks are of several kinds (dense and MoE groups) puts
  ``⌈R/N_p⌉`` of each kind's ``R`` blocks on the first stage and ``⌊R/N_p⌋`` on the last (exact when
  every stage has the same mix). The routed ``experts`` are tensor-split by default (``experts="split"``,
  ``--expert-tp split``) as the engines split them: every expert's gate and up projections column-wise and
  its down projection row-wise over the ``N_t`` ranks, rank 0 holding ``⌈d_ff/N_t⌉`` of each expert's
  width (vLLM's ``FusedMoE``: ``intermediate_size_per_partition = intermediate_size // tp_size`` unless
  ``--enable-expert-parallel``; SGLang's ``moe_tp_size = tp_size // ep_size``; Megatron-Core's
  ``expert_tensor_parallel_size`` defaults to the tensor-parallel size; a width the ranks do not divide is
  refused by :mod:`symllm.costs.checks`, as all three assert it), their partial outputs summed by an
  all-reduce; ``experts="whole"`` keeps every expert whole on each tensor rank (Megatron's
  ``--expert-tensor-parallel-size 1``; an engine's expert parallelism holds whole experts too). The
  router is replicated on every tensor rank; a shared expert's ``w1 w2 w3`` are split as a dense
  feed-forward's.
* **Expert parallelism** (``ep``, ``N_e``), as DeepSpeed-MoE and Megatron-LM do it: the ``N_e``
  expert-parallel ranks are **carved out of the** ``N_d`` **data-parallel ranks** (``N_e`` must divide
  ``N_d``; GPUs = ``N_t·N_p·N_d``), each holding ``n_e/N_e`` of every MoE layer's routed experts (a
  non-divisible ``n_e`` is refused, as both refuse it, by :mod:`symllm.costs.checks`; the closed forms
  write ``⌈n_e/N_e⌉``), everything
  else replicated over them. The expert parameters' ZeRO sharding and gradient reduction run over the
  remaining ``N_d/N_e`` ranks holding the same experts (DeepSpeed's expert-data-parallel group), the other
  parameters' over all ``N_d``. Activations and FLOPs per GPU do not change under uniform routing (a rank's
  experts receive, from the ``N_e`` ranks, as many token rows as it sends out).
* **Memory per GPU** (:func:`symllm.costs.phases.quantities`' ``memory_per_gpu``): the memory kinds of the
  first and the last stage as rank 0 holds them, the larger; activations are one micro-batch (``b``
  sequences) through the stage (a pipeline schedule's micro-batches in flight are not multiplied in).
* **Sequence parallelism** (``sp``, refused without ``tp > 1``) splits what the norms save, and the
  blocks' checkpointed inputs, over the ``N_t`` ranks along the sequence (``⌈s/N_t⌉`` rows); the
  linears still save their full all-gathered inputs (DTensor's ``SequenceParallel`` with
  ``PrepareModuleInput``).
* **Communication** is in bytes one GPU sends per training step of one micro-batch (forward + backward over
  its ``b × s`` tokens; a step of ``m`` micro-batches sends ``m`` times the ``tp``, ``pp`` and ``ep`` bytes and
  the ``dp`` bytes once, as the training time counts them), under ring algorithms, in whole bytes for any layout: an
  all-gather or a reduce-scatter of ``M`` bytes (the full tensor) over ``n`` ranks sends ``n-1`` of its ``n`` chunks,
  the busiest rank ``M - ⌊M/n⌋ = ⌈(n-1)M/n⌉`` (:func:`symllm.costs.rings.ring`; ``(n-1)/n·M`` when ``n``
  divides ``M``), an all-reduce twice that. Tensor parallel: the collectives of
  :func:`symllm.costs.collectives.training_collectives` (the inference step's count with the backward's, the
  recomputed forward's and the loss's; the training time reads their calls), each of its own width
  (:func:`symllm.costs.collectives.row_bytes`: the residual stream ``β_a·b·s·d``, a column group's input, MLA's
  latents). Without ``sp`` (DTensor): one
  all-reduce in forward per row-wise linear and for the vocabulary-split embedding, one in backward
  per column-wise linear (its input gradient: DTensor does not fuse wq/wk/wv or w1/w3; a training engine that does,
  Megatron-Core's ``linear_qkv`` and ``linear_fc1``, one per group of them sharing an input:
  :func:`symllm.costs.collectives.column_parallel`) and for the head; tensor-split
  routed experts are one such pair (their summed outputs forward, their input gradient backward). With ``sp``:
  per group of column-wise linears sharing an input (the head's too) an all-gather in forward and a reduce-scatter
  in backward; per row-wise linear and for the embedding a reduce-scatter in forward and an all-gather in
  backward. The head's loss is vocabulary-parallel (torch's ``loss_parallel``): three all-reduces of
  ``b·s`` fp32 values. Full recomputation repeats the blocks' forward collectives (torch's checkpoint
  with early stop off; its default early stop skips a block's last one). Pipeline: each
  stage sends its output activation forward and its input gradient backward (``min(2, N_p-1)``
  messages a micro-batch for the busiest GPU; ``1/N_t`` of them with ``sp``): bytes sent, not a time (the
  training step's time counts the hand-offs on its critical path instead, each micro-batch's:
  :func:`symllm.costs.schedules.handoffs`, not these). Data parallel: bf16 gradients
  all-reduced (ZeRO 0), or reduce-scattered and the bf16 weights all-gathered (ZeRO 1, 2: the same
  ``2(N_d-1)/N_d·2N`` bytes), the weights all-gathered twice (ZeRO 3: ``3(N_d-1)/N_d·2N``), ``N`` the
  per-GPU parameters (a stage's local experts over ``N_d/N_e`` instead of ``N_d``); once a step by default.
  FSDP2 (ZeRO 3) reduce-scatters only the gradients that exist: those of the parameters that get one, while DDP
  (ZeRO 0) all-reduces whole buckets (:mod:`symllm.costs.rings`, :func:`symllm.costs.rings.dp_bytes`). An
  engine's reduce dtype and rounds (:func:`comm`'s ``grad_bytes``, ``rounds``: FSDP2 under torchtitan
  reduce-scatters fp32 gradients and gathers the weights again every micro-batch) enter the same form. Expert parallel
  (``ep``, MoE models only): per MoE layer an all-to-all dispatching each token's ``k`` routed copies
  and one combining the experts' outputs in forward, the same two for the gradients in backward
  (recomputation repeats the forward two), each of ``β_a·b·s·k·d`` bytes (the ``b·s`` tokens the layer
  sees; with ``tp`` every tensor rank dispatches them), of which a rank sends ``(N_e-1)/N_e`` under
  uniform routing (its own experts' share stays).

>>> from symllm.arch.components import model
>>> params_per_gpu(model(), pp_stages=False)
L*(3*d*ceiling(d_ff/N_t) + 2*d*ceiling(d_h*n_h/N_t) + 2*d*ceiling(d_h*n_kv/N_t) + 2*d) + 2*d*ceiling(V/N_t) + d
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import sympy as sp

from symllm.arch.algebra import maximum, substitute
from symllm.arch import symbols as S
from symllm.arch.components import Component
from symllm.arch.components.base import COLUMNS, EXPERT_SPLITS
from symllm.costs import zero
from symllm.costs.collectives import moe_alltoalls, training_tp_bytes
from symllm.costs.rings import dp_bytes, ring
from symllm.costs.tp_overlap import fp8_gathers, fp8_in_model
from symllm.errors import SymllmError
from symllm.numbers.kernels import over_common_denominator

__all__ = ["COMM_KINDS", "laid_out", "layout", "declares_split", "vocabulary", "has_experts", "comm_kinds", "shard",
           "stages", "largest", "params_per_gpu", "expert_params", "comm", "workload_comm", "REDUCE_BYTES",
           "DP_ROUNDS"]

#: the communication kinds :func:`comm` gives (``ep`` for a mixture-of-experts model only)
COMM_KINDS = ("tp", "pp", "dp", "ep")
#: the splits whose weight tensor parallelism divides (the others keep it whole on every tensor rank)
_SPLIT_WEIGHTS = ("column", "row", "vocab", "gathered")


def laid_out(work) -> bool:
    """Whether a :class:`~symllm.costs.workloads.Workload` asks for a parallel layout (``tp``, ``pp``, ``dp``,
    ``ep`` above 1, or ``sp``): only then are the per-GPU closed forms built.

    >>> from symllm.costs.workloads import Workload
    >>> laid_out(Workload()), laid_out(Workload(dp=2))
    (False, True)
    """
    return work.tp > 1 or work.pp > 1 or work.dp > 1 or work.ep > 1 or bool(work.sp)


#: (id of a model, an engine) -> (the model, the model as that engine lays it out): the same object each time, so that
#: the caches keyed on a model's identity (:mod:`symllm.costs.phases`) hold one entry for it
_LAID: dict[tuple, tuple] = {}
#: id of a model :func:`layout` made -> (that model, the model it laid out)
_FROM: dict[int, tuple] = {}


def layout(mdl: Component, engine: str | None) -> Component:
    """``mdl`` with each part split as ``engine`` lays it out (:meth:`symllm.arch.components.Rules.split_under`:
    a part's own split for that engine, else its ``split``, transformers' plan); ``mdl`` itself where no part
    declares one for ``engine`` (None, ``hf``: always). What a workload's engine of each kind asks of the per-GPU
    forms of that kind (:func:`symllm.costs.layouts.kind_layout`). A model this laid out is laid out again from the
    model it came from: an inference layout's training one is the training engine's, not both.

    >>> from symllm.arch.components import model
    >>> llama = model()
    >>> layout(llama, "vllm") is llama
    True
    >>> from symllm.arch.resolved import spec
    >>> m = spec("deepseek-v4-flash-base").model()
    >>> [c.rules.split for c in layout(m, "vllm").walk() if c.name in ("wq_b", "wo_b")][:2]
    ['column', 'row']
    >>> layout(layout(m, "vllm"), None) is m
    True
    """
    origin = _FROM.get(id(mdl))
    if origin is not None and origin[0] is mdl:
        mdl = origin[1]  # (an engine's layout of another model: that model's)
    if engine is None:
        return mdl
    key = (id(mdl), engine)
    hit = _LAID.get(key)
    if hit is not None and hit[0] is mdl:
        return hit[1]

    def laid(c: Component) -> Component:
        split = c.rules.split_under(engine)
        rules = c.rules if split == c.rules.split else dataclasses.replace(c.rules, split=split, engines=())
        children = tuple(laid(x) for x in c.children)
        same = rules is c.rules and all(x is y for x, y in zip(children, c.children))
        return c if same else c.replace(rules=rules, children=children)
    out = laid(mdl)
    if len(_LAID) >= 256:
        _LAID.clear()
        _FROM.clear()
    _LAID[key] = (mdl, out)  # holding mdl keeps its id from being reused
    if out is not mdl:
        _FROM[id(out)] = (out, mdl)
    return out


def declares_split(mdl: Component, engine: str | None = None) -> bool:
    """Whether a workload of ``mdl`` under ``engine`` names the layout its per-GPU figures are in
    (:func:`symllm.costs.workloads.tp_layout`): where a part declares ``engine``'s own split
    (:attr:`symllm.arch.components.Rules.engines`), or an engine's split of a part transformers' plan keeps whole
    (DeepSeek-V4's attention under vLLM: then every workload of it names its layout). An engine that only keeps
    whole what the plan splits (MLC's embedding and lm_head) is named under itself alone: every other engine lays
    such a model out as the plan does.

    >>> from symllm.arch.resolved import spec
    >>> llama, dsv4 = spec("llama3.1-8b").model(), spec("deepseek-v4-flash-base").model()
    >>> declares_split(llama), declares_split(llama, "vllm"), declares_split(llama, "mlc"), declares_split(dsv4)
    (False, False, True, True)
    """
    return any(split != c.rules.split and {split, c.rules.split} not in _ALIKE
               and (name == engine or (c.rules.split == "replicated" and name != "hf"))
               for c in mdl.walk() for name, split in c.rules.engines)  # (hf's: transformers' own plan)


#: pairs of splits that lay a part out alike (its weights, FLOPs and memory per GPU), its collectives aside: a layout
#: differing only so names none (transformers' lm_head, gathered, and the default's column; its QK-norms, their
#: gradients all-reduced, and the default's replicated)
_ALIKE = ({"column", "gathered"}, {"replicated", "grad_reduced"})


def _expert(c: Component) -> bool:
    """Whether ``c`` is divided over the expert-parallel ranks (the routed experts)."""
    return c.rules.split in EXPERT_SPLITS


def has_experts(mdl: Component) -> bool:
    """Whether ``mdl`` has routed experts (a mixture-of-experts model): what expert parallelism needs
    (:mod:`symllm.costs.checks`).

    >>> from symllm.arch.components import LayerKind, model
    >>> has_experts(model()), has_experts(model(kinds=(LayerKind(ffn="moe"),)))
    (False, True)
    """
    return any(_expert(c) for c in mdl.walk())


def comm_kinds(mdl: Component) -> tuple[str, ...]:
    """The keys of :func:`comm` for ``mdl``: ``ep`` only for a mixture-of-experts model.

    >>> from symllm.arch.components import LayerKind, model
    >>> comm_kinds(model()), comm_kinds(model(kinds=(LayerKind(ffn="moe"),)))
    (('tp', 'pp', 'dp'), ('tp', 'pp', 'dp', 'ep'))
    """
    return COMM_KINDS if has_experts(mdl) else COMM_KINDS[:3]


def _split(size: sp.Expr) -> sp.Expr:
    """Rank 0's share of a dimension split over ``N_t`` ranks: the ceiling (DTensor's chunks)."""
    return sp.ceiling(size / S.N_t)


#: a Mamba-2 mixer's heads (its inner width, SSM state, A_log, D, dt_bias with them) and groups (B, C and their
#: convolution channels), as vLLM's MambaMixer2 and Megatron-Core's MambaMixer split them: ``n_m/N_t`` heads a
#: rank (both assert that the ranks divide the heads: :mod:`symllm.costs.checks`), ``n_g/N_t`` groups, or one
#: group replicated on every rank where ``n_g = 1`` (vLLM's ``extra_groups_for_head_shards``; both refuse any other
#: ``n_g`` the ranks do not divide): ``⌈n_g/N_t⌉`` either way
_MAMBA = {S.n_m: _split(S.n_m), S.n_g: _split(S.n_g)}


@lru_cache(maxsize=1)
def _sizes() -> dict:
    """The dimensions tensor parallelism splits, as substitutions in activations, KV cache and FLOPs:
    heads (of ``d_h`` columns each), the SwiGLU width and the vocabulary (the embedding's weight too).
    A split linear's own weight is split by its ``shape`` (:func:`_split_weight`)."""
    # d_fd: the dense layers' width of a model that interleaves MoE layers; d_se: a shared expert's own width
    # (Qwen2-MoE's gated one, DeepSeek's shared experts)
    # (a latent attention's n_h heads are split as a GQA's: rank 0's share of n_h·d_h, d_h its RoPE width)
    return {S.n_h: _split(S.n_h * S.d_h) / S.d_h, S.n_kv: _split(S.n_kv * S.d_h) / S.d_h,
            S.d_ff: _split(S.d_ff), S.d_fd: _split(S.d_fd), S.d_se: _split(S.d_se), S.V: _split(S.V),
            # a Gated DeltaNet's heads (vLLM splits them over the ranks; its recurrent states with them)
            S.n_gk: _split(S.n_gk), S.n_gv: _split(S.n_gv),
            # the heads of the layers with their own head shape (LayerKind.heads "own"), of d_ha columns each
            S.n_ha: _split(S.n_ha * S.d_ha) / S.d_ha, S.n_kva: _split(S.n_kva * S.d_ha) / S.d_ha,
            # a Mamba-2 mixer's heads and groups (_MAMBA)
            **_MAMBA}


def vocabulary(comp: Component) -> sp.Expr:
    """The vocabulary rows tensor rank 0 holds and computes of ``comp``, a part of the vocabulary (its embedding or
    lm_head): ``⌈V/N_t⌉`` where it is split, every row where an engine keeps it whole (MLC's lm_head: every rank
    computes every logit); a head held whole but read in part (``held``: TurboMind's) computes its share, though
    every rank holds every row (:func:`shard`: its parameters whole, its ``active`` the share).

    >>> from symllm.arch.components import lm_head
    >>> head = lm_head()
    >>> vocabulary(head), vocabulary(layout(head, "mlc")), vocabulary(layout(head, "lmdeploy"))
    (ceiling(V/N_t), V, ceiling(V/N_t))
    >>> shard(layout(head, "lmdeploy")).params, shard(layout(head, "lmdeploy")).active
    (V*d, d*ceiling(V/N_t))
    """
    return S.V if comp.rules.split == "replicated" else _split(S.V)


def _whole(expr: sp.Expr) -> sp.Expr:
    """A sharded count with a denominator (a per-head statistic of rank 0's ``⌈n_h·d_h/N_t⌉/d_h`` heads)
    rounded up to the heads rank 0 holds a piece of: whole, so compiled kernels stay exact."""
    return sp.ceiling(expr) if over_common_denominator((expr,))[1].has(S.d_h, S.d_ha) else expr


def _split_weight(comp: Component) -> sp.Expr:
    """Rank 0's parameters of a column- or row-split linear, from its ``shape``: ``fan_in·⌈fan_out/N_t⌉``
    and a bias of ``⌈fan_out/N_t⌉`` (column), or ``⌈fan_in/N_t⌉·fan_out`` and the whole bias (row)."""
    fan_in, fan_out = comp.shape
    weight = fan_in * fan_out
    bias = sp.expand(comp.params - weight)
    if bias not in (0, fan_out):
        raise SymllmError(f"tp: {comp.name} holds {comp.params} parameters, not a {fan_in} x {fan_out} linear's")
    if comp.rules.split in (*COLUMNS, "gathered"):
        return fan_in * _split(fan_out) + (_split(fan_out) if bias else 0)
    return _split(fan_in) * fan_out + bias


def _sharded(comp: Component, seq: bool, experts: str) -> Component:
    if comp.rules.split == "whole":  # held and run whole on every rank, everything under it too
        return comp
    sizes = _sizes()
    if comp.rules.weight in ("embedding", "head"):  # its vocabulary rows: whole where an engine keeps it so
        sizes[S.V] = vocabulary(comp)
    rows = {S.s: _split(S.s)}
    split = comp.rules.split
    if split in EXPERT_SPLITS:  # rank 0 of the expert-parallel group holds n_e/N_e of the routed experts
        local = {S.n_e: sp.ceiling(S.n_e / S.N_e)}
        if experts == "whole" or split == "expert_whole":  # each whole on every tensor rank (as the layout keeps
            # them, transformers' gpt-oss plan, whatever ``experts`` says)
            return comp.replace(params=comp.params.xreplace(local))
        # split as the engines split them: every expert's width d_ff over the tensor ranks (its activations,
        # FLOPs and active parameters with it), a down-projection bias (gpt-oss) whole on each rank; "tp_x_dp":
        # its weights over the tensor ranks of every replica, the FLOPs and active parameters the replica's share
        width = {S.d_ff: _split(S.d_ff)}
        held = {S.d_ff: sp.ceiling(S.d_ff / (S.N_t * S.N_d))} if experts == "tp_x_dp" else width
        comp = comp.replace(params=comp.params.xreplace(held).xreplace(local),
                            active=None if comp.active is None else comp.active.xreplace(width))
    if comp.shape and split is None:
        raise SymllmError(f"tp: the linear {comp.name} declares no tensor-parallel split")
    own = {q: getattr(comp, q).xreplace(sizes) for q in ("flops", "elementwise", "kv_cache", "saved", "state_cache")}
    own["saved"] = _whole(own["saved"])
    if split in _SPLIT_WEIGHTS:
        own["params"] = _split_weight(comp) if comp.shape and comp.params != 0 else comp.params.xreplace(sizes)
        if comp.active is not None:
            own["active"] = comp.active.xreplace(sizes)
    elif split == "held":  # every rank holds the whole weight and reads (multiplies) its column share
        own["params"] = comp.params
        own["active"] = _split_weight(comp) if comp.shape and comp.params != 0 else comp.params.xreplace(sizes)
    elif split == "merged":  # each output tensor split by its own heads or groups (vLLM's MergedColumnParallelLinear)
        own["params"] = comp.params.xreplace(sizes)
        if comp.active is not None:
            own["active"] = comp.active.xreplace(sizes)
    elif split == "heads":  # one number per query head, Shard(0): rank 0 holds ⌈n_h/N_t⌉ of them (a Mamba-2
        # mixer's or a Gated DeltaNet's per-head and per-group weights: rank 0's heads and groups)
        own["params"] = comp.params.xreplace({S.n_h: _split(S.n_h), S.n_ha: _split(S.n_ha), **_MAMBA,
                                              S.n_gk: _split(S.n_gk), S.n_gv: _split(S.n_gv)})
    if seq and split == "sequence":
        own["saved"] = own["saved"].xreplace(rows)
    checkpoint = comp.checkpoint.xreplace(rows) if seq else comp.checkpoint
    if comp.eager_saved is not None:  # the eager stack's own (symllm.arch.components)
        own["eager_saved"] = _whole(comp.eager_saved.xreplace(sizes))
    if comp.eager_live is not None:
        own["eager_live"] = tuple(_whole(x.xreplace(sizes)) for x in comp.eager_live)
    return comp.replace(**own, checkpoint=checkpoint, live=tuple(_whole(x.xreplace(sizes)) for x in comp.live),
                        children=tuple(_sharded(c, seq, experts) for c in comp.children))


def shard(comp: Component, sp_: bool = False, experts: str = "split") -> Component:
    """What tensor-parallel rank 0 holds of ``comp``, each component split as it declares (``rules.split``):
    the same tree, each split component's parameters, and every activation, KV-cache and FLOP term, with
    its split dimension replaced by rank 0's share; ``sp_`` also splits the saved activations of the
    ``"sequence"`` norms and the checkpoints along the sequence. The routed experts' (``"expert"``)
    parameters are expert-parallel rank 0's ``n_e/N_e``, each expert's width ``d_ff`` split over the tensor
    ranks (``experts="split"``, the engines' default) or whole (``"whole"``; ``Workload.expert_tp`` checks
    the name), or its weights over the ``N_t·N_d`` tensor ranks of every replica (``"tp_x_dp"``: vLLM's MoE layers
    without expert parallelism, :mod:`symllm.costs.expert_layout`; each rank runs every replica's tokens on its
    share, so its FLOPs and active parameters stay the replica's ``d_ff/N_t``); routed experts a layout keeps whole
    (``"expert_whole"``: transformers' gpt-oss plan) are whole whatever ``experts`` says.

    >>> from symllm.arch.components import experts, feed_forward, rmsnorm
    >>> shard(feed_forward()).total("params")
    3*d*ceiling(d_ff/N_t)
    >>> shard(experts()).params, shard(experts(), experts="whole").params
    (3*d*ceiling(n_e/N_e)*ceiling(d_ff/N_t), 3*d*d_ff*ceiling(n_e/N_e))
    >>> shard(experts(), experts="tp_x_dp").params
    3*d*ceiling(n_e/N_e)*ceiling(d_ff/(N_d*N_t))
    >>> shard(rmsnorm("ffn_norm"), sp_=True).saved
    b*beta_a*d*ceiling(s/N_t) + b*ceiling(s/N_t)*Max(4, beta_a)
    """
    return _sharded(comp, bool(sp_), experts)


def largest(*exprs: sp.Expr) -> sp.Expr:
    """The largest of ``exprs`` with their common (positive) denominator outside the ``Max``, so that
    compiled kernels divide once, exactly, at the end (a division inside a ``Max`` would be a float).

    >>> largest(S.d / S.N_d + 1, 2 * S.d / S.N_d)
    Max(2*d, N_d + d)/N_d
    """
    nums, den = over_common_denominator(exprs, expand=True)
    return maximum(*nums) / den


def _only_one_stage() -> sp.Expr:
    """1 when ``N_p = 1``, 0 for more stages."""
    return 1 - sp.Min(1, S.N_p - 1)


@lru_cache(maxsize=64)
def stages(mdl: Component, sp_: bool = False, experts: str = "split") -> tuple[Component, Component]:
    """The first and the last pipeline stage of ``mdl`` as tensor rank 0 holds them (:func:`shard`):
    the parts before the repeated block and ``⌈L/N_p⌉`` blocks; ``⌊L/N_p⌋`` blocks and the parts after.
    With ``N_p = 1`` the first stage is the whole model (the parts after count once, there).

    >>> from symllm.arch.components import model
    >>> first, last = stages(model())
    >>> [(c.name, c.repeat) for c in first.children]
    [('embedding', 1), ('block', ceiling(L/N_p)), ('after', 1 - Min(1, N_p - 1))]
    """
    repeated = [i for i, c in enumerate(mdl.children) if c.repeat != 1]
    if not repeated:
        raise SymllmError(f"pp: pipeline stages need repeated blocks in {mdl.name!r}")
    i, j = repeated[0], repeated[-1] + 1
    blocks, before, after = mdl.children[i:j], mdl.children[:i], mdl.children[j:]
    head_copy = []
    tables = [b for b in before if b.rules.weight == "embedding"]
    for c in after:  # a tied head: the last stage keeps a copy of the embedding matrix
        if c.rules.weight == "head" and c.params == 0 and tables:
            c = c.replace(params=tables[0].params)
        head_copy.append(c)
    first = Component("first_stage", children=(
        *before, *(c.replace(repeat=sp.ceiling(c.repeat / S.N_p)) for c in blocks),
        Component("after", children=after, repeat=_only_one_stage())), definitions=mdl.definitions)
    last = Component("last_stage", children=(*(c.replace(repeat=sp.floor(c.repeat / S.N_p)) for c in blocks),
                                             *head_copy), definitions=mdl.definitions)
    return shard(first, sp_, experts), shard(last, sp_, experts)


@lru_cache(maxsize=64)
def params_per_gpu(mdl: Component, sp_: bool = False, *, pp_stages: bool = True, experts: str = "split") -> sp.Expr:
    """Parameters tensor rank 0 of the largest pipeline stage holds (``pp_stages=False``: no pipeline;
    ``experts``: ``Workload.expert_tp``, :data:`symllm.costs.workloads.EXPERT_TP`).

    >>> from symllm.arch.components import model
    >>> e = params_per_gpu(model(hidden="meta_plain"))
    >>> vals = {S.V: 32000, S.d: 4096, S.L: 32, S.n_h: 32, S.n_kv: 32, S.d_h: 128, S.m: 256, S.N_t: 1, S.N_p: 1}
    >>> e.subs(vals)   # Llama-2-7B on one GPU
    6738415616
    """
    if not pp_stages:
        return shard(mdl, sp_, experts).closed_form("params")
    first, last = stages(mdl, sp_, experts)
    return substitute(largest(first.total("params"), last.total("params")), dict(mdl.definitions))


def _only_experts(comp: Component, unit: bool = False) -> Component:
    """``comp`` with the parameters of every component but the routed experts zeroed (``unit``: each
    of those holding 1, so that a total counts them, repeats included)."""
    own = (1 if unit else comp.params) if _expert(comp) else 0
    return comp.replace(params=own, active=None, children=tuple(_only_experts(c, unit) for c in comp.children))


def expert_params(stage: Component) -> sp.Expr:
    """The routed experts' parameters in ``stage`` (a model or a :func:`stages` stage), repeats included.

    >>> from symllm.arch.components import LayerKind, model
    >>> expert_params(model(kinds=(LayerKind(ffn="moe"),)))
    3*L*d*d_ff*n_e
    >>> expert_params(stages(model(kinds=(LayerKind(ffn="moe"),)))[1])   # each expert's width over N_t
    3*d*ceiling(n_e/N_e)*ceiling(d_ff/N_t)*floor(L/N_p)
    """
    return _only_experts(stage).total("params")


#: :func:`comm`'s two data-parallel inputs as symbols, for a form evaluated at an engine's numbers
#: (:func:`symllm.costs.hardware.roofline_forms`, read as ``dp_sent``): bytes of a reduced gradient, rounds a step
REDUCE_BYTES, DP_ROUNDS = sp.symbols("beta_g R_d", positive=True, integer=True)


@lru_cache(maxsize=64)
def comm(mdl: Component, sp_: bool = False, recompute: bool | str = False, zero_stage: int = 0,
         experts: str = "split", grad_bytes=zero.MIXED_PRECISION_ADAM["gradients"], rounds=1,
         columns: str = "dtensor", float8: tuple = ()) -> dict[str, sp.Expr]:
    """Bytes one GPU sends per training step of one micro-batch (``b`` sequences; see the module docstring), the
    busiest stage's: ``tp`` tensor-parallel collectives, ``pp`` pipeline point-to-point (a middle stage's
    activation on and gradient back), ``dp`` data-parallel gradients
    (and ZeRO's weight all-gathers), and for a mixture-of-experts model ``ep`` the expert-parallel
    all-to-alls. ``dp`` reduces the gradients at ``grad_bytes`` a parameter (the reduce dtype's; bf16 by
    default), ``rounds`` times a step (1: accumulated, reduced once; FSDP2 under torchtitan without a pipeline
    reduce-scatters and, at ZeRO 3, gathers again every micro-batch: ``rounds`` = ``m``); numbers or symbols
    (:data:`REDUCE_BYTES`, :data:`DP_ROUNDS`). At ZeRO 3 the gradients reduced are those of the parameters that get
    one (:meth:`~symllm.arch.components.base.Component.trained`; :func:`symllm.costs.rings.dp_bytes`). ``columns``: the
    column-parallel linears the training engine runs (:func:`symllm.costs.collectives.column_parallel`); ``float8``:
    the block all-gathers it runs in float8 (:func:`symllm.costs.tp_overlap.fp8_gathers`), one byte an element where
    the model holds them (:func:`symllm.costs.tp_overlap.fp8_in_model`: a dense model).

    >>> from symllm.arch.components import LayerKind, model
    >>> c = comm(model())
    >>> c["pp"]
    b*beta_a*d*s*Min(2, N_p - 1)
    >>> ones = {s: 1 for s in model().total("params").free_symbols}   # 12 parameters, 24 gradient bytes
    >>> c["dp"].subs({S.N_t: 1, S.N_p: 1, S.N_d: 5, **ones})   # ZeRO 0, an all-reduce: 2·(24 - 24//5)
    40
    >>> comm(model(kinds=(LayerKind(ffn="moe"),)))["ep"].subs(S.N_p, 1)   # 4 all-to-alls per MoE layer
    4*L*ceiling(b*beta_a*d*k*s*(N_e - 1)/N_e)
    >>> z3 = {S.N_t: 1, S.N_p: 1, S.N_d: 4, **ones}   # ring shares: 18 of 24 bf16 bytes, 36 of 48 fp32 bytes
    >>> comm(model(), zero_stage=3)["dp"].subs(z3), comm(model(), zero_stage=3, grad_bytes=4, rounds=2)["dp"].subs(z3)
    (54, 144)
    """
    first, last = stages(mdl, sp_, experts)
    held = fp8_in_model(float8, has_experts(mdl))  # the float8 all-gathers a dense model's blocks run
    graded = mdl.trained()  # the parameters that get a gradient (mdl itself where every one does)
    seq_rows = sp.ceiling(S.s / S.N_t) if sp_ else S.s
    out = {
        "tp": maximum(*(training_tp_bytes(st, sp_, recompute, experts, columns, held) for st in (first, last))),
        "pp": sp.Min(2, S.N_p - 1) * S.beta_a * S.b * seq_rows * S.d,
        "dp": dp_bytes(params_per_gpu(mdl, sp_, experts=experts), S.N_d, zero_stage, grad_bytes, rounds,
                       params_per_gpu(graded, sp_, experts=experts)),
    }
    if has_experts(mdl):
        group = S.N_d / S.N_e  # the ranks holding the same experts: their gradients and ZeRO shards

        def dp(stage, trained):  # a stage, and the same stage's parameters that get a gradient (every expert's)
            x = expert_params(stage)
            return (dp_bytes(stage.total("params") - x, S.N_d, zero_stage, grad_bytes, rounds,
                             trained.total("params") - x)
                    + dp_bytes(x, group, zero_stage, grad_bytes, rounds))

        messages = moe_alltoalls(recompute)
        tokens = S.beta_a * S.b * S.s * S.k * S.d
        out["dp"] = largest(*map(dp, (first, last), stages(graded, sp_, experts)))
        out["ep"] = messages * ring(tokens, S.N_e) * maximum(*(_only_experts(st, unit=True).total("params")
                                                                       for st in (first, last)))
    return {k: substitute(v, dict(mdl.definitions)) for k, v in out.items()}


def workload_comm(mdl: Component, work) -> dict[str, sp.Expr]:
    """:func:`comm` of ``mdl`` under the workload ``work``'s layout, as its training engine runs it: its column-parallel
    linears (:func:`symllm.costs.collectives.column_parallel`) and the all-gathers it runs in float8
    (:func:`symllm.costs.tp_overlap.fp8_gathers`). What count, derive and the expected time read.

    >>> from symllm.arch.resolved import spec
    >>> from symllm.costs.workloads import Workload
    >>> mdl, work = spec("llama3.1-8b").model(), Workload(tp=8, sp=True, engine="torchtitan")
    >>> fp8 = workload_comm(mdl, work.replace(compute_dtype="fp8"))["tp"]   # 4 block all-gathers at 1 byte, not 2:
    >>> at = {S.N_t: 8, S.N_p: 1, S.b: 1, S.s: 8, S.beta_a: 2, S.L: 32, S.d: 4096, S.V: 128256}
    >>> (workload_comm(mdl, work)["tp"] - fp8).subs(at) == 32 * 4 * 8 * 4096 * 7 // 8   # a ring share of 8 tokens less
    True
    """
    from symllm.costs.collectives import column_parallel

    return comm(mdl, work.sp, work.recompute, work.zero_stage, work.expert_tp, columns=column_parallel(work.engine),
                float8=fp8_gathers(work))
