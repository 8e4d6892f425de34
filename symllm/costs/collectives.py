"""Collectives' expected seconds: the collectives a tensor-parallel inference step runs
(:func:`step_collectives`, the one count its bytes, its latencies and the host's calls read) and a training step of
one micro-batch runs (:func:`training_collectives`, built on it, as the training engine's column-parallel linears run
them: :func:`column_parallel`; its bytes :func:`training_tp_bytes`), a tensor-parallel all-reduce, all-gather or
reduce-scatter and a MoE all-to-all by the link they cross (nccl-tests and DeepEP figures in ``efficiency.json``:
:func:`collective`; the latency by ranks in NCCL's ring shape: :func:`allreduce_latency_s`, :func:`gather_latency_s`).
Data-parallel and pipeline traffic is :mod:`symllm.costs.dp_traffic`'s, an engine's host work a step
:mod:`symllm.costs.host_step`'s; :mod:`symllm.costs.efficiency` adds them to a step.

>>> float(alltoall_s(1, 0, ("NVLink 4", 450 * 10 ** 9))) == float(allreduce_s(1, 0, ("NVLink 4", 450 * 10 ** 9)))
True
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.figures import data, fraction as _x
from symllm.validate import choice

__all__ = ["SAVED_COLLECTIVES", "forward_runs", "moe_alltoalls", "summed", "reduced_sublayers", "gathered", "repeated",
           "step_collectives", "row_bytes", "LOSS_STATISTICS", "COLUMN_PARALLEL", "column_parallel", "engine_shape",
           "training_collectives", "FLOAT8_GATHERS", "training_calls", "busiest_calls", "training_tp_bytes",
           "link_kind", "collective",
           "allreduce_latency_s", "allreduce_s", "gather_latency_s", "training_tp_s", "alltoall_s"]


#: the collectives torchtitan's op checkpointing saves (:mod:`symllm.costs.selective`; ``_save_list`` at 9dec370:
#: ``c10d_functional.reduce_scatter_tensor``; torchtitan's later lists add ``all_to_all_single`` for its mixtures, which
#: this policy refuses): every other collective in a recomputed block -- the all-gather before sequence-parallel column
#: linears, an all-reduce without sequence parallelism -- runs again in backward, as the block's other unsaved ops do
SAVED_COLLECTIVES = ("reduce_scatter",)


def forward_runs(collective: str, recompute) -> int:
    """How many times a recomputed block's forward ``collective`` (``all_gather``, ``reduce_scatter``,
    ``all_reduce``, ``all_to_all``) runs a training step under a recomputation policy (a workload's ``recompute``,
    or full's ``True``; :mod:`symllm.costs.selective`): twice
    under full recomputation, twice under op checkpointing unless the policy saves its output
    (:data:`SAVED_COLLECTIVES`), once without recomputation.

    >>> [forward_runs(c, "op") for c in ("all_gather", "reduce_scatter", "all_reduce")]
    [2, 1, 2]
    >>> forward_runs("reduce_scatter", "full"), forward_runs("all_gather", "none")
    (2, 1)
    """
    full = recompute is True or recompute == "full"
    return 2 if full or (recompute == "op" and collective not in SAVED_COLLECTIVES) else 1


def moe_alltoalls(recompute) -> int:
    """The all-to-alls one MoE layer runs over its expert ranks a training step: dispatch and combine, in forward
    and in backward, the forward's again where ``recompute`` reruns it (:func:`forward_runs`). What the bytes
    (:func:`symllm.costs.parallel.comm`'s ``ep``) and the time (:func:`symllm.costs.moe_training.moe_training_s`)
    both count.

    >>> moe_alltoalls(False), moe_alltoalls("full"), moe_alltoalls(True)
    (4, 6, 6)
    """
    return 2 + 2 * forward_runs("all_to_all", recompute)


def summed(comp, split_experts: bool = True) -> bool:
    """Whether the output of ``comp`` is a partial sum on each tensor rank, summed across the ranks in forward (an
    all-reduce; a reduce-scatter under sequence parallelism): a row-split linear's (its input features split), the
    vocabulary-split embedding's, and the routed experts' when each expert's width is split over the ranks
    (``split_experts``: ``--expert-tp split``). The one rule the training collectives (:func:`training_collectives`)
    and the inference all-reduces (:func:`reduced_sublayers`) read.

    >>> from symllm.arch.components import experts, feed_forward
    >>> [summed(c) for c in feed_forward().children], summed(experts()), summed(experts(), split_experts=False)
    ([False, True, False], True, False)
    """
    split = comp.rules.split
    return split in ("row", "vocab") or (split == "expert" and split_experts)


def reduced_sublayers(stage, experts: str = "split"):
    """The all-reduces of the residual stream one forward pass through the blocks of ``stage`` sends, as the
    inference engines run them: one per sublayer (a direct child of a block: an attention, a token mixer, a
    feed-forward, a mixture of experts) whose output a component in it sums across the tensor ranks
    (:func:`summed`), reduced once at the sublayer's output (vLLM's ``RowParallelLinear`` with ``reduce_results``;
    a mixture's shared expert ``reduce_results=False``, summed with the routed experts' output in one all-reduce).
    Two a LLaMA block (the attention's ``wo``, the feed-forward's ``w2``); one a Nemotron-H block (its one mixer,
    attention or MLP; vllm/model_executor/models/nemotron_h.py); none for a replicated sublayer (DeepSeek-V4's
    attention, which transformers' plan keeps whole; vLLM's layout, :func:`symllm.costs.parallel.layout`, splits
    it: two a layer). The blocks are the stage's children that checkpoint an input (each repeated by its count); the
    embedding's all-reduce and the logits' gather are the caller's.

    >>> from symllm.arch.components import LayerKind, model
    >>> reduced_sublayers(model())
    2*L
    >>> kinds = (LayerKind(mixer="mamba", ffn="none"), LayerKind(mixer="none"), LayerKind(ffn="none"))
    >>> reduced_sublayers(model(kinds=kinds))
    L
    """
    import sympy as sp
    split_experts = experts == "split"

    def sums(sublayer) -> bool:
        return any(summed(c, split_experts) for c in sublayer.walk())
    return sum((block.repeat * sum(1 for c in block.children if sums(c))
                for block in stage.children if block.checkpoint != 0), sp.S.Zero)


def gathered(stage, recompute=False, seq: bool = False, columns: str = "dtensor") -> dict:
    """The linears of ``stage`` whose output every tensor rank gets whole (split ``gathered``: transformers'
    ``colwise_gather_output``, the lm_head and Qwen3-Next's and Qwen3.5's Gated DeltaNet projections under ``--engine
    hf``; MLA's down-projections under Megatron-Core), repeats included, as DTensor runs them (transformers 5.23
    ``distributed/tensor_parallel.py``, ``ColwiseParallel`` with ``Replicate`` input and output): ``calls``, an
    inference forward's all-gathers of their outputs, one each, and ``widths``, the output features they gather, summed
    (a token row's elements), a head's aside (its logits' gather is the step's ``logits``); a training micro-batch's
    ``training_gathers`` (the forward's, a head's too, again where recomputation reruns a block's forward:
    :func:`forward_runs`) and ``training_reduces`` (each input's gradient all-reduced in backward), and
    ``training_bytes``, what one GPU sends for them, each of its own width (:func:`row_bytes`). Megatron-Core's
    (``columns``) under ``seq`` (core_v0.13.0 multi_latent_attention.py 422-425, 434-443, layers.py 505-519): the input
    all-gathered in forward and backward, its gradient reduce-scattered, the output all-gathered, the latent scattered
    to the sequence (its gradient all-gathered; ``wkv_a``'s RoPE key, ``d_hr`` wide, kept whole): no all-reduce.

    >>> from symllm.arch.components import Rules, linear
    >>> from symllm.arch.symbols import d, n_gv
    >>> g = gathered(linear("out_proj", n_gv, d, rules=Rules("gathered", lora=(), weight="linear", stacks=())))
    >>> g["calls"], g["widths"], g["training_reduces"]
    (1, d, 1)
    """
    import sympy as sp
    from symllm.arch.symbols import d_hr

    scattered = seq and choice("column_parallel", columns, COLUMN_PARALLEL) == "megatron"

    def visit(comp, checkpointed: bool) -> tuple:
        checkpointed = checkpointed or comp.checkpoint != 0
        own = (0, 0, 0, 0, 0)
        if comp.rules.split == "gathered":
            fan_in, fan_out = comp.shape
            runs = forward_runs("all_gather", recompute) if checkpointed else 1
            step = int(comp.rules.weight != "head")
            own = (step, step * fan_out, runs, 1, runs * row_bytes(fan_out) + 2 * row_bytes(fan_in))
            if scattered and step:  # input twice, its gradient, the output, the latent's gradient: no all-reduce
                own = (1, fan_out, 2 * runs + 3, 0, (runs + 2) * row_bytes(fan_in) + runs * row_bytes(fan_out)
                       + row_bytes(sp.sympify(fan_out).subs(d_hr, 0)))
        below = [visit(c, checkpointed) for c in comp.children]
        return tuple(comp.repeat * (x + sum((b[i] for b in below), sp.S.Zero)) for i, x in enumerate(own))
    calls, widths, gathers, reduces, sent = visit(stage, False)
    return {"calls": calls, "widths": widths, "training_gathers": gathers, "training_reduces": reduces,
            "training_bytes": sent}


def step_collectives(stage, experts: str = "split") -> dict:
    """The collectives one forward pass through a pipeline ``stage`` (a component as tensor rank 0 holds it) runs
    over the tensor ranks, by kind, repeats included: ``residual``, the all-reduces of the residual stream, one a
    sublayer the ranks sum (:func:`reduced_sublayers`) and the embedding's where the stage
    holds one split over the vocabulary (:func:`summed`: vLLM's and SGLang's
    ``VocabParallelEmbedding`` all-reduces its partial rows); ``logits``, the all-gather of the logits where it
    holds a head split over the vocabulary (``column``: vLLM's and SGLang's ``LogitsProcessor``); ``norms``, the
    fp32 all-reduce of each Mamba-2 gated norm whose one group spans the ranks
    (:func:`symllm.arch.components.mamba.spanning_norms`); ``gathered``, the all-gathers of the outputs of the linears
    every rank gets whole (:func:`gathered`). A part laid out whole on every rank runs none. The one
    count a step's bytes (:func:`symllm.costs.hardware.stage_times`), its latencies and the host's calls
    (:func:`symllm.costs.efficiency.expected`) read: their sum is the step's collective calls.

    >>> from symllm.arch.components import model
    >>> from symllm.costs import parallel
    >>> first, last = parallel.stages(model())
    >>> step_collectives(first)   # the head here only without a pipeline
    {'residual': 2*ceiling(L/N_p) + 1, 'logits': 1 - Min(1, N_p - 1), 'norms': 0, 'gathered': 0}
    >>> step_collectives(last)    # no embedding on the last stage
    {'residual': 2*floor(L/N_p), 'logits': 1, 'norms': 0, 'gathered': 0}
    """
    from symllm.arch.components.mamba import spanning_norms

    embeddings, heads = _vocabulary_parts(stage, ("gathered",))  # (a gathered head's logits: gathered alike)
    return {"residual": reduced_sublayers(stage, experts) + embeddings, "logits": heads,
            "norms": spanning_norms(stage), "gathered": gathered(stage)["calls"]}


def _vocabulary_parts(stage, heads: tuple = ()) -> tuple:
    """``(embeddings, heads)`` of ``stage``, repeats included: its embeddings split over the vocabulary
    (:func:`summed`: their rows summed across the ranks) and its heads split by column
    (:data:`~symllm.arch.components.base.COLUMNS`: each rank's share of the logits; ``heads``, more splits counted as
    such: the step's gathered head, whose logits are gathered alike). What :func:`step_collectives` and
    :func:`training_collectives` read of them (in training a gathered head is :func:`gathered`'s: whole logits, no
    vocabulary-parallel loss)."""
    import sympy as sp
    from symllm.arch.components.base import COLUMNS

    def count(weight: str, split) -> sp.Expr:
        return sum((times for c, times in repeated(stage, weight) if split(c)), sp.S.Zero)
    return count("embedding", summed), count("head", lambda c: c.rules.split in (*COLUMNS, *heads))


def repeated(stage, weight: str):
    """Each part of ``stage`` (itself included) whose weight is ``weight`` (``"embedding"``, ``"head"``:
    :attr:`~symllm.arch.components.Rules.weight`), with the times it runs there: its own repeat and those above it.
    What :func:`_vocabulary_parts` counts and :func:`symllm.costs.loss_memory.logits_memory` walks.

    >>> from symllm.arch.components import model
    >>> [(c.name, n) for c, n in repeated(model(), "head")]
    [('lm_head', 1)]
    """
    def walk(comp, times):
        if comp.rules.weight == weight:
            yield comp, times
        for c in comp.children:
            yield from walk(c, times * c.repeat)
    return walk(stage, stage.repeat)


#: the fp32 all-reduces of ``b·s`` values a vocabulary-parallel cross-entropy runs in forward, none in backward: the
#: logits' max, the sum of their exponentials, the target's logit (Megatron-Core's ``VocabParallelCrossEntropy``,
#: torch's ``loss_parallel`` under torchtitan)
LOSS_STATISTICS = 3


#: the column-parallel linears a training engine runs (``column_parallel`` under it in efficiency.json, with its
#: source): "dtensor", torch's ``ColwiseParallel`` (torchtitan, llm-foundry; transformers' plan), one a linear, each
#: reducing its input gradient, the all-gathered input kept for the weight gradient under sequence parallelism;
#: "megatron", Megatron-Core's ``ColumnParallelLinear`` (Transformer Engine's ``LayerNormLinear`` alike; NeMo), the
#: linears sharing an input one (``linear_qkv``, ``linear_fc1``), its input all-gathered again in backward
COLUMN_PARALLEL = ("dtensor", "megatron")


def column_parallel(engine: str | None) -> str:
    """The column-parallel linears the training engine of ``--engine engine`` runs (:data:`COLUMN_PARALLEL`), as its
    tensor-parallel collectives follow them (:func:`training_collectives`): the ``column_parallel`` in efficiency.json
    of the engine training quantities follow (:func:`symllm.costs.figures.engine_for`: no engine, or an inference
    engine, the default training engine, Megatron); one that declares none (DeepSpeed: not read) transformers' plan
    as DTensor runs it.

    >>> column_parallel("megatron"), column_parallel("torchtitan"), column_parallel(None), column_parallel("mlc")
    ('megatron', 'dtensor', 'megatron', 'megatron')
    """
    from symllm.costs.figures import engine_for

    return engine_for(engine, "training").get("column_parallel", "dtensor")


def engine_shape(engine: str | None) -> tuple:
    """What of a workload's ``engine`` shapes its closed forms (the field's ``shapes`` mark in
    :mod:`symllm.costs.workloads`): the engine whose own layout of the parts it asks for
    (:func:`symllm.arch.layers.layout_engine`) and the column-parallel linears it trains with
    (:func:`column_parallel`).

    >>> engine_shape("vllm"), engine_shape("megatron"), engine_shape("torchtitan"), engine_shape(None)
    (('vllm', 'megatron'), ('megatron', 'megatron'), (None, 'dtensor'), (None, 'megatron'))
    >>> engine_shape("sglang") == engine_shape(None), engine_shape("hf")
    (True, ('hf', 'dtensor'))
    """
    from symllm.arch.layers import layout_engine

    return layout_engine(engine), column_parallel(engine)


def training_collectives(stage, seq: bool = False, recompute: bool | str = False, experts: str = "split",
                         columns: str = "dtensor") -> dict:
    """The tensor-parallel collectives one training micro-batch (forward and backward) through a pipeline ``stage``
    runs, by kind, repeats included: ``all_reduce``, ``all_gather``, ``reduce_scatter`` of the residual stream
    (``β_a·b·s·d`` full), ``loss``, the vocabulary-parallel loss's fp32 all-reduces (:data:`LOSS_STATISTICS` a
    head). Built on the inference step's count (:func:`step_collectives`): its vocabulary-split embeddings (the
    ``residual`` beyond the sublayers) sum their rows in forward, an all-reduce (``seq``: a reduce-scatter, its
    backward an all-gather), nothing in backward; its heads split over the vocabulary (``logits``) gather no
    logits in training but all-reduce their input's gradient in backward (``seq``: all-gather the input in forward,
    reduce-scatter its gradient) and run the loss's statistics (a gathered head, transformers', is :func:`gathered`'s:
    its whole logits gathered, no vocabulary-parallel loss). The blocks, as DTensor runs them (torch's
    ``ColwiseParallel``, ``RowwiseParallel``): a forward all-reduce a component the ranks sum
    (:func:`summed`; ``seq``: a reduce-scatter, an all-gather in backward), a backward
    all-reduce of each column-wise linear's input gradient (``seq``: one all-gather in forward and one
    reduce-scatter in backward a group of them sharing an input; ``columns`` "megatron", Megatron-Core's linears
    (:func:`column_parallel`), such a group is one linear: one all-reduce a group, and under ``seq`` its input, the
    head's too, all-gathered again in backward), tensor-split experts one such pair and a summed
    output; recomputation runs a block's forward collectives again where its policy does not save them
    (:func:`forward_runs`). ``gathered`` and ``gathered_grads``: the forward all-gathers and backward all-reduces of
    the linears every rank gets whole (:func:`gathered`: each of its own width, not the residual stream's).
    ``routing``: under transformers' plan (a stage whose head every rank holds whole,
    :data:`~symllm.arch.components.embeddings.WHOLE_LOGITS`), the backward all-reduce of each tensor-split experts'
    routing weights (``b·s·k`` of them: transformers 5.23 ``MoeExpertsParallel`` wraps ``top_k_weights`` in
    ``_AllReduceBackward`` beside the hidden states; none where the experts take none, Llama 4's:
    :attr:`~symllm.arch.components.Rules.routing`). A ``grad_reduced`` weight (transformers'
    ``replicated_with_grad_allreduce``: Qwen3's q and k norms) all-reduces its gradient in backward, one
    ``all_reduce`` each. Their sum is a micro-batch's calls.

    >>> from symllm.arch.components import model
    >>> from symllm.costs import parallel
    >>> from symllm.arch.symbols import N_p
    >>> first = parallel.stages(model())[0]   # without a pipeline (N_p = 1) it holds the head too
    >>> c = training_collectives(first)   # 2 forward + 5 backward a layer (wq wk wv w1 w3), the embedding's
    >>> c["all_reduce"].subs(N_p, 1), c["loss"].subs(N_p, 1)   # and the head's input gradient
    (7*L + 2, 3)
    >>> {k: v.subs(N_p, 1) for k, v in training_collectives(first, seq=True).items()}  # doctest: +NORMALIZE_WHITESPACE
    {'all_reduce': 0, 'all_gather': 4*L + 2, 'reduce_scatter': 4*L + 2, 'loss': 3, 'gathered': 0, 'gathered_grads': 0,
     'routing': 0}
    >>> mc = training_collectives(first, columns="megatron")   # Megatron-Core: linear_qkv, linear_fc1
    >>> mc["all_reduce"].subs(N_p, 1), training_collectives(first, True, columns="megatron")["all_gather"].subs(N_p, 1)
    (4*L + 2, 6*L + 3)
    """
    import sympy as sp

    sized, heads = _sized(stage, seq, recompute, experts, columns)

    def total(kind: str) -> sp.Expr:  # a replicated weight's gradient among the all-reduces (_REDUCED)
        return sum((n for (k, *_), n in sized.items() if _REDUCED.get(k, k) == kind), sp.S.Zero)
    whole = gathered(stage, recompute, seq, columns)
    return {**{k: total(k) for k in ("all_reduce", "all_gather", "reduce_scatter")}, "loss": LOSS_STATISTICS * heads,
            "gathered": whole["training_gathers"], "gathered_grads": whole["training_reduces"],
            "routing": total("routing")}


#: the block all-gathers a training engine may run in float8 (``fp8_tp_all_gathers``, named by the GEMM each feeds as
#: :data:`symllm.costs.tp_overlap.PAIRS` names them), by the sublayer whose linears they feed: a column group's forward
#: all-gather of its input (``_fprop``) and a row split's backward one of its output gradient (``_dgrad``)
FLOAT8_GATHERS = {"attention": ("qkv_fprop", "proj_dgrad"), "feed_forward": ("fc1_fprop", "fc2_dgrad")}


#: the kinds :func:`_sized` counts that are all-reduces (each sends twice a gather's share: :func:`training_tp_bytes`),
#: by the count :func:`training_collectives` gives each under: a replicated weight's gradient among the all-reduces,
#: the routing weights' gradients on their own
_REDUCED = {"all_reduce": "all_reduce", "weight_grads": "all_reduce", "routing": "routing"}


def _sized(stage, seq, recompute, experts, columns, float8=()) -> tuple:
    """:func:`training_collectives`' by ``(kind, width, bytes an element)`` (a column group's width its fan-in, else
    ``d``; ``β_a`` but for the routing weights a family's router leaves in fp32, :attr:`Rules.routing`, and the
    all-gathers ``float8`` names, one byte: :data:`FLOAT8_GATHERS`; kind ``weight_grads``: a weight's gradient,
    ``width`` its elements, no ``b·s`` rows), and the heads. Under DTensor with sequence parallelism a column group's
    width is the sublayer's input's, ``d``, whatever the linear's fan-in: MLA's as torchtitan plans it (3e3a19fe,
    2025-11-24, models/deepseek_v3/infra/parallelize.py apply_non_moe_tp 222-256) gathers the attention's input once,
    Shard(1) to Replicate (``PrepareModuleInput``), and runs ``wq_a``, ``wkv_a`` and the latents' norms
    ``NoParallel`` and ``wq_b``, ``wkv_b`` ``ColwiseParallel``, all with ``use_local_output=False``: the latents'
    gradients stay ``Partial`` through the down-projections and are summed at the input, one reduce-scatter of ``d``
    in backward, none of a latent (CommDebugMode on that plan: tests/test_tp_overlap.py). The down-projections' and
    norms' weight gradients stay ``Partial`` too, reduced where the optimizer step reads them, once a step: no
    micro-batch's collective, not counted."""
    import sympy as sp
    from symllm.arch import symbols as S
    from symllm.arch.components.base import COLUMNS
    from symllm.arch.components.embeddings import WHOLE_LOGITS

    split_experts = experts == "split"
    hf = any(c.rules.weight == "head" and c.rules.split in WHOLE_LOGITS for c in stage.walk())
    fused = choice("column_parallel", columns, COLUMN_PARALLEL) == "megatron"
    again = 1 if fused and seq else 0  # Megatron-Core gathers a column linear's input again for its weight gradient
    embeddings, heads = _vocabulary_parts(stage)  # as the inference step counts them, but for a gathered head
    counted = {(k, S.d, S.beta_a): sp.S.Zero for k in ("all_reduce", "all_gather", "reduce_scatter")}

    def add(kind: str, n, width=S.d, size=S.beta_a) -> None:
        counted[kind, width, size] = counted.get((kind, width, size), sp.S.Zero) + n
    if seq:
        add("reduce_scatter", embeddings + heads)
        add("all_gather", embeddings + heads * (1 + again))
    else:
        add("all_reduce", embeddings + heads)

    def visit(comp, mult, checkpointed: bool) -> None:  # the blocks': every split part but the step's own two
        mult = mult * comp.repeat
        checkpointed = checkpointed or comp.checkpoint != 0
        gather, scatter, reduce = ((forward_runs(c, recompute) if checkpointed else 1)
                                   for c in ("all_gather", "reduce_scatter", "all_reduce"))
        grouped = set()  # the inputs (fan-ins) whose column-wise linears are counted: one group an input
        fprop, dgrad = (1 if pair in float8 else S.beta_a for pair in FLOAT8_GATHERS.get(comp.name, ("", "")))
        for c in comp.children:
            style, m = c.rules.split, mult * c.repeat
            if c.rules.weight == "embedding" or (c.rules.weight == "head" and style in COLUMNS):
                continue  # counted from the step's count above
            if style == "grad_reduced":  # transformers' replicated_with_grad_allreduce: its gradient, in backward
                add("weight_grads", m, c.params)
            elif style in (*COLUMNS, "merged"):
                fan_in = c.shape[0] if c.shape else S.d  # the group's input: its collectives' width
                if seq and not fused:  # DTensor under sequence parallelism: the sublayer's input, d wide
                    fan_in = S.d  # (MLA's latents too: see _sized's docstring)
                if not seq and not fused:  # each one's input gradient, all-reduced in backward
                    add("all_reduce", m, fan_in)
                elif fan_in not in grouped:  # the linears sharing an input, as one: their summed input gradients
                    # reduced once in backward (seq: one all-gather before them, their gradients reduce-scattered);
                    # MLA's query and key-value up-projections under Megatron-Core read two latents: two groups
                    grouped.add(fan_in)
                    if seq:
                        add("all_gather", m * (gather + again), fan_in, fprop)
                    add("reduce_scatter" if seq else "all_reduce", m, fan_in)
            elif summed(c, split_experts):
                if style == "expert":  # a column-wise pair's input (its gradient in backward) and a summed output
                    routing = S.beta_a if c.rules.routing is None else c.rules.routing
                    if hf and routing != 0:  # transformers': the routing weights' gradient too, at their dtype
                        add("routing", m, S.k, routing)
                    if seq:
                        add("all_gather", m * (gather + 1))
                        add("reduce_scatter", m * (scatter + 1))
                    else:
                        add("all_reduce", m * (1 + reduce))
                elif seq:  # forward: a reduce-scatter (backward: an all-gather)
                    add("reduce_scatter", m * scatter)
                    add("all_gather", m, S.d, dgrad)
                else:  # forward: an all-reduce
                    add("all_reduce", m * reduce)
            elif c.children:
                visit(c, mult, checkpointed)

    visit(stage, sp.S.One, False)
    return counted, heads


