"""Accelerators by name, and roofline time on them: ``max(FLOPs / peak, bytes moved / bandwidth)``, a bound
the hardware cannot beat.

**The accelerators** (their catalogue, ``GPUS``, ``NETWORKS``, and which peak a dtype's matmuls run at) are
:mod:`symllm.costs.accelerators`': import them from there.

**Bytes moved** (what a phase must read or write, every intermediate on chip) are
:mod:`symllm.costs.roofline_bytes`': import them from there.

**FLOPs**: the phase's matmul FLOPs (:func:`symllm.costs.phases.flops`, the workload's attention convention;
``attention="causal"`` is the tighter bound); element-wise work runs beside the tensor cores and is not
counted.

"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from symllm._lazy import module
from symllm.arch.dtypes import BF16, FP32
from symllm.costs import accelerators, tp_overlap
from symllm.costs.roofline_bytes import bytes_moved, stage_bytes, tied
# a time: a float, exact past a float's range
from symllm.costs.efficiency import seconds as _seconds
from symllm.costs.schedules import bubble, handoffs
from symllm.costs.utilisation import of_peak, step_flops
from symllm.errors import SymllmError

TYPE_CHECKING = False  # typing's own constant costs a count the import of typing
if TYPE_CHECKING:
    import sympy as sp

    from symllm.arch import algebra, symbols as S
else:  # the closed forms' SymPy, imported on first use: a workload (``symllm count``) reads the table without it
    sp, S, algebra = module("sympy"), module("symllm.arch.symbols"), module("symllm.arch.algebra")

__all__ = ["ridge", "decode_batch", "decode_batch_exists", "stage_times", "roofline",
           "roofline_forms", "roofline_numbers", "TIMED_BY", "UNTIMED", "ASSUMES", "blank_unfit"]


def ridge() -> sp.Expr:
    """The ridge point, FLOP per byte: the arithmetic intensity above which a kernel is compute-bound.

    >>> ridge(), ridge().subs(accelerators.values("h100-sxm"))
    (P/B_mem, 19788/67)
    """
    return S.P / S.B_mem


@lru_cache(maxsize=256)
def decode_batch(flops: sp.Expr, moved: sp.Expr) -> sp.Expr:
    """The batch ``b*`` at which a decode step turns compute-bound: FLOPs ``b·f`` (proportional to the
    batch) and bytes ``W + b·k`` (weights, then per sequence) meet, ``b·f / P = (W + b·k) / B_mem``:
    ``b* = W·P / (f·B_mem − k·P)``. Where ``f·B_mem ≤ k·P`` (long contexts: each sequence's cache
    costs more time to read than its FLOPs take) no batch is compute-bound.

    >>> decode_batch(2 * S.N * S.b, S.N * S.beta_w + S.b * S.beta_kv)
    N*P*beta_w/(2*B_mem*N - P*beta_kv)
    """
    per_sequence = sp.expand(flops / S.b)
    if S.b in per_sequence.free_symbols:
        raise SymllmError("flops: a decode step's FLOPs must be proportional to the batch")
    expanded = sp.expand(moved)
    fixed, slope = expanded.subs(S.b, 0), sp.expand(expanded.coeff(S.b))
    if sp.expand(fixed + slope * S.b - expanded) != 0:
        raise SymllmError("bytes: a decode step's bytes must be affine in the batch")
    return fixed * S.P / (per_sequence * S.B_mem - slope * S.P)


def decode_batch_exists(expr: sp.Expr, vals: dict) -> bool:
    """Whether the :func:`decode_batch` closed form ``expr`` has a crossing at ``vals``: its denominator
    ``f·B_mem − k·P`` is positive. Where it is not, each sequence's bytes (mostly its cached keys and values,
    read every step) take at least as long as its FLOPs, so every batch is memory-bound and the formula's
    value (negative, or a division by zero) means nothing.

    >>> from symllm import api
    >>> from symllm.costs.phases import flops
    >>> from symllm.costs.workloads import Workload
    >>> mdl = api.spec("llama3.1-8b").model()
    >>> expr = decode_batch(flops(mdl, "decode"), bytes_moved(mdl, "decode"))
    >>> vals = lambda t: api.values("llama3.1-8b", Workload(context=t, gpu="h100-sxm"))
    >>> decode_batch_exists(expr, vals(16)), decode_batch_exists(expr, vals(2048))
    (True, False)
    """
    from symllm.numbers.kernels import evaluate  # evaluate loads with costs; this module stays light for workload.py

    return evaluate(_denominator(expr), vals) > 0


@lru_cache(maxsize=256)
def _crossing(mdl, flops: sp.Expr) -> sp.Expr:
    """:func:`decode_batch` of the model ``mdl`` whose decode step's FLOPs are ``flops``, built once per model
    (building :func:`symllm.costs.roofline_bytes.bytes_moved` again was half a warm roofline)."""
    return decode_batch(flops, bytes_moved(mdl, "decode"))


@lru_cache(maxsize=256)
def _denominator(expr: sp.Expr) -> sp.Expr:
    """``expr``'s denominator over one common denominator (once per closed form: every roofline asks)."""
    return sp.fraction(sp.together(expr))[1]


