"""Decisions: the largest batch and context that fit, the fewest GPUs, and the layouts of N GPUs ranked.

* :func:`max_batch` and :func:`max_context`: the inverse questions of one layout on one accelerator, in
  closed form where one exists (:mod:`symllm.costs.inverse`; what ``symllm count --gpu`` shows);
* :func:`fewest_gpus`: the smallest product of the ranks a layout family may grow (``tp``, ``pp``, ``dp``)
  whose per-GPU peak fits, the other ranks as the workload gives them;
* :func:`plan`: every layout of ``N`` GPUs (tensor-parallel ranks dividing the query heads, and the key/value
  heads or a multiple of them (one a rank, replicated),
  any number of pipeline stages up to the layers, split unevenly where it does not divide them (:data:`SPLITS`),
  the rest data-parallel; for a mixture of experts expert-parallel
  ranks dividing the experts and the data-parallel ranks (serving under vLLM's own expert parallelism, only those it
  runs: 1 or ``tp × dp``, :mod:`symllm.costs.expert_layout`; training under it, none: that layout serves only,
  and symllm's own, carved out of ``dp``, is not the engine's); for training ZeRO 0-3 and full recomputation
  or none; for serving every batch per replica up to ``concurrency``), each dropped with its reason where it does not
  fit, the rest ranked by the expected time where a row has one (:mod:`symllm.studies.ranks`: the best rows), the
  roofline model of :func:`symllm.costs.hardware.roofline` breaking ties and ranking the rest (training: step time at
  the global batch; serving: decode tokens/s), one row a layout: its other batches (training: micro-batch splits) that
  fit folded into its best, ``batches`` their least and most (:func:`symllm.studies.ranks.rank`). The closed forms are
  built once per ZeRO stage and recomputation and evaluated over every layout at once in compiled kernels
  (:mod:`symllm.studies.layout_forms`), with the
  per-stage forms :func:`symllm.costs.phases.stage_memory` and :func:`symllm.costs.hardware.stage_times`
  that ``workload()`` evaluates, so a row equals ``symllm.workload`` at its layout (``tests/test_plans.py``).

Conventions of :func:`plan`: training runs one optimizer step of the global batch; each data-parallel
rank trains its ``global_batch / dp`` sequences as ``accum`` micro-batches of ``batch`` sequences (every
divisor tried), one after another through the pipeline, each as ``workload()``'s step of one micro-batch
without its gradient reduction, which runs once per step (so ``step = accum × (micro-step) + the
data-parallel traffic``; memory is one micro-batch's, as ``workload()``'s: a pipeline schedule's micro-batches
in flight are not multiplied in); a layout whose ``dp`` does not divide the global batch is dropped.
Sequence parallelism is tried with every ``tp > 1``; ZeRO stages above 0 only with more than one
data-parallel rank (they shard nothing otherwise). Serving tries every batch 1, 2, 3, ... up to
``concurrency`` per replica, every replica (``dp``) serving its own; a replica (its ``tp``, ``pp`` and ``ep``)
keeps the batches its engine's KV cache holds, by the engine's own rule (:func:`symllm.costs.serving.capacity`,
once per layout: ``count --serve``'s sequences at it), and is held and stepped as the engine does
(:mod:`symllm.studies.served`): its peak the weights and cache of the batch's ``s + n`` tokens
beside the larger of a decode step's working set and the engine's profiled prefill, plus its non-torch memory;
its decode step one token a sequence at context ``s + n``; its best rows under load at the batch as concurrency
(``count --serve --concurrency``'s). One serving refuses (:attr:`Plan.unserved`) keeps the batches whose
inference peak fits (no engine overhead); every serving row's decode step is at that decode point.
Under LoRA (``lora_rank``) a training layout's peak is LoRA's (:mod:`symllm.costs.finetune`: one GPU's whole, not
divided over the layout), as ``workload()``'s.

>>> p = plan("llama3.1-8b", 8, "h100-sxm", training=True, global_batch=8, seq=4096)
>>> p.layouts, p.fit + sum(p.dropped.values()) == p.layouts
(232, True)
>>> best = p.rows[0]; (best["tp"], best["pp"], best["dp"], best["zero"], best["recompute"])
(1, 1, 8, 2, False)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from symllm.arch.algebra import substitute
from symllm.arch import resolved
from symllm.arch import symbols as S
from symllm.costs import accelerators, checks, expert_layout, hardware, inverse, numbered, parallel, tp_overlap
from symllm.costs.figures import engine_for
from symllm.costs.collectives import column_parallel
from symllm.costs.schedules import bubble, handoffs
from symllm.costs.utilisation import of_peak, step_flops
from symllm.costs import phases as costs
from symllm.costs.replication import kv_heads_split
from symllm.costs.workloads import COMPONENT_STACKS, Workload, with_stated
from symllm.errors import SymllmError
from symllm.numbers.kernels import evaluate
from symllm.studies import ranks, served as served_by
from symllm.studies.layout_forms import closed_forms, decode_step, floats, largest, vector
from symllm.validate import choice, positive_int

__all__ = ["max_batch", "max_context", "fewest_gpus", "plan", "Plan", "REASONS"]

#: why a layout is dropped: the reason's key -> its short text (``{...}`` filled per plan)
REASONS = {"training_peak": "training peak > {capacity} per GPU",
           "inference_peak": "inference peak > {capacity} per GPU",
           "kv_cache": "more sequences than {engine}'s KV cache holds (count --serve)",
           "global_batch": "dp does not divide the global batch of {global_batch}"}


def _time(config, work: Workload | None, options: dict) -> dict:
    work = Workload.of(work, **options)
    if accelerators.of(work) is None:
        raise SymllmError("gpu: an inverse question needs an accelerator (gpu=NAME or gpu_memory, ...)")
    return costs.workload(config, work)["time"]


def max_batch(config, work: Workload | None = None, *, training: bool = False, **options) -> int:
    """The largest batch whose per-GPU peak (the inference peak, or with ``training`` the training peak)
    fits the workload's accelerator under its layout; 0 when not one sequence does. Closed form where one
    exists, checked exactly (:mod:`symllm.costs.inverse`).

    >>> (max_batch("llama3.1-8b", gpu="h100-sxm", seq=8192),
    ...  max_batch("llama3.1-8b", gpu="h100-sxm", tp=4, training=True))
    (36, 13)
    """
    return _time(config, work, options)["training_max_batch" if training else "max_batch"]


def max_context(config, work: Workload | None = None, *, training: bool = False, **options) -> int:
    """The longest context whose per-GPU peak fits at the workload's batch: for inference the largest
    ``seq + gen`` (the prompt grows, the ``gen`` generated tokens held), for ``training`` the largest
    ``seq``; 0 when none does.

    >>> max_context("llama3.1-8b", gpu="h100-sxm"), max_context("llama3.1-8b", gpu="h100-sxm", gen=1000, batch=8)
    (299131, 37830)
    """
    return _time(config, work, options)["training_max_seq" if training else "max_context"]


# --------------------------------------------------------------------------- fewest GPUs

def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _stage_choices(spc, ranks: int | None = None) -> list[int]:
    """Pipeline stages that run: any number up to the blocks ``L`` (each stage holds one at least; where
    ``N_p`` does not divide ``L`` the split is uneven, ``⌈L/N_p⌉`` blocks on the first stage and ``⌊L/N_p⌋``
    on the last: :func:`symllm.costs.parallel.stages`), dividing ``ranks`` (the GPUs a tensor group leaves)
    when given.

    >>> _stage_choices(resolved.spec("llama3.2-1b"), 12)
    [1, 2, 3, 4, 6, 12]
    """
    top = spc.n_layers if ranks is None else min(spc.n_layers, ranks)
    return [p for p in range(1, top + 1) if ranks is None or ranks % p == 0]


#: what :func:`plan` says of the pipeline splits it considered
SPLITS = ("every number of pipeline stages up to the {L} blocks that divides the GPUs a tensor group leaves; "
          "where it does not divide {L}, the first stage holds ceil(L/pp) blocks and the embedding, the last "
          "floor(L/pp) and the head (symllm.costs.parallel.stages)")


def _tp_choices(spc, work: Workload | None = None) -> list[int]:
    """Tensor-parallel ranks that split whole heads: dividing the query heads, and dividing the key/value
    heads or a multiple of them (one key/value head a rank, replicated: :func:`checks.splits_heads`); with
    tensor-split routed experts (the workload's ``expert_tp``), dividing each expert's width too, and the whole
    units its engine's layout splits a part into (:mod:`symllm.costs.checks`): every ``tp`` count allows.

    >>> _tp_choices(resolved.spec("llama3.1-8b"))  # 32 query heads, 8 KV heads
    [1, 2, 4, 8, 16, 32]
    >>> _tp_choices(resolved.spec("deepseek-v4-flash-base"), Workload(engine="vllm"))  # 64 heads, 8 output groups
    [1, 2, 4, 8]
    """
    fields = {**checks.model_fields(spc), **checks.workload_fields(work or Workload()), "pp": 1, "ep": 1}
    return [t for t in _divisors(spc.n_heads) if checks.splits_heads(t, spc.n_heads, spc.n_kv_heads)
            and not checks.failures({**fields, "tp": t})]


def fewest_gpus(config, work: Workload | None = None, *, ranks=("tp",), training: bool = True,
                limit: int = 1 << 16, **options) -> dict | None:
    """The layout with the fewest GPUs whose per-GPU training peak (or inference peak: ``training=False``)
    fits the workload's accelerator, growing only ``ranks`` (any of ``tp``, ``pp``, ``dp``: tensor ranks
    splitting whole heads (:func:`_tp_choices`), any number of pipeline stages up to the layers (:data:`SPLITS`),
    data-parallel ranks that ZeRO shards over); the other ranks stay the workload's. ``{"tp", "pp", "dp", "gpus",
    "peak"}``, the smallest ``tp·pp·dp`` (ties: fewer tensor ranks, then fewer stages), or None when none of at most
    ``limit`` GPUs fits. An exact search: the per-GPU peak has ceilings in the ranks (no closed form), and
    falls as ``dp`` grows (binary search over it).

    >>> fewest_gpus("llama3.1-70b", gpu="h100-sxm", ranks=("tp", "pp"), seq=4096)
    {'tp': 2, 'pp': 8, 'dp': 1, 'gpus': 16, 'peak': 84486864896}
    >>> fewest_gpus("llama3.1-70b", gpu="h100-sxm", ranks=("dp",), zero_stage=3, recompute=True, seq=4096)["dp"]
    15
    """
    spc = resolved.spec(config)
    work = with_stated(Workload.of(work, **options), spc.config)  # as plan's and count's (hf: the family's plan)
    g = accelerators.of(work)
    if g is None:
        raise SymllmError("gpu: fewest_gpus needs an accelerator (gpu=NAME or gpu_memory, ...)")
    ranks = (ranks,) if isinstance(ranks, str) else tuple(ranks)
    for r in ranks:
        choice("ranks", r, inverse.LAYOUT_RANKS)
    positive_int("limit", limit)
    kind = "training_peak" if training else "inference_peak"
    mdl = costs.model_of(spc, work)
    vals = numbered.values(spc, work)  # β_w of a --weight-format, β_kv of a --kv-format: the one place

    def peak(tp: int, pp: int, dp: int):
        at = work.replace(tp=tp, pp=pp, dp=dp)
        checks.check(spc, at)
        return evaluate(costs.quantities(mdl, at)["memory_per_gpu"][kind],  # (KV heads replicated: kv_heads_split)
                        {**vals, S.N_t: tp, S.N_p: pp, S.N_d: dp, S.n_kv: kv_heads_split(vals[S.n_kv], tp)})

    tps = _tp_choices(spc, work) if "tp" in ranks else [work.tp]
    pps = _stage_choices(spc) if "pp" in ranks else [work.pp]
    best = None
    for tp in tps:
        for pp in pps:
            room = limit // (tp * pp)
            if room < 1:
                continue
            if "dp" not in ranks:
                dps = [work.dp] if work.dp <= room and peak(tp, pp, work.dp) <= g.memory else []
            else:  # the peak falls as dp grows: the smallest multiple of ep that fits, by bisection
                step = work.ep
                top = room // step
                if top < 1 or peak(tp, pp, top * step) > g.memory:
                    dps = []
                else:
                    lo, hi = 0, top  # not fits(lo * step) (or lo = 0), fits(hi * step)
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        lo, hi = (lo, mid) if peak(tp, pp, mid * step) <= g.memory else (mid, hi)
                    dps = [hi * step]
            for dp in dps:
                key = (tp * pp * dp, tp, pp)
                if best is None or key < best[0]:
                    best = (key, {"tp": tp, "pp": pp, "dp": dp, "gpus": tp * pp * dp,
                                  "peak": peak(tp, pp, dp)})
    return None if best is None else best[1]


# --------------------------------------------------------------------------- plan

@dataclass
class Plan:
    """The layouts of :func:`plan`: ``rows`` (those that fit, best first, one a layout: its best batch or micro-batch
    split, a dict of the layout and its figures, ``batches`` the least and most of its layout's that fit),
    ``dropped`` (reason -> how many layouts), ``drops`` (each dropped layout with its reason)."""

    model: str
    gpu: str
    gpus: int
    training: bool
    #: layouts enumerated, each with its batch (training: its micro-batches)
    layouts: int
    rows: list = field(default_factory=list)
    #: the enumerated layouts that fit (``rows`` holds one a layout, its other batches folded)
    fit: int = 0
    dropped: dict = field(default_factory=dict)
    drops: list = field(default_factory=list)
    #: the workload every layout shares (its batch is the global batch for training)
    workload: dict = field(default_factory=dict)
    #: the pipeline splits considered (:data:`SPLITS`)
    splits: str = ""
    #: the tensor-parallel layout every row is in, where a part declares an engine's split: the training engine's for
    #: a training plan, the inference engine's for a serving one (:func:`symllm.costs.phases.layout_of`); None: none
    tp_layout: str | None = None
    #: serving: the most sequences a replica holds, by its layout (:func:`symllm.studies.served.replica`: "tp 2 ep 4"),
    #: as :func:`symllm.costs.serving.capacity` gives them (count --serve); empty for training
    sequences: dict = field(default_factory=dict)
    #: serving: the replicas count --serve refuses (their one-line reason), kept by the inference peak instead
    unserved: dict = field(default_factory=dict)
    #: serving: the engine's options given (count --serve's, :func:`symllm.costs.serving.capacity`'s keywords)
    serve: dict = field(default_factory=dict)
    #: training under a TP overlap: what of a block it covers in this model (:func:`symllm.costs.tp_overlap.scope`),
    #: as a timed row's expected time says it; None: no such row
    tp_overlap: str | None = None

    @property
    def engine(self) -> str:
        """The engine whose conventions the rows' expected times follow: ``--engine`` where it runs the plan's kind
        of work, else that kind's default (:func:`symllm.costs.figures.engine_for`; :func:`plan` refuses a
        training engine for serving, as ``count --serve`` does).

        >>> Plan("m", "h100-sxm", 8, False, 0, workload={"engine": "megatron"}).engine
        'vllm'
        >>> Plan("m", "h100-sxm", 8, True, 0, workload={"engine": "mlc"}).engine
        'megatron'
        """
        from symllm.costs.figures import engine_for
        return engine_for(self.workload.get("engine"), "training" if self.training else "inference")["name"]

    @property
    def assumes(self) -> str:
        """What a layout's fit assumes: the per-GPU training or inference peak's clause."""
        return hardware.ASSUMES["training_fits" if self.training else "fits"]

    @property
    def training_step(self) -> str | None:
        """What a LoRA plan's training step counts (:data:`symllm.costs.hardware.LORA_STEP`, count's
        ``time.assumes.training_step``); None for any other plan.

        >>> Plan("m", "h100-sxm", 8, True, 0, workload={"lora_rank": 16}).training_step.split(" (")[0]
        "full fine-tuning's FLOPs"
        """
        return hardware.LORA_STEP if self.training and self.workload.get("lora_rank") else None

    def to_dict(self, top: int | None = None) -> dict:
        """JSON-ready: the first ``top`` rows (all by default), the drop counts, what the fit verdict
        assumes (:data:`symllm.costs.hardware.ASSUMES`)."""
        return {"model": self.model, "gpu": self.gpu, "gpus": self.gpus, "training": self.training,
                "layouts": self.layouts, "fit": self.fit, "dropped": dict(self.dropped),
                "assumes": self.assumes, "splits": self.splits, "workload": self.workload, "engine": self.engine,
                **({"tp_layout": self.tp_layout} if self.tp_layout else {}),
                **({"sequences": self.sequences} if self.sequences else {}),
                **({"unserved": self.unserved} if self.unserved else {}),
                **({"serve": self.serve} if self.serve else {}),
                **({"training_step": self.training_step} if self.training_step else {}),
                "rows": self.rows[:top] if top else list(self.rows)}


#: a layout's columns, in :func:`plan`'s rows
_KEYS = ("tp", "pp", "dp", "ep", "sp", "zero", "recompute", "batch", "accum")


def _layouts(spc, gpus: int, training: bool, concurrency: int, global_batch: int | None,
             work: Workload) -> dict[str, np.ndarray]:
    """Every layout of ``gpus`` GPUs (module docstring) whose ``tp`` ``work`` allows (:func:`_tp_choices`), as
    columns (``batch`` 0: ``dp`` does not divide the global batch)."""
    experts = spc.n_experts
    # a serving engine's own expert parallelism (vLLM's tp x dp: symllm.costs.expert_layout): only what it runs
    whole = not training and expert_layout.declared(engine_for(work.engine, "inference")["name"])
    spans = whole and expert_layout.declared(work.engine)  # tp x dp at tp > 1 where the engine is named (count's)
    # training under such an engine: none (its own layout serves only, symllm's is not the engine's)
    serves_only = training and expert_layout.declared(work.engine) is not None
    # an engine that spreads each expert over tp x dp without expert parallelism (vLLM): only where the ranks divide
    # its width (FusedMoE asserts it; symllm.costs.checks refuses the layout in count)
    width = spc.config.hidden_dim if experts and not training and "expert_tp" in work.derived and \
        expert_layout.without_ep(engine_for(work.engine, "inference")["name"]) == "tp_x_dp" else None
    rows = []  # one tuple a layout, in _KEYS' order
    batches = () if training else range(1, concurrency + 1)  # every batch: the largest that fits is a row, exactly
    for tp in _tp_choices(spc, work):
        if gpus % tp:
            continue
        for pp in _stage_choices(spc, gpus // tp):
            dp = gpus // (tp * pp)
            eps = [e for e in (sorted({1, tp * dp}) if spans else _divisors(dp)) if experts % e == 0
                   and (not whole or e in (1, tp * dp)) and not (e == 1 < dp and width and width % (tp * dp))
                   ] if experts and not serves_only else [1]
            for ep in eps:
                if not training:
                    rows += [(tp, pp, dp, ep, 0, 0, 0, b, 1) for b in batches]
                    continue
                per_rank = global_batch // dp if global_batch % dp == 0 else 0
                splits = [(m, per_rank // m) for m in _divisors(per_rank)] if per_rank else [(0, 0)]
                rows += [(tp, pp, dp, ep, seq_par, zero, rec, m, a) for seq_par in ((0, 1) if tp > 1 else (0,))
                         for zero in (range(4) if dp > 1 else (0,)) for rec in (0, 1) for m, a in splits]
    table = np.asarray(rows, dtype=np.int64).reshape(-1, len(_KEYS)).T.copy()  # (each column contiguous)
    return {k: table[i].astype(bool) if k in ("sp", "recompute") else table[i] for i, k in enumerate(_KEYS)}


def plan(config, gpus: int, gpu: str | None = None, work: Workload | None = None, *, training: bool = False,
         global_batch: int | None = None, concurrency: int | None = None, serve: dict | None = None, **options) -> Plan:
    """Every layout of ``gpus`` accelerators called ``gpu`` (or the workload's ``gpu``), dropped with its
    reason where its per-GPU peak does not fit, the rest ranked (module docstring): for ``training`` by step
    time of ``global_batch`` sequences (default: one per GPU) of the workload's ``seq``, for serving by
    decode tokens/s at the workload's context, by the expected figure for the best rows
    (:mod:`symllm.studies.ranks`). ``serve``: serving's options (:func:`symllm.costs.serving.capacity`'s keywords,
    ``count --serve``'s, refused as it refuses them, a training engine too), passed to each replica's capacity and
    its time under load. ``options`` are :class:`Workload` options shared by every layout (``seq``, ``gen``,
    ``dtype``, ``weight_format``, ``kv_format``, ``stack``, ``network``, ``tokens``, ``price``, ...); a weight
    format's bytes are spread evenly over each GPU's parameters, as ``workload()``'s.

    >>> p = plan("llama3.1-70b", 16, "h100-sxm", seq=4096)
    >>> r = p.rows[0]; (r["tp"], r["pp"], r["dp"], r["batch"]), p.sequences["tp 8"], p.sequences["tp 4 pp 2"]
    ((8, 1, 2, 256), 309, 305)
    >>> sorted(p.dropped.items())
    [("more sequences than vllm's KV cache holds (count --serve)", 1234)]
    """
    spc = resolved.spec(config)
    positive_int("gpus", gpus)
    if gpu is not None:
        options["gpu"] = gpu
    for k in ("tp", "pp", "dp", "ep", "sp", "zero_stage", "recompute", "batch"):
        if options.get(k) is not None:
            raise SymllmError(f"{k}: plan enumerates the layouts itself; give the workload without it")
    work = with_stated(Workload.of(work, **options), spc.config)  # the config's quantization_config (weights, KV)
    if training and "expert_tp" in work.derived:  # an engine's experts over tp x dp serve only: trained as symllm's
        work = work.replace(expert_tp="split")
    checks.check(spc, work)
    checks.warn_past_window(spc, work.seq + work.gen)
    g = accelerators.of(work)
    if g is None:
        raise SymllmError("gpu: plan needs an accelerator (--gpus N×GPU)")
    if work.stack not in COMPONENT_STACKS:
        raise SymllmError(f"stack: plan lays models out with the fused or the eager stack, not {work.stack}")
    if work.recompute == "op":  # its layouts enumerate none and full themselves
        raise SymllmError("recompute: plan enumerates no and full recomputation, not op checkpointing yet")
    if training:
        global_batch = gpus if global_batch is None else positive_int("global_batch", global_batch)
        if concurrency is not None:  # global_batch's twin
            raise SymllmError("concurrency: applies to serving, not --train (training takes --global-batch)")
    elif global_batch is not None:
        raise SymllmError("global_batch: a training option (--train); serving tries batches up to --concurrency")
    else:
        concurrency = 256 if concurrency is None else positive_int("concurrency", concurrency)
    serve = dict(serve or {})
    if training and serve:
        raise SymllmError(f"{next(iter(serve))}: applies to serving (the engine's KV cache), not --train")
    if not training:  # count --serve's refusals of the engine and the options (a training engine: one answer)
        from symllm.costs import serving
        serving.check_options(spc.config, work, g, **serve)
    cols = _layouts(spc, gpus, training, concurrency, global_batch, work)
    n, laid_as = len(cols["tp"]), "training" if training else "inference"
    out = Plan(spc.name, g.name, gpus, training, n,
               workload={**work.to_dict(), **({"global_batch": global_batch} if training else {  # its decode step's
                   "context": served_by.decode_point(work).context})},
               splits=SPLITS.format(L=spc.n_layers),
               tp_layout=costs.layout_of(spc, work, laid_as), serve=serve)
    if n == 0:
        return out
    mdl = costs.model_of(spc, work, laid_as)  # as the engine of the plan's kind lays it out
    kept_points = {}  # each workload point the engine's figures read, evaluated once (serving.capacity, traffic)

    def workload_at(point: Workload) -> dict:
        if point not in kept_points:  # (training: only the ranking reads them, no largest batch searched)
            kept_points[point] = costs.workload(spc, point, largest=not training)
        return kept_points[point]

    base = {sym.name: v for sym, v in numbered.values(spc, work).items()}  # with a weight format's β_w
    args = {**base, "N_t": cols["tp"], "N_p": cols["pp"], "N_d": cols["dp"], "N_e": cols["ep"],
            "b": np.maximum(cols["batch"], 1)}
    whole = args  # the model's own key/value heads (its model FLOPs); one GPU's forms: one head a rank where
    args = {**args, "n_kv": kv_heads_split(base["n_kv"], cols["tp"])}  # tp is a multiple of them, replicated
    timed = args if training else {**{sym.name: v for sym, v in numbered.values(  # a serving row's step: one token
        spc, served_by.decode_point(work)).items()}, **{k: args[k] for k in ("N_t", "N_p", "N_d", "N_e", "b", "n_kv")}}
    fit_peak = np.zeros(n, dtype=object)
    seconds, low = np.zeros(n), np.zeros(n)  # the bound, and (training) a floor of the expected step (ranks.floors)
    etas = {}  # (the experts' GEMM efficiencies the floors read, by their rows)
    links = _links(cols, work, g)
    kind = "training_peak" if training else "inference_peak"
    # each row's routed experts under tp as its engine lays them out (serving: count --serve's engine, whose KV cache
    # :func:`symllm.costs.serving.capacity` sizes from them)
    experts = _experts(work if training or work.engine else work.replace(engine=out.engine), cols, spc.config)
    groups = sorted(set(zip(cols["zero"].tolist(), cols["recompute"].tolist(), cols["sp"].tolist(), experts.tolist())))
    gathers = tp_overlap.fp8_gathers(work)  # an sp group's float8 all-gathers, as count's
    for zero, rec, seq_par, laid in groups:
        at = (cols["zero"] == zero) & (cols["recompute"] == rec) & (cols["sp"] == seq_par) & (experts == laid)
        sub = {k: (v[at] if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        m = int(np.count_nonzero(at))
        float8 = gathers if seq_par else ()
        forms = closed_forms(mdl, kind, zero, rec, seq_par, work.stack, training, work.optimizer, laid,
                       column_parallel(work.engine), float8)
        if training and work.lora_rank is not None:  # LoRA's peak, as workload()'s (one GPU's whole)
            lora = costs.quantities(mdl, work.replace(zero_stage=zero, recompute=rec))["memory"]["training_peak"]
            forms = {**forms, "peaks": (lora,)}
        fit_peak[at] = largest(forms["peaks"], sub, m)
        bw = {k: v[at] for k, v in links.items()}
        pp = sub["N_p"].astype(np.float64)
        sub = {k: (v[at] if isinstance(v, np.ndarray) else v) for k, v in timed.items()}  # (training: the same)
        handoff = floats(vector(forms["handoff"], sub, m)) / bw["pp"]  # one micro-batch's, one boundary
        if training:
            worst = np.max([floats(vector(e, sub, m)) for e in forms["flops"]], axis=0)
            sent = {k: floats(vector(e, sub, m)) for k, e in forms["comm"].items()}
            # as count's bound: the last of m micro-batches leaves the last stage after m + N_p - 1 stage-times
            # (interleaved over v chunks a stage, m + (N_p - 1)/v: schedules.bubble)
            stage = worst / base["P"] + sent["tp"] / bw["tp"] + sent["ep"] / bw["ep"]
            runs, where = np.unique(np.stack([sub["N_p"], cols["accum"][at]], axis=1), axis=0, return_inverse=True)
            times = np.array([float(a_ * (1 + bubble(p_, a_, work.schedule, work.virtual_stages))) if a_ else 0.0
                              for p_, a_ in runs.tolist()])[where.reshape(-1)]  # (accum 0: dp does not divide, dropped)
            # each micro-batch's hand-offs (schedules.handoffs' count of one-way sends, half the form's bytes each)
            sends = np.array([handoffs(p_, a_, work.schedule) for p_, a_ in runs.tolist()])[where.reshape(-1)]
            seconds[at] = times * stage + handoff * sends / 2 + sent["dp"] / bw["dp"]
            terms = [[floats(vector(e, sub, m)) for e in st] for st in forms["floors"]]  # (ranks.floors')
            low[at] = ranks.floors(work.replace(recompute=rec), times, worst, terms, sub["b"] * work.seq, sub["N_e"],
                                   base, etas)
        else:
            seconds[at] = pp * decode_step(forms, sub, m, base, bw) + handoff * (pp - 1)
    served = held = None
    if not training:  # a replica of tensor ranks its engine serves: as the engine holds and steps it
        served, held = _engine_rows(spc, work, cols, out, mdl, args, timed, workload_at, fit_peak, serve, experts)
    capacity = g.memory
    peaks = fit_peak.tolist()
    fits = np.asarray([p <= capacity for p in peaks], dtype=bool)
    reason = np.full(n, "", dtype=object)
    text = {k: v.format(capacity=f"{capacity / 2 ** 30:g} GiB", global_batch=global_batch, engine=out.engine)
            for k, v in REASONS.items()}
    reason[~fits] = text[kind]
    if served is not None:  # a replica its engine serves: the batches its KV cache holds (count --serve's)
        reason[served] = np.where(cols["batch"][served] <= held[served], "", text["kv_cache"])
        reason[served & ~fits & (reason == "")] = text[kind]  # (never: the engine's peak is within its card)
    if training:
        reason[cols["batch"] == 0] = text["global_batch"]
    keep = reason == ""
    names = [k for k in _KEYS if training or k not in ("zero", "recompute", "sp", "accum")]
    layouts = list(zip(*(cols[k].tolist() for k in names)))
    for i in np.flatnonzero(~keep).tolist():
        out.drops.append({**dict(zip(names, layouts[i])), "reason": reason[i]})
        out.dropped[reason[i]] = out.dropped.get(reason[i], 0) + 1
    kept = np.flatnonzero(keep)
    secs = seconds[kept]
    if training:
        # model FLOPs (MFU's numerator, utilisation.step_flops: the whole model's, causal pairs), per micro-batch
        step = substitute(step_flops(spc), dict(mdl.definitions))
        model_flops = cols["dp"] * cols["accum"] * floats(vector(step, whole, n))
        tokens = global_batch * work.seq
        figures = {"step_s": secs, "tokens_per_s": tokens / secs,
                   "mfu": of_peak(model_flops[kept], secs, gpus, base["P"])}
        if work.tokens is not None:
            figures["training_s"] = work.tokens / tokens * secs
            figures["gpu_hours"] = figures["training_s"] * gpus / 3600
            if work.price is not None:
                figures["cost"] = figures["gpu_hours"] * work.price
    else:
        figures = {"decode_token_s": secs, "tokens_per_s": cols["dp"][kept] * cols["batch"][kept] / secs}
    figure_names = list(figures)
    rows = [{**dict(zip(names, layouts[i])), "gpus": gpus, "peak": _int(peaks[i]), **dict(zip(figure_names, f))}
            for i, f in zip(kept.tolist(), zip(*(v.tolist() for v in figures.values())))]
    floor = dict(zip(map(id, rows), low[kept].tolist()))  # each row's floor, by the row (sorted next)
    # a row whose experts its engine spreads over tp x dp (no engine named: the serving engine's, as its KV cache and
    # peak read them) is timed as that engine lays it out, by the row as its floor
    spread = ({id(r) for r, e in zip(rows, experts[kept].tolist()) if e == "tp_x_dp"}
              if not training and not work.engine else set())
    out.fit, key, batches = len(rows), {}, {}  # each row's layout; a layout's batches (training: micro-batches)
    for r in rows:
        key[id(r)] = at = ranks.layout_of(r, training)
        batches.setdefault(at, []).append(r["batch"])
    rows.sort(key=(lambda r: (r["step_s"], r["peak"], r["tp"] * r["pp"], r["zero"], r["recompute"])) if training
              else (lambda r: (-r["tokens_per_s"], r["tp"] * r["pp"], r["batch"])))
    decoded = work if training else served_by.decode_point(work)  # by the expected time where it exists (ranks)
    served_as = decoded.replace(engine=out.engine) if spread else decoded
    if not training:  # a replica's best batch, the largest it holds (its tokens/s rise with it: ranks.LAYOUT)
        rows = ranks.rank(rows, training, None, best=0, layout=lambda r: key[id(r)])
    rows = ranks.rank(rows, training, lambda r: ranks.expected(
        spc, served_as if id(r) in spread else decoded, r, training, workload_at),
        floor=lambda r: floor[id(r)], layout=lambda r: key[id(r)])
    for r in rows:
        r["batches"] = [min(batches[key[id(r)]]), max(batches[key[id(r)]])]
        said = r.get("expected", {}).pop("tp_overlap", None)  # the plan's, not a row's number
        out.tp_overlap = out.tp_overlap or said
    for r in rows[:ranks.EXPECTED_ROWS]:  # under load at the batch, count --serve --concurrency's
        at = ranks.layout_of(r, False)
        load = served_by.under_load(spc.config, work, at, r["batch"], out.engine, workload_at, serve) if (
            not training and served_by.replica(*at) in out.sequences and work.gen) else None
        if load:
            r["load"] = load
    out.rows = rows
    return out


def _engine_rows(spc, work: Workload, cols: dict, out: Plan, mdl, args: dict, timed: dict, evaluate,
                 fit_peak: np.ndarray, serve: dict, experts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The serving rows of a replica its engine serves, as the engine holds and steps them:
    :func:`symllm.costs.serving.capacity` once per replica's layout (its most sequences in :attr:`Plan.sequences`;
    a layout it refuses in :attr:`Plan.unserved`, its rows left to the inference peak),
    each row's per-GPU peak set (in place) to the engine's (:func:`symllm.studies.served.engine_peak`: the weights
    and cache of the batch's ``s + n`` tokens, each sequence's state at the size its capacity counts (a hybrid's
    ``state_bytes_per_sequence``: vLLM's own state layout, not transformers'), a decode step's working set at the
    decode point or the profiled prefill, non-torch memory; ``timed``: the layouts' values at the decode point,
    :func:`symllm.studies.served.decode_point`). Returns the rows' mask and the most sequences each row's replica
    holds. ``serve``: serving's options (count --serve's); ``experts``: each row's routed experts (:func:`_experts`)."""
    n = len(cols["tp"])
    served, held = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64)
    beside = np.zeros(n, dtype=object), np.zeros(n, dtype=object)  # activation peak, non-torch memory
    state = np.full(n, None, dtype=object)  # a sequence's state cache as the engine holds it (capacity's), if any
    layouts = np.stack([cols[k] for k in ranks.LAYOUT[False]], axis=1)
    caps, refused = served_by.capacities(spc.config, work, sorted(set(map(tuple, layouts.tolist()))), out.engine,
                                         evaluate, serve)  # a layout refused: the inference peak's rule
    out.unserved = {served_by.replica(*k): why for k, why in refused.items()}
    from symllm.costs.serving import most_sequences
    for layout, cap in caps.items():
        at = (layouts == layout).all(axis=1)
        out.sequences[served_by.replica(*layout)] = held[at] = most_sequences(cap)
        served |= at
        beside[0][at], beside[1][at] = cap["activation_peak"], cap["non_torch"]
        state[at] = cap.get("state_bytes_per_sequence")
    for laid in sorted(set(experts[served].tolist())):  # each expert layout's own forms
        at = served & (experts == laid)
        m = int(np.count_nonzero(at))
        sub = {k: (v[at] if isinstance(v, np.ndarray) else v) for k, v in timed.items()}
        forms = closed_forms(mdl, "inference_peak", 0, False, False, work.stack, False, work.optimizer, laid,
                             column_parallel(work.engine), ())  # (the same cache key as the loop's call)
        held_at = {k: (v[at] if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        whole = largest(forms["held"], held_at, m)
        own = np.array([x is not None for x in state[at].tolist()], dtype=bool)  # the engine's own state layout
        if own.any():  # its weights and KV cache, and each sequence's state as its capacity counts it
            bare = largest(tuple(h - st for h, st in zip(forms["held"], forms["states"])), held_at, m)
            whole = np.where(own, bare + held_at["b"] * np.where(own, state[at], 0), whole)
        working = (largest(forms["peaks"], sub, m) - largest(forms["held"], sub, m)).tolist()  # one token a sequence
        fit_peak[at] = [served_by.engine_peak(*x) for x in zip(whole.tolist(), working, beside[0][at].tolist(),
                                                                beside[1][at].tolist())]
    return served, held


def _experts(work: Workload, cols: dict, config) -> np.ndarray:
    """Each row's routed experts under tensor parallelism (``Workload.expert_tp``) at its ``tp``, ``dp`` and ``ep``:
    the workload's, or its engine's own expert-parallel layout (:func:`symllm.costs.expert_layout.check`: vLLM's
    ``ep = tp × dp`` holds them whole), one answer with ``workload()``'s at that layout (a model without experts
    ``split``: :func:`symllm.costs.expert_layout.stated`)."""
    keys = list(zip(cols["tp"].tolist(), cols["dp"].tolist(), cols["ep"].tolist()))
    laid = {k: expert_layout.stated(work.replace(tp=k[0], dp=k[1], ep=k[2]), config).expert_tp for k in set(keys)}
    return np.array([laid[k] for k in keys], dtype=object)


def _links(cols: dict, work: Workload, g) -> dict[str, np.ndarray]:
    """Each layout's link bandwidth per parallel group (:func:`symllm.costs.hardware.links`), as arrays."""
    keys, where = np.unique(np.stack([cols[k] for k in hardware.LINK_RANKS], axis=1), axis=0, return_inverse=True)
    per_key = [hardware.links(work, g, **dict(zip(hardware.LINK_RANKS, key))) for key in keys.tolist()]
    return {k: np.asarray([links[k][1] for links in per_key], dtype=np.float64)[where.reshape(-1)]
            for k in parallel.COMM_KINDS}


def _int(value):
    return int(value) if not hasattr(value, "denominator") or value.denominator == 1 else value