def training_calls(count: dict) -> dict:
    """A training micro-batch's tensor-parallel calls ``count`` (:func:`training_collectives`) as the expected time
    prices them: ``training_tp_calls``, all of them; ``training_tp_gathers``, its all-gathers and reduce-scatters,
    each at its own latency (:func:`training_tp_s`).

    >>> training_calls({"all_reduce": 3, "all_gather": 4, "reduce_scatter": 4, "loss": 3})
    {'training_tp_calls': 14, 'training_tp_gathers': 8}
    """
    return {"training_tp_calls": sum(count.values()),
            "training_tp_gathers": count["all_gather"] + count["reduce_scatter"] + count.get("gathered", 0)}


def busiest_calls(num, stages) -> dict:
    """:func:`training_calls` of the pipeline stage that runs the most calls a micro-batch, as ``comm``'s tp bytes
    are the busiest stage's: ``num(name)`` a stage's evaluated closed form by name, ``stages`` their prefixes.

    >>> busiest_calls(lambda name: {"0.training_tp_calls": 9, "0.training_tp_gathers": 4, "1.training_tp_calls": 12,
    ...                             "1.training_tp_gathers": 2}[name], ("0.", "1."))
    {'training_tp_calls': 12, 'training_tp_gathers': 2}
    """
    calls = [{k: int(num(f"{st}{k}")) for k in ("training_tp_calls", "training_tp_gathers")} for st in stages]
    return max(calls, key=lambda c: c["training_tp_calls"])