def _number(value) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(value)


#: the rank counts :func:`links` reads (a workload's fields; a plan's layout columns)
LINK_RANKS = ("tp", "dp", "ep", "pp")


def links(work, g: accelerators.GPU, **ranks) -> dict[str, tuple[str, int]]:
    """The link each parallel group's traffic crosses, ``kind -> (topology, bytes/s one way per GPU)``: ranks
    are numbered tensor-parallel first, then data-parallel (expert-parallel inside it: an expert-parallel
    group is ``N_t·N_e`` consecutive ranks; under vLLM's own, ``N_e = N_t·N_d``: :mod:`symllm.costs.expert_layout`),
    then pipeline stages (Megatron-LM's order), so a group stays on
    the node's link (NVLink, Infinity Fabric, PCIe) while its ranks fit in one node of ``g.node`` GPUs, and
    crosses the network between nodes (``work.network``) otherwise: a ring's (tp, dp) at the NICs of
    its ranks in a node together (one a GPU, ``g.node // N_t`` of a data-parallel group's), an all-to-all's or a
    pipeline send's at one (:meth:`symllm.costs.accelerators.Network.ring`). ``ranks``: each of
    :data:`LINK_RANKS`, or none.

    >>> from symllm.costs.workloads import Workload
    >>> sorted(links(Workload(tp=8, dp=4), accelerators.gpu("h100-sxm")).items())  # doctest: +NORMALIZE_WHITESPACE
    [('dp', ('InfiniBand NDR, 400 Gb/s per GPU', 50000000000)), ('ep', ('NVLink 4', 450000000000)),
     ('pp', ('InfiniBand NDR, 400 Gb/s per GPU', 50000000000)), ('tp', ('NVLink 4', 450000000000))]
    >>> h100 = accelerators.gpu("h100-sxm")
    >>> w = links(Workload(dp=16, ep=16), h100); links(Workload(dp=16, ep=8), h100)["ep"][0], w["ep"][1], w["dp"][1]
    ('NVLink 4', 50000000000, 400000000000)
    >>> links(Workload(tp=2, dp=4, ep=8, engine="vllm"), h100)["ep"][0]  # 8 ranks: one node
    'NVLink 4'
    """
    tp, dp, ep, pp = (ranks[k] for k in LINK_RANKS) if ranks else (getattr(work, k) for k in LINK_RANKS)
    net, node = accelerators.network(work.network), (g.link, g.link_bandwidth) if g.link is not None else None
    from symllm.costs.expert_layout import declared  # vLLM's expert group is its tp x dp ranks, ep of them
    experts = ep if ep > 1 and declared(work.engine) else tp * ep
    spans, nics = {"tp": tp, "dp": tp * dp, "ep": experts, "pp": tp * dp * pp}, {"tp": g.node,
                                                                                 "dp": max(1, g.node // tp)}
    return {k: node if node is not None and span <= g.node else net.ring(nics.get(k, 1), node and node[1])
            for k, span in spans.items()}


def stage_times(mdl, laid: bool, sp_: bool = False, recompute: bool | str = False, phase_flops=None,
                experts: str = "split", columns: str = "dtensor") -> dict:
    """The closed forms :func:`roofline` evaluates: per pipeline stage (the first and the last, as tensor
    rank 0 holds them; the whole model without a layout) its ``prefill``/``decode``/``training`` matmul FLOPs,
    its ``prefill``/``decode`` bytes (:func:`symllm.costs.roofline_bytes.bytes_moved`; a stage's:
    :func:`~symllm.costs.roofline_bytes.stage_bytes`), the collectives a forward pass runs over the tensor ranks
    (``collectives``: :func:`symllm.costs.collectives.step_collectives`' count, summed; ``spanning_norms``;
    ``training_tp_calls``, ``_gathers``, a micro-batch's: :func:`symllm.costs.collectives.training_calls`, ``columns``)
    and the bytes they send (``*_tp``: the residual stream's all-reduces, ring, the logits all-gathered, and vLLM's
    all-reduce of a fp32 statistic a token in each Mamba-2 gated norm whose one group spans the ranks; ``*_tp_row``:
    the residual stream's part a token row, what an engine's padded rows add); and the activation one pipeline hand-off
    carries per phase (``*_handoff``). ``phase_flops`` is
    :func:`symllm.costs.phases.flops`.

    >>> from symllm.arch.components import model
    >>> from symllm.costs.phases import flops
    >>> t = stage_times(model(), True, phase_flops=flops)
    >>> len(t["stages"]), t["decode_handoff"]
    (2, b*beta_a*d)
    """
    built = _stage_times(mdl, laid, sp_, recompute, phase_flops, experts, columns)
    return {**built, "stages": tuple(dict(terms) for terms in built["stages"])}  # the caller's own to change


@lru_cache(maxsize=64)
def _stage_times(mdl, laid: bool, sp_: bool, recompute: bool | str, phase_flops, experts: str, columns: str) -> dict:
    """:func:`stage_times`, built once per model and layout shape (every roofline of a sweep or plan asks;
    substituting the definitions into a dozen closed forms was half a warm roofline). Never changed."""
    from symllm.costs import parallel

    defs = dict(mdl.definitions)
    tied_head = tied(mdl)
    stages = parallel.stages(mdl, sp_, experts) if laid else (mdl,)
    heads = (1 - sp.Min(1, S.N_p - 1), 1) if laid else (1,)
    per_block_sends = 2 * (S.N_t - 1) / S.N_t  # one ring all-reduce of the residual stream, sent by each rank
    collectives = module("symllm.costs.collectives")
    out = []
    for stage, head in zip(stages, heads):
        terms = {"training_flops": algebra.substitute(phase_flops(stage, "training", recompute=recompute), defs)}
        blocks = sum((c.repeat for c in stage.children if c.checkpoint != 0), sp.S.Zero)
        terms["layers"] = algebra.substitute(blocks, defs)
        stage_parts = module("symllm.costs.stage_parts")  # (SymPy: imported with the closed forms)
        core, routed = stage_parts.core(stage), stage_parts.routed(stage)
        terms["expert_params"] = algebra.substitute(routed.total("params"), defs)
        terms["expert_active"] = algebra.substitute(routed.total("active"), defs)
        terms["training_expert_flops"] = algebra.substitute(phase_flops(routed, "training",
                                                                        recompute=recompute is True), defs)
        terms["expert_layers"] = algebra.substitute(stage_parts.moe_layers(stage), defs)
        # the step's collectives, counted once: the residual stream's all-reduces (the sublayers' and a vocabulary-
        # split embedding's), the logits' all-gather, vLLM's Mamba-2 gated norms' fp32 sums
        count = collectives.step_collectives(stage, experts)
        terms["collectives"] = algebra.substitute(sum(count.values()), defs)
        terms["spanning_norms"] = algebra.substitute(count["norms"], defs)
        # a training micro-batch's: the same count with the backward's, the recomputed forward's and the loss's
        trained = collectives.training_collectives(stage, sp_, recompute, experts, columns)
        terms.update({k: algebra.substitute(v, defs) for k, v in collectives.training_calls(trained).items()})
        for k, again in (("training", recompute is True), ("model", False)):  # model: nothing recomputed
            terms[f"{k}_core_flops"] = algebra.substitute(phase_flops(core, "training", recompute=again), defs)
        head_part = stage_parts.part(stage, "head", lambda c: S.s_o in c.flops.free_symbols)  # the logits' GEMM
        terms["training_bf16_flops"] = algebra.substitute(
            sum((phase_flops(c, "training", recompute=recompute is True) for c in (core, head_part)), sp.S.Zero),
            defs)
        widths = collectives.gathered(stage)["widths"]  # the outputs every rank gets whole, all-gathered

        def residual(r):  # the residual stream's all-reduces and the spanning norms' fp32 sums over r token rows
            return (per_block_sends * (S.beta_a * S.d * count["residual"] + FP32 * count["norms"])
                    + (S.N_t - 1) / S.N_t * S.beta_a * widths) * r
        for phase in ("prefill", "decode"):
            rows = S.b * S.s if phase == "prefill" else S.b
            logit_rows = S.b * S.s_o if phase == "prefill" else S.b  # the logits' positions (--logits)
            terms[f"{phase}_flops"] = algebra.substitute(phase_flops(stage, phase), defs)
            terms[f"{phase}_core_flops"] = algebra.substitute(phase_flops(core, phase), defs)
            if phase == "prefill":  # windowed layers' cores, on a local kernel's tiles (none: no term)
                for kind in ("sliding", "chunked"):
                    if (windowed := stage_parts.windowed(stage, kind)).flops != 0:
                        terms[f"prefill_{kind}_core_flops"] = algebra.substitute(phase_flops(windowed, phase), defs)
            terms[f"{phase}_expert_flops"] = algebra.substitute(phase_flops(routed, phase), defs)
            terms[f"{phase}_bytes"] = algebra.substitute(stage_bytes(stage, phase, tied_head, head) if laid
                                                         else bytes_moved(mdl, phase), defs)
            terms[f"{phase}_tp"] = algebra.substitute(residual(rows) + count["logits"] * (S.N_t - 1) / S.N_t
                                                      * S.beta_a * logit_rows * S.V, defs)
            terms[f"{phase}_tp_row"] = algebra.substitute(residual(1), defs)  # a row more (an engine's padding)
        out.append(terms)
    return {"stages": tuple(out), "prefill_handoff": S.beta_a * S.b * S.s * S.d,
            "decode_handoff": S.beta_a * S.b * S.d, "training_handoff": 2 * S.beta_a * S.b * S.s * S.d}


def roofline(mdl, work, vals: dict, exprs: dict, phase_flops, *, spec, window: int | None = None) -> dict:
    """The ``time`` group of :func:`symllm.costs.phases.workload` on the workload's accelerator
    (:func:`symllm.costs.accelerators.of`): ``mdl`` is the model component (``spec``'s, laid out: ``spec`` gives
    MFU's and HFU's numerators, :func:`symllm.costs.utilisation.step_flops`), ``vals`` symbol -> number (config,
    workload and :func:`symllm.costs.accelerators.values`), ``exprs`` the closed forms of
    :func:`symllm.costs.phases.quantities`, ``phase_flops`` :func:`symllm.costs.phases.flops`
    (a stage's FLOPs per phase). Everything is per GPU of the layout (``tp``,
    ``pp``, ``dp``, ``ep``; one GPU without one): what tensor rank 0 of the busiest pipeline stage holds,
    runs and sends (:mod:`symllm.costs.parallel`).

    * ``gpu``, ``title``, ``peak_flops`` (FLOP/s, in ``peak_dtype``:
      :func:`symllm.costs.accelerators.compute_dtype`), ``bandwidth``
      (bytes/s), ``capacity`` (bytes), ``ridge`` (``P / B_mem``, FLOP per byte), ``gpus`` (``tp·pp·dp``) and
      ``links`` (:func:`links`: the topology and bandwidth each group's traffic crosses);
    * **fit, one verdict per question**: ``inference_peak`` and ``training_peak`` per GPU
      (``memory_per_gpu``: the whole model's on one GPU), ``fits`` / ``training_fits`` (``<= capacity``);
      ``max_batch``: the largest ``b`` whose per-GPU inference peak fits (0: not one sequence), by exact
      search over the closed form;
    * ``prefill_s`` and ``decode_token_s``: each stage's ``max(FLOPs / P, bytes / B_mem)`` with its matmul
      FLOPs and bytes (:func:`symllm.costs.roofline_bytes.bytes_moved`; ``prefill_bytes``, ``decode_token_bytes``:
      the busiest stage's, exact),
      plus its tensor-parallel all-reduces (one per sublayer the ranks sum, two a LLaMA block, and the
      embedding's, of the ``b·s·d`` or ``b·d`` residual stream, ring: ``2(N_t-1)/N_t`` of it sent; the logits
      all-gathered) at the tp link's bandwidth; one batch goes through the ``N_p`` stages one after another
      (``N_p`` × the busiest stage), handing its activations over ``N_p - 1`` times; ``prefill_bound`` /
      ``decode_token_bound`` say which roofline term is larger (``compute`` on a tie), ``comm_s`` the time its
      communication takes; ``prefill_compute_s``, ``prefill_gemm_s``, ``decode_gemm_s``, ``decode_core_s``: the
      busiest stage's GEMMs and causal attention core at ``P`` (a decode step's GEMMs at least its bytes at
      ``B_mem``; its attention core), the shares serving under load's bound reads (:mod:`symllm.costs.traffic`);
    * ``tokens_per_s``: ``N_d·b / decode_token_s`` (``N_d`` replicas), at context ``t``;
      ``compute_bound_batch``: the smallest ``b`` whose decode step is compute-bound on one GPU, the ceiling
      of :func:`decode_batch` (None: no batch is; without a layout only);
    * training: ``training_step_s``: ``(m + N_p - 1)`` (interleaved over ``v`` chunks a stage:
      ``m + (N_p - 1)/v``) × (the busiest stage's training FLOPs / P + its tensor-
      and expert-parallel bytes sent / their link's bandwidth) + the pipeline's hand-offs (each micro-batch's,
      :func:`symllm.costs.schedules.handoffs`) + the data-parallel gradient traffic (``comm``'s ``dp``, once a step),
      ``m`` (``micro_batches``) micro-batches of ``b`` sequences per data-parallel rank,
      communication not overlapped with compute (an estimate, not a bound); ``training_tokens_per_s``
      (``N_d·m·b·s`` a step), ``mfu`` (:func:`symllm.costs.utilisation.step_flops`' model FLOPs over ``gpus·P``); with
      ``tokens``: ``training_s`` and ``gpu_hours`` for them, with ``price`` their ``cost``.

    Seconds, rates and the ridge are floats (of exact fractions); bytes are exact. **Nothing is timed that
    does not fit** (:func:`blank_unfit`): where ``fits`` is false the inference times (prefill, decode,
    tokens/s, their bounds) are None, where ``training_fits`` is false the training ones (step, tokens/s,
    MFU, days, GPU-hours, cost). ``assumes``: what each verdict assumes (:data:`ASSUMES`; under LoRA also what its
    training step counts, :data:`LORA_STEP`). ``window``: the
    positions the model was trained for (``window``, from its config; None: not stated), and
    ``max_context_past_window``: whether ``max_context`` (what memory allows) is past them.

    >>> from symllm.costs.phases import workload
    >>> t = workload("llama3.1-8b", gpu="h100-sxm")["time"]
    >>> t["decode_token_bound"], t["fits"], round(t["tokens_per_s"]), t["max_batch"]
    ('memory', True, 219, 146)
    """
    from symllm.numbers.kernels import evaluated

    return roofline_numbers(work, evaluated(roofline_forms(mdl, work, exprs, phase_flops, spec=spec), vals),
                            window=window)


def roofline_forms(mdl, work, exprs: dict, phase_flops, *, spec) -> dict:
    """The closed forms :func:`roofline_numbers` reads, by name: each pipeline stage's terms
    (:func:`stage_times`: ``stage0.prefill_flops``, ...), the hand-offs (``prefill_handoff``, ...), the
    ``flops``, ``memory_per_gpu`` and ``comm`` groups of ``exprs`` (``memory_per_gpu.inference_peak``, ...),
    the compute-bound batch and its denominator without a layout (``crossing``, ``crossing.denominator``)
    and each inverse question's closed-form coefficients (``solve.inference_peak.b.0.1``: of the first
    candidate, ``c1``; :func:`symllm.costs.inverse.solve_forms`), and a step's ``model_flops`` and
    ``hardware_flops`` (MFU's and HFU's: :func:`symllm.costs.utilisation.step_flops` of ``spec``). What they
    are depends on the model's structure and the workload's shape only
    (:meth:`symllm.costs.workloads.Workload.shape`): a count at another point evaluates the same forms
    (:mod:`symllm.studies.quick` keeps their kernels).

    >>> from symllm import api
    >>> from symllm.costs.phases import flops, quantities
    >>> from symllm.costs.workloads import Workload
    >>> mdl, work = api.spec("llama3.2-1b").model(), Workload(gpu="h100-sxm")
    >>> f = roofline_forms(mdl, work, quantities(mdl, work), flops, spec=api.spec("llama3.2-1b"))
    >>> f["decode_handoff"], "stage1.layers" in f, f["solve.inference_peak.b.0.0"] == f["solve.inference_peak.s.0.0"]
    (b*beta_a*d, False, False)
    """
    from symllm.costs import inverse, layouts, parallel  # parallel builds components: loaded only with a time asked

    laid = parallel.laid_out(work)
    recompute = module("symllm.costs.selective").recompute_of(work)
    train = parallel.layout(mdl, layouts.kind_layout(work.engine, "training"))  # as the training engine lays it out
    columns = module("symllm.costs.collectives").column_parallel(work.engine)
    terms = layouts.by_kind(lambda m: stage_times(m, laid, work.sp, recompute, phase_flops, work.expert_tp, columns),
                            mdl, train)
    forms = {f"stage{i}.{k}": e for i, st in enumerate(terms["stages"]) for k, e in st.items()}
    # MFU's and HFU's numerators, the whole model's (one definition: utilisation.step_flops, causal pairs)
    forms["model_flops"], forms["hardware_flops"] = step_flops(spec), step_flops(spec, recompute)
    forms.update({k: terms[k] for k in ("prefill_handoff", "decode_handoff", "training_handoff")})
    forms.update({f"{group}.{k}": e for group in ("flops", "memory_per_gpu", "comm", "params")
                  for k, e in exprs[group].items()})
    if work.recompute == "op":  # the linears op checkpointing runs again, the whole model's (_expected shares them)
        forms["op_recomputed_flops"] = module("symllm.costs.selective").recomputed_flops(train)
    graded = train.trained()  # a rank's parameters that get a gradient: the optimizer updates theirs only (_expected)
    if graded is not train and work.lora_rank is not None:  # LoRA's adapters that get one
        lora = module("symllm.costs.finetune").trainable(train, work.lora_targets, graded=True)
        forms["params.trained"] = algebra.substitute(lora, {**dict(train.definitions), S.r_lora: work.lora_rank})
    elif graded is not train:
        forms["params.trained"] = (parallel.params_per_gpu(graded, work.sp, experts=work.expert_tp) if laid
                                   else graded.closed_form("params"))
    if work.dp > 1:  # comm's dp at an engine's reduce dtype and rounds a step, as symbols (_expected's dp_sent)
        forms["dp_sent"] = parallel.comm(train, work.sp, work.recompute, work.zero_stage, work.expert_tp,
                                         grad_bytes=parallel.REDUCE_BYTES, rounds=parallel.DP_ROUNDS)["dp"]
    if not laid:
        crossing = _crossing(mdl, exprs["flops"]["decode_token"])
        forms["crossing"], forms["crossing.denominator"] = crossing, _denominator(crossing)
    return {**forms, **inverse.solve_forms(exprs["memory_per_gpu"])}


def roofline_numbers(work, ev, *, window: int | None = None, largest: bool = True) -> dict:
    """:func:`roofline` from the numbers of :func:`roofline_forms` (``ev(name)``, ``ev(name, b=...)``: a
    :class:`symllm.numbers.runtime.Numbers`, whose ``vals`` hold ``P``, ``B_mem``, ``beta_w``, ``d_h``): no SymPy.
    What :func:`roofline` runs, and what a count read back from stored kernels runs. ``largest`` False: without
    the largest batch, context and sequence that fit (``max_batch``, ``max_context``, ``training_max_batch``,
    ``training_max_seq``, ``max_context_past_window``: a search each), which a plan's ranking does not read."""
    g = accelerators.of(work)
    vals = ev.vals
    peak, bandwidth = vals["P"], vals["B_mem"]
    stages = [f"stage{i}." for i in range(2) if f"stage{i}.layers" in ev]
    out = {"gpu": g.name, "title": g.title, "peak_flops": peak,
           "peak_dtype": work.matmul_dtype, "bandwidth": bandwidth,
           "capacity": g.memory, "ridge": float(Fraction(peak, bandwidth)), "gpus": work.tp * work.pp * work.dp}
    route = links(work, g)
    out["links"] = {k: {"topology": name, "bandwidth": bw} for k, (name, bw) in route.items()
                    if getattr(work, k) > 1}

    def num(name, **put) -> Fraction:
        return _number(ev(name, **put))

    def over(kind, sent) -> Fraction:
        return _number(sent) / route[kind][1] if sent else Fraction(0)

    seconds = {}
    parts = {}  # the busiest stage's numbers, for the expected times (symllm.costs.efficiency)
    for name, phase in (("prefill", "prefill"), ("decode_token", "decode")):
        worst = None
        for st in stages:
            fl = num(f"{st}{phase}_flops")
            moved = num(f"{st}{phase}_bytes")
            comm = over("tp", num(f"{st}{phase}_tp")) if work.tp > 1 else Fraction(0)
            compute, memory = fl / peak, moved / bandwidth
            key = (max(compute, memory) + comm, compute >= memory, moved, comm, st)
            worst = key if worst is None or key[0] > worst[0] else worst
        handoff = over("pp", num(f"{phase}_handoff")) * (work.pp - 1)
        seconds[name] = work.pp * worst[0] + handoff
        out[f"{name}_bytes"] = worst[2] if not isinstance(worst[2], Fraction) or worst[2].denominator != 1 \
            else int(worst[2])
        out[f"{name}_s"] = _seconds(seconds[name])
        out[f"{name}_bound"] = "compute" if worst[1] else "memory"
        out[f"{name}_comm_s"] = _seconds(work.pp * worst[3] + handoff)
        busiest = worst[4]
        parts.update({f"{phase}_flops": num(f"{busiest}{phase}_flops"), f"{phase}_bytes": worst[2],
                      f"{phase}_core_flops": num(f"{busiest}{phase}_core_flops"),
                      **{f"{phase}_{k}_core_flops": num(f"{busiest}{phase}_{k}_core_flops")
                         for k in ("sliding", "chunked") if f"{busiest}{phase}_{k}_core_flops" in ev},
                      f"{phase}_expert_flops": num(f"{busiest}{phase}_expert_flops"),
                      "expert_params": num(f"{busiest}expert_params"), "expert_active": num(f"{busiest}expert_active"),
                      "training_expert_flops": num(f"{busiest}training_expert_flops"),
                      f"{phase}_tp_bytes": num(f"{busiest}{phase}_tp") if work.tp > 1 else 0,
                      f"{phase}_tp_row_bytes": num(f"{busiest}{phase}_tp_row") if work.tp > 1 else 0,
                      f"{phase}_handoff": num(f"{phase}_handoff"), "layers": int(num(f"{busiest}layers")),
                      "collectives": int(num(f"{busiest}collectives")) if work.tp > 1 else 0})
        if phase == "decode":  # the bytes no sequence adds (the weights): the rest is each sequence's cache
            parts["decode_weight_bytes"] = num(f"{busiest}decode_bytes", b=0)
    out["tokens_per_s"] = _seconds(work.dp * work.batch / seconds["decode_token"])
    # the bound's share of a prompt and of a decode step, beside time.expected's, for serving under load
    # (symllm.costs.traffic): the busiest stage's GEMMs at the peak, a decode step's at least its whole stream (a
    # roofline step overlaps all it does), and the attention cores at the peak, a prompt's at its causal pairs
    # (FlashAttention skips the masked blocks: (s+1)/(2s) of a dense rectangle); no collectives, no fixed costs
    core = parts["prefill_core_flops"]
    parts["prefill_causal_core_flops"] = core * Fraction(work.seq + 1, 2 * work.seq) if work.attention == "dense" \
        else core
    out["prefill_gemm_s"] = _seconds((parts["prefill_flops"] - core) / peak)
    out["prefill_compute_s"] = _seconds((parts["prefill_flops"] - core + parts["prefill_causal_core_flops"]) / peak)
    out["decode_gemm_s"] = _seconds(max((parts["decode_flops"] - parts["decode_core_flops"]) / peak,
                                        parts["decode_bytes"] / bandwidth))
    out["decode_core_s"] = _seconds(parts["decode_core_flops"] / peak)
    inference, training = num("memory_per_gpu.inference_peak"), num("memory_per_gpu.training_peak")
    out["inference_peak"], out["training_peak"] = _whole(inference), _whole(training)
    out["fits"], out["training_fits"] = inference <= g.memory, training <= g.memory
    out.update(module("symllm.costs.search").largest_numbers(ev, g.memory, work.gen) if largest else {})
    # the model's trained positions: a largest context past them is flagged (kept: RoPE scaling exists)
    out["window"] = window
    if largest:
        out["max_context_past_window"] = window is not None and out["max_context"] > window
    out["compute_bound_batch"] = (max(1, math.ceil(ev("crossing"))) if "crossing" in ev  # a layout: not asked
                                  and ev("crossing.denominator") > 0 else None)
    # training: one step of m micro-batches of b sequences per data-parallel rank; the pipeline's last
    # micro-batch leaves the first stage after m stage-times and the last after m + N_p - 1 (interleaved over v
    # chunks a stage, m + (N_p - 1)/v: schedules.bubble); each micro-batch's activations and gradient cross every
    # boundary (schedules.handoffs: one-way sends, half training_handoff)
    m = work.micro_batches
    worst = max(num(f"{st}training_flops") for st in stages) / peak
    comm = {k.removeprefix("comm."): num(k) for k in ev.forms if k.startswith("comm.")}
    stage_runs = m * (1 + bubble(work.pp, m, work.schedule, work.virtual_stages))
    # comm: tp, pp and dp always; ep for a mixture of experts only (symllm.costs.parallel.comm_kinds)
    step = (stage_runs * (worst + over("tp", comm["tp"]) + over("ep", comm.get("ep", 0)))
            + over("pp", num("training_handoff")) * Fraction(handoffs(work.pp, m, work.schedule), 2)
            + over("dp", comm["dp"]))
    tokens = work.dp * work.batch * work.seq * m
    model_flops = work.dp * m * num("model_flops")  # utilisation.step_flops: nothing recomputed, causal pairs
    out["training_step_s"] = _seconds(step)
    out["training_tokens_per_s"] = _seconds(tokens / step)
    out["mfu"] = _seconds(of_peak(model_flops, step, out["gpus"], peak))
    # the busiest stage's tensor-parallel calls a micro-batch, as comm's tp bytes are the busiest stage's
    parts.update(module("symllm.costs.collectives").busiest_calls(num, stages) if work.tp > 1 else {})
    parts["trained"] = num("params.trained") if "params.trained" in ev else None  # all of them: no form
    out["expected"] = _expected(parts, work, num, vals, stages, comm, route, peak, bandwidth, step)
    if work.tokens is not None:
        run = Fraction(work.tokens) * step / tokens
        out["training_s"] = _seconds(run)
        out["gpu_hours"] = _seconds(run * out["gpus"] / 3600)
        if work.price is not None:
            out["cost"] = _seconds(run * out["gpus"] / 3600 * Fraction(str(work.price)))
    out["assumes"] = dict(ASSUMES, **({"training_step": LORA_STEP} if work.lora_rank else {}))
    return blank_unfit(out)


#: nothing is timed that does not fit: each verdict of the ``time`` group -> the entries that time what it
#: judges, set to None (JSON null) by :func:`blank_unfit` where the verdict is false. Every entry of the
#: group is in one of these or in :data:`UNTIMED` (tests/test_findings.py checks it): a new time (an
#: expected time beside the roofline bound) goes here, and the rule covers it.
TIMED_BY = {
    "fits": ("prefill_s", "prefill_bound", "prefill_comm_s", "decode_token_s", "decode_token_bound", "decode_core_s",
             "decode_token_comm_s", "tokens_per_s", "prefill_compute_s", "prefill_gemm_s", "decode_gemm_s"),
    "training_fits": ("training_step_s", "training_tokens_per_s", "mfu", "training_s", "gpu_hours", "cost",
                      "training_tokens_per_s_per_gpu", "hfu"),
}
#: the ``time`` group's entries that are not times: the accelerator, the verdicts and the sizes they judge
UNTIMED = ("gpu", "title", "peak_flops", "peak_dtype", "bandwidth", "capacity", "ridge", "gpus", "links",
           "prefill_bytes", "decode_token_bytes", "inference_peak", "training_peak", "fits", "training_fits",
           "max_batch", "max_context", "training_max_batch", "training_max_seq", "compute_bound_batch",
           "assumes", "window", "max_context_past_window", "expected", "engine", "training_engine")

#: what each verdict assumes, one short clause each (``time["assumes"]``; count, reports and docs say it)
ASSUMES = {
    "fits": "weights + KV cache of b(s + n) tokens + one layer's working set; no engine overhead",
    "training_fits": "training states + activations of one micro-batch; no allocator overhead",
    "max_context": "s + n at batch b, on the inference peak",
}
#: ``time["assumes"]["training_step"]`` under LoRA, whose FLOPs are not modelled (docs/finetuning.md): its step's
LORA_STEP = "full fine-tuning's FLOPs (the frozen weights' gradients not taken off; docs/finetuning.md)"


def blank_unfit(time: dict) -> dict:
    """``time`` with every entry :data:`TIMED_BY` a false verdict set to None (in place; returned): a
    workload that does not fit has no prefill, decode or training time, tokens/s or MFU.

    >>> blank_unfit({"fits": True, "prefill_s": 1.0, "training_fits": False, "mfu": 1.0})
    {'fits': True, 'prefill_s': 1.0, 'training_fits': False, 'mfu': None}
    >>> blank_unfit({"fits": False, "expected": {"engine": "vllm", "prefill_s": 2.0}})["expected"]
    {'engine': 'vllm', 'prefill_s': None}
    """
    for verdict, entries in TIMED_BY.items():
        if verdict in time and not time[verdict]:
            for group in (time, time.get("expected") or {}):  # the bounds and the expected times alike
                group.update({k: None for k in entries if k in group})
    return time


def _expected(parts, work, num, vals, stages, comm, route, peak, bandwidth, step) -> dict:
    """:func:`symllm.costs.efficiency.expected` from the roofline's evaluated closed forms (``num(name)``): the
    attention core's causal FLOPs (FlashAttention skips the masked blocks: ``(s+1)/(2s)`` of a dense prefill
    rectangle), model FLOPs (nothing recomputed) and hardware FLOPs (the step as run), both
    :func:`symllm.costs.utilisation.step_flops`, as the bound's MFU; ``vals``: symbol -> number."""
    from symllm.costs import efficiency

    dense = work.attention == "dense"
    trained = max(stages, key=lambda st: num(f"{st}training_flops"))  # the busiest stage
    model, hardware = work.dp * num("model_flops"), work.dp * num("hardware_flops")

    def dp_sent(grad_bytes, rounds) -> Fraction:  # comm's dp form at them (by the names of parallel.REDUCE_BYTES
        # and DP_ROUNDS: no SymPy here); bf16 gradients once a step are comm.dp itself (no form at --dp 1)
        same = (grad_bytes == BF16 and rounds == 1) or work.dp == 1
        return comm["dp"] if same else num("dp_sent", beta_g=grad_bytes, R_d=rounds)

    parts.update({"training_bf16_flops": num(f"{trained}training_bf16_flops"), "dp_sent": dp_sent,
                  "bf16_peak": accelerators.gpu(rated).bf16 if (rated := efficiency.card(work, own_peak=True))
                  else None})
    # the pairs a sequence's core counts in the workload's convention (the kernel's tiles replace them in the
    # expected time), and a training step's core (the indexer's scores: no backward), the busiest stage's
    parts.update({"core_pairs": work.seq * work.seq if dense else Fraction(work.seq * (work.seq + 1), 2),
                  "training_core_flops": num(f"{trained}training_core_flops"),
                  "training_model_core_flops": num(f"{trained}model_core_flops")})  # its forward: a third
    parts.update({"head_dim": int(vals["d_h"]),
                  "window": int(vals["W"]) if "W" in vals else None,
                  "beta_w": _number(vals["beta_w"]),
                  "compute_dtype": work.matmul_dtype,
                  "training_flops": max(num(f"{st}training_flops") for st in stages),
                  # a mixture's training extras (moe_training.moe_training_s): the busiest stage's MoE layers, widths
                  "expert_layers": max(num(f"{st}expert_layers") for st in stages),
                  **{name: _number(vals[name]) for name in ("d", "d_ff", "n_e", "k", "beta_a", "n_h", "n_kv",
                                                            "d_fd", "d_hv", "r_q", "r_kv", "d_hr", "d_hn")
                     if name in vals},
                  # the mixers besides q/k/v attention it holds (tp_overlap.OTHER_MIXERS: their linears pair otherwise)
                  "mixers": tuple(name for name in tp_overlap.OTHER_MIXERS if name in vals),
                  "training_handoff": num("training_handoff"), "comm": comm,
                  # a rank's parameters (its tensor and pipeline share) and those it trains (LoRA's adapters)
                  "params": num("params.per_gpu"),
                  "trainable": num("params.trainable") if work.lora_rank is not None else None,
                  # op checkpointing's recomputed linears, the busiest stage's share on one tensor-parallel rank
                  "op_flops": (num("op_recomputed_flops") * Fraction(parts["layers"], int(vals["L"])) / work.tp
                               if work.recompute == "op" else 0),
                  "training_model_flops": model,
                  "training_hardware_flops": hardware})
    return efficiency.expected(parts, work, peak, bandwidth, route, floor={"training_step_s": step})


def _whole(value: Fraction):
    return int(value) if value.denominator == 1 else value