def row_bytes(width, size=None):
    """Whole bytes one GPU sends in a tensor-parallel all-gather or reduce-scatter of a micro-batch's activations
    ``width`` wide (``β_a·b·s·width``; ``size`` bytes an element in place of ``β_a``): its ring share
    (:func:`symllm.costs.rings.ring`); an all-reduce twice this.

    >>> row_bytes(1), row_bytes(2, 4)
    (ceiling(b*beta_a*s*(N_t - 1)/N_t), ceiling(8*b*s*(N_t - 1)/N_t))
    """
    from symllm.arch import symbols as S
    from symllm.costs.rings import ring

    return ring((S.beta_a if size is None else size) * S.b * S.s * width, S.N_t)


def training_tp_bytes(stage, seq: bool = False, recompute: bool | str = False, experts: str = "split",
                      columns: str = "dtensor", float8: tuple = ()):
    """Whole bytes one GPU sends in the tensor-parallel collectives of a training micro-batch through ``stage``
    (:func:`training_collectives`, its options alike): each all-gather or reduce-scatter :func:`row_bytes` of its
    own width (the residual stream's, a column group's input's: MLA's latents), an all-reduce twice that, the
    loss's all-reduces of ``b·s`` fp32 statistics, the routing weights' all-reduces of ``b·s·k`` at their dtype (``β_a``
    where the family's router casts them back, Qwen's; fp32 where it leaves them so, DeepSeek-V3's and Mixtral's:
    :attr:`~symllm.arch.components.Rules.routing`), a replicated weight's gradient all-reduce (``grad_reduced``: its
    parameters at ``β_a``, the model's dtype), and the gathered linears' (:func:`gathered`). The block all-gathers
    named in ``float8`` (by the GEMM each feeds, :data:`FLOAT8_GATHERS`: a training engine that casts to float8 before
    it gathers, :func:`symllm.costs.tp_overlap.fp8_gathers`) move one byte an element.

    >>> from symllm.arch.components import Component, latent as S   # wq_b's, wkv_b's input gradients; wo's output
    >>> mla = Component("block", children=(S.latent_attention(),))
    >>> training_tp_bytes(mla) == 2 * (row_bytes(S.r_q) + row_bytes(S.r_kv) + row_bytes(S.d))
    True
    """
    import sympy as sp
    from symllm.arch import symbols as S
    from symllm.arch.components import STAT_BYTES
    from symllm.costs.rings import ring

    sized, heads = _sized(stage, seq, recompute, experts, columns, float8)

    def sent(kind: str, width, size):  # one collective's share: a weight's gradient has no rows
        return ring(size * width, S.N_t) if kind == "weight_grads" else row_bytes(width, size)
    return (sum(((1 + (kind in _REDUCED)) * n * sent(kind, width, size) for (kind, width, size), n in sized.items()),
                sp.S.Zero)
            + 2 * LOSS_STATISTICS * heads * ring(STAT_BYTES * S.b * S.s, S.N_t)
            + gathered(stage, recompute, seq, columns)["training_bytes"])


def link_kind(topology: str) -> str:
    """A link's kind, as efficiency.json's figures are keyed: nvlink, infinity-fabric, pcie or network.

    >>> link_kind("NVLink 4"), link_kind("PCIe Gen4 x16"), link_kind("InfiniBand NDR")
    ('nvlink', 'pcie', 'network')
    """
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

    >>> collective("NVLink 3")["efficiency"], collective("PCIe Gen4 x16")["step_s"]
    ('0.69', '0.0000026')
    """
    table = data()["collectives"]
    return table[topology] if topology in table else table[link_kind(topology)]


def allreduce_latency_s(link: tuple[str, int] | None, ranks: int | None, steps: int | None = None) -> Fraction:
    """The small-message latency of one ring collective over ``ranks`` across ``link`` (:func:`collective`):
    ``base_s + steps × step_s``, NCCL's ring shape (``steps`` an all-reduce's ``2(n-1)``, ``ring_latency``'s), where
    the link was measured at two rank counts or more; else its one ``latency_s`` whatever the ranks.

    >>> [round(float(allreduce_latency_s(("PCIe Gen4 x16", 32 * 10 ** 9), n)) * 1e6, 3) for n in (2, 4, 8)]
    [10.0, 20.4, 41.2]
    """
    if link is None:
        return Fraction(0)
    c = collective(link[0])
    if "latency_s" in c:
        return _x(c["latency_s"])
    if ranks is None:
        raise ValueError(f"collectives: {link[0]}'s latency grows with the ranks; give ranks")
    return _x(c["base_s"]) + (2 * (ranks - 1) if steps is None else steps) * _x(c["step_s"])


def allreduce_s(calls: int, sent_bytes, link: tuple[str, int] | None, serve: dict | None = None,
                ranks: int | None = None) -> Fraction:
    """Seconds ``calls`` ring all-reduces over ``ranks`` take that together send ``sent_bytes`` per GPU over
    ``link`` (topology, bytes/s one way): each call's latency (:func:`allreduce_latency_s`) plus the bytes at the
    link's bus bandwidth (:func:`collective`). An inference engine ``serve`` whose own one-shot all-reduce replaces
    NCCL's over NVLink (``custom_allreduce_s``) pays that latency instead.

    >>> float(allreduce_s(2, 0, ("NVLink 4", 450 * 10 ** 9)))
    2e-05
    >>> # 20.4 us at four ranks + 24,576 B at 0.58 x 32 GB/s
    >>> round(float(allreduce_s(1, 24576, ("PCIe Gen4 x16", 32 * 10 ** 9), ranks=4)) * 1e6, 4)
    21.7241
    >>> from symllm.costs.figures import engine
    >>> float(allreduce_s(2, 0, ("NVLink 4", 450 * 10 ** 9), engine("trtllm")))
    9.6e-06
    """
    if link is None or (not calls and not sent_bytes):
        return Fraction(0)
    c = collective(link[0])
    if serve is not None and serve.get("custom_allreduce_s") and link_kind(link[0]) == "nvlink":
        latency = _x(serve["custom_allreduce_s"])
    else:
        latency = allreduce_latency_s(link, ranks) if calls else Fraction(0)
    return calls * latency + Fraction(sent_bytes) / (_x(c["efficiency"]) * link[1])


def gather_latency_s(link: tuple[str, int] | None, ranks: int) -> Fraction:
    """The latency of one all-gather or reduce-scatter over ``ranks`` across ``link``, NCCL's ring with ``n-1``
    steps where an all-reduce has ``2(n-1)``: a link measured at two rank counts or more its own ``base_s + (n-1)
    step_s`` (:func:`allreduce_latency_s`); a link measured at one, its all-reduce latency (:func:`collective`)
    scaled by NCCL's own ring model (``collectives.ring_latency``: ``base + steps × step``); the all-reduce's where
    the link's step is not read (Infinity Fabric), none without a link.

    >>> us = lambda s: round(float(s) * 1e6, 3)
    >>> us(gather_latency_s(("NVLink 4", 450 * 10 ** 9), 8)), us(gather_latency_s(("NVLink 4", 450 * 10 ** 9), 4))
    (7.2, 8.235)
    >>> us(gather_latency_s(("InfiniBand NDR", 50 * 10 ** 9), 2)) # 20 us x (6.6 + 2.7) / (6.6 + 5.4)
    15.5
    >>> us(gather_latency_s(("PCIe Gen4 x16", 32 * 10 ** 9), 8))   # 4.8 + 7 x 2.6 us
    23.0
    """
    if link is None:
        return Fraction(0)
    if "latency_s" not in collective(link[0]):
        return allreduce_latency_s(link, ranks, max(ranks - 1, 0))
    latency = _x(collective(link[0])["latency_s"])
    ring = data()["collectives"]["ring_latency"]
    step = ring["step_s"].get(link_kind(link[0]))
    if step is None or ranks < 2:
        return latency
    base, steps = _x(ring["base_s"]), (ranks - 1) * _x(step)
    return latency * (base + steps) / (base + 2 * steps)


def training_tp_s(calls: int, gathers: int, sent_bytes, link: tuple[str, int] | None, ranks: int) -> Fraction:
    """Seconds a training micro-batch's ``calls`` tensor-parallel collectives take over ``link``
    (:func:`training_calls`), ``sent_bytes`` per GPU at the link's bus bandwidth: ``gathers`` of them all-gathers or
    reduce-scatters over ``ranks``, each at :func:`gather_latency_s`, the rest all-reduces (:func:`allreduce_s`).

    >>> link = ("NVLink 4", 450 * 10 ** 9)
    >>> round(float(training_tp_s(10, 8, 0, link, 8)) * 1e6, 3)   # 2 x 10 us + 8 x 7.2 us
    77.6
    """
    return allreduce_s(calls - gathers, sent_bytes, link, ranks=ranks) + gathers * gather_latency_s(link, ranks)


def alltoall_s(calls: int, sent_bytes, link: tuple[str, int] | None, ranks: int | None = None) -> Fraction:
    """Seconds ``calls`` all-to-alls over ``ranks`` take that together send ``sent_bytes`` per GPU over ``link``
    (topology, bytes/s one way): each call's latency (the link's all-reduce latency, :func:`allreduce_latency_s`)
    plus the bytes at the
    fraction of the link a MoE dispatch reaches (``moe.alltoall``; the link's all-reduce efficiency where none is
    given).

    >>> float(alltoall_s(4, 765 * 10 ** 6, ("NVLink 4", 10 ** 12)))   # 4 x 10 us + 765 MB at 0.765 TB/s
    0.00104
    """
    if link is None or (not calls and not sent_bytes):
        return Fraction(0)
    c = collective(link[0])
    eff = data()["moe"]["alltoall"].get(link_kind(link[0]), c["efficiency"])
    latency = allreduce_latency_s(link, ranks) if calls else Fraction(0)
    return calls * latency + Fraction(sent_bytes) / (_x(eff) * link[1])
