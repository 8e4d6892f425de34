"""What a workload costs: FLOPs (prefill, decode, generation, training) and memory (weights, KV cache,
training states, activations, inference peak), as closed forms over the components and as exact numbers.

Conventions, stated once (docs/conventions.md, "FLOPs and memory"):

* **FLOPs** count a multiply-add as 2 (``macs=True`` halves them). The ``matmul`` bucket is the matrix
  multiplies (what torch's ``FlopCounterMode`` and the literature count); element-wise work is the
  separate ``elementwise`` bucket (per-element counts in :data:`symllm.arch.components.ELEMENTWISE`).
* A component's ``flops`` is one forward pass over ``b`` sequences of ``s`` new tokens with ``t`` cached.
  Phases: ``prefill`` is ``t = 0``; ``decode`` is one step ``s = 1`` at context ``t``; ``generation`` is
  the prefill plus ``n`` decode steps at contexts ``s, s+1, …, s+n-1`` (summed in closed form);
  ``training`` is forward + backward of the prefill, ``3×`` its matmul FLOPs (``4×`` with full activation
  recomputation: the forward runs twice), but a part that runs forward only (``Rules.no_grad``: DeepSeek
  Sparse Attention's indexer, DeepSeek-V4's) counts its forward only (twice under full recomputation) and saves
  nothing. **Logits**: an inference forward computes those of ``s_o`` positions
  per sequence (``Workload.logits``: ``last``, the default, ``s_o = 1`` as serving engines and HF ``generate``;
  ``all``, ``s_o = s``; :func:`logit_rows`); a decode step its one position's; training every position's.
* ``attention="dense"`` counts every score of the ``s × (t+s)`` rectangle (eager/SDPA kernels,
  ``FlopCounterMode``); ``"causal"`` only the unmasked pairs ``s·t + s(s+1)/2``. Never silently halved.
* **Bytes per element** (:data:`symllm.costs.workloads.DTYPES`): fp64 8, fp32 4, bf16/fp16 2, fp8/int8 1, int4 ½
  plus one fp16 scale (2 bytes, symmetric, no zero-point) per group of ``group_size`` consecutive weights (default 128),
  i.e. ``β = 1/2 + 2/g`` per weight (exact when ``g`` divides the number of weights grouped).
* Memory kinds: ``weights`` ``β_w·N``; ``kv_cache`` ``β_kv·2·L·n_kv·d_h·b·(s+n)`` (the cache after the
  prefill and ``n`` decode steps); ``training_states`` per data-parallel rank (see :func:`memory`);
  ``activations`` saved for backward by a training forward over ``b × s`` tokens (each component's
  ``saved``); ``inference_peak`` weights + KV cache + the largest live working set (each component's
  ``resident`` and ``live``; see :func:`memory`).

>>> from symllm.arch.symbols import b, s, d, n_h, d_h
>>> flops("attention", "prefill").coeff(s**2)
4*b*d_h*n_h
>>> workload("llama2-13b", batch=1, seq=1)["flops"]["prefill"]
25704038400
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from symllm.arch.algebra import factored, maximum, substitute
from symllm.arch import resolved
from symllm.costs import accelerators, checks, finetune, hardware
from symllm.costs import parallel
from symllm.costs import stacks, zero
from symllm.costs.decoding import phase_flops
from symllm.costs.selective import policy, recompute_of
from symllm.arch.dtypes import OPTIMIZERS
from symllm.arch import symbols as S
from symllm.arch.components import Component, Rules, component, model
from symllm.errors import SymllmError
from symllm import validate
from symllm.validate import choice
from symllm.numbers.kernels import evaluate
from symllm.costs.numbered import grouped, named, weight_format_group, workload_numbers
from symllm.costs.layouts import kind_layout
from symllm.costs.loss_memory import logits_memory
from symllm.costs.workloads import (ATTENTION, COMPONENT_STACKS, LOGITS, MEMORY_KINDS, PHASES, TRAINING_MEMORY,
                                    Workload, check_stack, tp_layout, with_stated)

__all__ = [
    "flops", "memory", "memory_kinds",
    "activations", "closed_form", "workload", "quantities", "stage_memory", "logit_rows",
    "resolved_workload", "workload_forms",
]


def _component(comp, attention: str) -> Component:
    """A Component as given, or the one called ``comp`` in the default model with that convention."""
    choice("attention", attention, ATTENTION)
    return comp if isinstance(comp, Component) else component(comp, model(causal=attention == "causal"))


def logit_rows(expr: sp.Expr, logits: str = "last") -> sp.Expr:
    """``expr`` with ``s_o`` (the positions per sequence whose logits an inference forward computes) set by
    ``logits`` (:data:`symllm.costs.workloads.LOGITS`): ``last`` 1, ``all`` ``s``. :func:`flops` and
    :func:`memory` keep ``s_o`` (a derivation shows it); :func:`quantities` sets it, so what a workload, a
    sweep or an inverse question evaluates holds ``s`` alone.

    >>> logit_rows(flops("lm_head")), logit_rows(flops("lm_head"), "all")
    (2*V*b*d, 2*V*b*d*s)
    """
    choice("logits", logits, LOGITS)
    return expr.xreplace({S.s_o: sp.S.One if logits == "last" else S.s})


def flops(component="model", phase: str = "prefill", *, attention: str = "dense", bucket: str = "matmul",
          macs: bool = False, recompute: bool | str = False) -> sp.Expr:
    """FLOPs of ``component`` (a name or a :class:`Component`) in ``phase`` (see the module docstring).

    ``bucket`` is ``"matmul"`` or ``"elementwise"``; ``macs=True`` gives multiply-adds (FLOPs / 2);
    ``recompute`` only changes ``training`` (4 forward passes' worth instead of 3). A Component keeps the
    attention convention it was built with.

    >>> flops("feed_forward")
    6*b*d*d_ff*s
    >>> sp.expand(flops("attention", "decode", macs=True)).coeff(S.t)
    2*b*d_h*n_h
    >>> sp.expand(flops("attention", "prefill", attention="causal")).coeff(S.s**2)
    2*b*d_h*n_h
    """
    comp = _component(component, attention)
    choice("phase", phase, PHASES)
    choice("bucket", bucket, ("matmul", "elementwise"))
    if macs and bucket != "matmul":
        raise SymllmError("macs: multiply-adds are matmul FLOPs / 2; the elementwise bucket has none")
    expr = phase_flops(comp, bucket, phase, policy(recompute))
    return expr / 2 if macs else expr


def activations(component="model", *, recompute: bool | str = False, stack: str = "fused") -> sp.Expr:
    """Bytes a training forward (``b × s`` tokens) saves for backward: the sum of every component's
    ``saved`` — derived for LLaMA (SwiGLU, RMSNorm, RoPE, GQA): ``β_a`` per activation element,
    ``max(4, β_a)`` per statistic (RMSNorm's 1/rms, a fused attention's log-sum-exp per query and head:
    fp32, or fp64 for fp64 activations), ``8`` per token id the embedding keeps. RoPE saves nothing (its
    tables are recomputed from positions). ``stack="eager"`` is an unfused attention core instead: it
    saves the ``b·n_h·s²`` probabilities in place of the log-sum-exp (each component's ``eager_saved``).

    With ``recompute`` (full activation recomputation) every component with a ``checkpoint`` (the block)
    keeps only its input, and the figure is the peak during backward: those checkpoints plus one
    checkpointed component's activations, recomputed, plus what lies outside them.

    >>> activations("feed_forward")
    beta_a*(b*d*s + 3*b*d_ff*s)
    >>> sp.factor(activations("block", recompute=True))
    b*beta_a*d*s
    >>> sp.expand(activations("attention", stack="eager") - activations("attention"))
    b*beta_a*n_h*s**2 - b*n_h*s*Max(4, beta_a)
    """
    choice("stack", stack, COMPONENT_STACKS)
    _op_stack(recompute, stack)
    return _activations(_component(component, "dense"), policy(recompute), stack == "eager")


def _op_stack(recompute, stack: str) -> None:
    """Refuse op checkpointing (:mod:`symllm.costs.selective`) under a stack it is not modelled for."""
    if policy(recompute) == "op" and stack != "fused":
        raise SymllmError(f"stack: --selective-ac op is modelled for the fused stack (SDPA), not {stack}")


#: the component stacks' saved bytes (symllm.costs.stacks.component_activations: LoRA's reads them too)
_activations = stacks.component_activations


def _working_set(comp: Component, eager: bool = False) -> sp.Expr:
    """Activation elements live at an inference pass's peak: the resident stream plus the largest
    candidate any component of the tree holds (live sets are not repeated: layers run one at a time);
    ``eager``: each component's ``eager_live`` where it declares one."""
    parts = list(comp.walk())
    resident = maximum(*(c.resident for c in parts))
    if resident == 0:
        raise SymllmError(f"kind: inference_peak is for a block or the model, not {comp.name!r}")
    live = [x for c in parts for x in (c.eager_live if eager and c.eager_live is not None else c.live)]
    return resident + maximum(*live)


def memory(component="model", kind: str = "inference", *, attention: str = "dense", zero_stage: int = 0,
           recompute: bool | str = False, stack: str = "fused", optimizer: str = "adamw") -> sp.Expr:
    """Bytes of ``kind`` (see :data:`MEMORY_KINDS`) for ``component``, as a closed form.

    * ``weights`` ``β_w·N``; ``kv_cache`` ``β_kv`` × the cache elements after a prefill of ``s`` and ``n``
      decode steps (the keys and values of attention layers only); ``state_cache`` the bytes of every other
      per-sequence cache (a Gated DeltaNet's recurrent and convolution states: symllm.arch.components.deltanet,
      constant in the context; DeepSeek Sparse Attention's indexer keys, growing with it); ``inference`` weights + KV
      cache + state cache.
    * ``training_states`` per data-parallel rank, mixed-precision Adam: 2N bf16/fp16 weights, 2N
      gradients, 12N fp32 optimizer state (master weights, first and second moments) = 16N at ZeRO stage
      0. Stage 1 shards the 12N optimizer state over the ``N_d`` ranks, stage 2 also the gradients,
      stage 3 also the weights (16⌈N/N_d⌉, rank 0's padded shard).
    * ``activations``: :func:`activations`.
    * ``inference_peak`` (block or model): weights + KV cache + state cache + the largest working set live at once:
      ``β_a`` × (the components' ``resident`` elements, the residual stream and the normed input
      ``2·b·s·d``, + the largest ``live`` candidate: a fused attention's q and output ``2·b·s·n_h·d_h``
      (and its log-sum-exp), the SwiGLU's three ``b·s·d_ff`` tensors, and (model) the logits ``b·s·V``;
      ``stack="eager"``: the prefill's scores and probabilities ``2·b·n_h·s²`` or a decode step's
      ``2·b·n_h·(s+n)`` in place of the fused attention's).
    * ``stack``: ``fused`` (the default) and ``eager`` are the components' own memory model
      (:data:`symllm.costs.workloads.COMPONENT_STACKS`); an HF stack (the model only) gives
      ``training_states``, ``activations`` and ``inference_peak`` of that software
      (:mod:`symllm.costs.stacks`).
    * ``training_peak`` (the model only): the highest point of one steady-state training step under
      ``stack`` (:func:`training_peak_parts`; docs/stacks.md, "Training peak").
    * ``optimizer`` (:data:`symllm.arch.dtypes.OPTIMIZERS`): what the training states keep per parameter
      (:func:`symllm.costs.zero.optimizer_states`), and for an HF stack the temporary of its step.

    >>> memory("attention", "kv_cache")
    2*b*beta_kv*d_h*n_kv*(n + s)
    >>> memory("rmsnorm", "training_states", zero_stage=2)
    2*d + 14*ceiling(d/N_d)
    """
    comp = _component(component, attention)
    choice("kind", kind, MEMORY_KINDS)
    validate.zero_stage(zero_stage)
    check_stack(stack)
    choice("optimizer", optimizer, OPTIMIZERS)
    _op_stack(recompute, stack)
    if kind == "training_peak":  # one training step's highest point (symllm.costs.stacks; docs/stacks.md)
        return substitute(_training_peak(comp, stack, zero_stage, policy(recompute), optimizer), dict(comp.definitions))
    if stack not in COMPONENT_STACKS and kind in ("training_states", "activations", "inference_peak"):
        out = {"training_states": lambda: stacks.training_states(comp, stack, zero_stage, optimizer),
               "activations": lambda: stacks.activations(comp, stack, bool(policy(recompute))),
               "inference_peak": lambda: stacks.inference_peak(comp, stack)}[kind]()
        return substitute(out, dict(comp.definitions))
    return _memory(comp, kind, zero_stage, policy(recompute), stack == "eager", optimizer)


def _training_peak(comp: Component, stack: str, zero_stage: int, recompute: bool | str,
                   optimizer: str = "adamw") -> sp.Expr:
    return sum(training_peak_parts(comp, stack, zero_stage, recompute, optimizer).values(), sp.S.Zero)


@lru_cache(maxsize=256)
def training_peak_parts(comp: Component, stack: str = "fused", zero_stage: int = 0,
                        recompute: bool | str = False, optimizer: str = "adamw") -> dict[str, sp.Expr]:
    """The terms of ``memory(..., "training_peak")``, which add up to it: ``fused`` and ``eager`` their
    training states (held throughout), activations, and the logits' gradient (a fused cross-entropy's
    ``β_a·b·s·V`` in place of the logits; transformers' loss under its plan's head: :mod:`symllm.costs.loss_memory`);
    an HF stack the fp32 master weights and AdamW moments
    held throughout and the largest moment of the step (:func:`symllm.costs.stacks.training_peak_parts`).

    >>> list(training_peak_parts(model())), list(training_peak_parts(model(), "hf-sdpa"))
    (['training_states', 'activations', 'logits_gradient'], ['weights_and_moments', 'largest_moment'])
    """
    if not stacks.is_whole(comp):
        raise SymllmError(f"kind: training_peak is the whole model's (it holds the loss), not {comp.name!r}")
    if stack in COMPONENT_STACKS:
        return {"training_states": _memory(comp, "training_states", zero_stage, recompute, False, optimizer),
                "activations": _memory(comp, "activations", zero_stage, recompute, stack == "eager", optimizer),
                "logits_gradient": logits_memory(comp)["gradient"]}
    return stacks.training_peak_parts(comp, stack, recompute, zero_stage, optimizer)


@lru_cache(maxsize=256)
def _memory(comp: Component, kind: str, zero_stage: int, recompute: bool | str, eager: bool = False,
            optimizer: str = "adamw") -> sp.Expr:
    N = comp.total("params")
    weights = S.beta_w * N
    if kind == "weights":
        out = weights
    elif kind == "kv_cache":
        out = _kv_bytes(comp)
    elif kind == "state_cache":
        out = _state_bytes(comp)
    elif kind == "inference":
        out = weights + _kv_bytes(comp) + _state_bytes(comp)
    elif kind == "training_states":
        out = zero.optimizer_states(comp, zero_stage, optimizer)  # mixed precision, ZeRO-sharded
    elif kind == "activations":
        out = _activations(comp, recompute, eager) + logits_memory(comp)["saved"]  # (the loss's, by its head)
    else:
        out = weights + _kv_bytes(comp) + _state_bytes(comp) + S.beta_a * _working_set(comp, eager)
    return substitute(out, dict(comp.definitions))


def _state_bytes(comp: Component) -> sp.Expr:
    """The state cache's bytes after a prefill of ``s`` and ``n`` decode steps: a Gated DeltaNet's states are
    constant in the context; DeepSeek Sparse Attention's indexer keys grow with it, as the KV cache does."""
    return comp.total("state_cache").subs(S.t, S.n)


@lru_cache(maxsize=256)
def _kv_bytes(comp: Component) -> sp.Expr:
    """The KV cache's bytes after a prefill of ``s`` and ``n`` decode steps, factored (once per component:
    the kinds that hold no cache never ask)."""
    return S.beta_kv * factored(comp.total("kv_cache").subs(S.t, S.n))


def closed_form(component, quantity: str, **options) -> sp.Expr:
    """The closed form of ``quantity`` (``params``, ``flops`` or ``memory``) for ``component``.

    ``options`` go to :func:`flops` (``phase``, ``attention``, ``bucket``, ``macs``, ``recompute``) or
    :func:`memory` (``kind``, ``attention``, ``zero_stage``, ``recompute``); the defaults are the prefill's
    matmul FLOPs and inference memory (weights + KV cache).

    >>> closed_form("attention", "params")
    2*d*d_h*n_h + 2*d*d_h*n_kv
    >>> closed_form("attention", "memory", kind="kv_cache").subs(S.n_kv, 1)
    2*b*beta_kv*d_h*(n + s)
    """
    if quantity == "params":
        if options:
            raise SymllmError(f"options: params takes none, got {', '.join(options)}")
        comp = _component(component, "dense")
        return substitute(comp.total("params"), dict(comp.definitions))
    if quantity == "flops":
        comp = _component(component, options.get("attention", "dense"))
        return substitute(flops(comp, **{k: v for k, v in options.items() if k != "attention"}), dict(comp.definitions))
    if quantity == "memory":
        return memory(component, **options)
    choice("quantity", quantity, ("params", "flops", "memory"))


#: what ``workload()`` reports: name -> (phase, bucket) for FLOPs; the memory kinds it shows
WORKLOAD_FLOPS = {"prefill": ("prefill", "matmul"), "decode_token": ("decode", "matmul"),
                  "generation": ("generation", "matmul"), "training_step": ("training", "matmul"),
                  "elementwise": ("prefill", "elementwise")}
WORKLOAD_MEMORY = ("weights", "kv_cache", "training_states", "activations", "inference_peak", "training_peak")


def memory_kinds(mdl: Component) -> tuple[str, ...]:
    """The memory kinds ``workload()`` shows for the model ``mdl``: :data:`WORKLOAD_MEMORY`, and
    ``state_cache`` where some layer holds a per-sequence state (a Gated DeltaNet).

    >>> memory_kinds(model())[-1]
    'training_peak'
    """
    return WORKLOAD_MEMORY + (("state_cache",) if mdl.total("state_cache") != 0 else ())


#: the memory kinds ``workload()`` shows per GPU under ``tp``/``pp``/``dp`` (symllm.costs.parallel)
PER_GPU_MEMORY = ("weights", "kv_cache", "training_states", "activations")
#: the peaks ``workload()`` shows per GPU too: what the fit verdicts compare with the accelerator's memory
PER_GPU_PEAKS = ("inference_peak", "training_peak")


#: (id of a model component, a workload's shape) -> (the component, its composed quantities): building
#: them is most of a first workload()'s time (the per-GPU forms of a large MoE: most of a second)
_COMPOSED: dict[tuple, tuple] = {}


def quantities(mdl: Component, work: Workload) -> dict[str, dict[str, sp.Expr]]:
    """The closed forms behind :func:`workload`: ``{"flops": {...}, "memory": {...}}`` for the model
    component ``mdl`` under ``work``'s training options (``recompute``, ``zero_stage``); what
    :func:`workload` evaluates, and what a sweep compiles.

    >>> sorted(quantities(model(), Workload())["memory"])
    ['activations', 'inference_peak', 'kv_cache', 'training_peak', 'training_states', 'weights']

    The per-GPU groups (``params.per_gpu``, ``memory_per_gpu``, ``comm``; :mod:`symllm.costs.parallel`) are
    built only for a parallel layout (:func:`symllm.costs.parallel.laid_out`); on one GPU they are the whole
    model's and no bytes are sent. ``mdl`` is laid out as the workload's inference engine lays it out
    (:func:`model_of`); the training quantities (:data:`~symllm.costs.workloads.TRAINING_MEMORY` per GPU, the
    bytes sent) are those of the model as its training engine lays it out (:func:`symllm.costs.layouts.kind_layout`).
    """
    checks.check(mdl, work)
    key = (id(mdl), work.shape())
    hit = _COMPOSED.get(key)
    if hit is not None and hit[0] is mdl:
        return hit[1]
    out = _compose(mdl, work)
    if len(_COMPOSED) >= 512:
        _COMPOSED.clear()
    _COMPOSED[key] = (mdl, out)  # holding mdl keeps its id from being reused
    return out


def _compose(mdl: Component, work: Workload) -> dict[str, dict[str, sp.Expr]]:
    """:func:`quantities`, built: reads only what :meth:`Workload.shape` holds; under LoRA with the LoRA
    numbers in (:func:`_with_lora`)."""
    train = parallel.layout(mdl, kind_layout(work.engine, "training"))  # (mdl itself where the kinds' layouts agree)
    out = _compose_model(mdl, work)
    if train is not mdl:  # the training quantities as the training engine lays the model out
        trained = _compose_model(train, work)
        out["memory_per_gpu"].update({k: trained["memory_per_gpu"][k] for k in TRAINING_MEMORY
                                      if k in out["memory_per_gpu"]})
        out["comm"] = trained["comm"]
    out = {group: {k: logit_rows(e, work.logits) for k, e in terms.items()} for group, terms in out.items()}
    return out if work.lora_rank is None else _with_lora(out, finetune.closed_forms(train, work))


def _with_lora(out: dict, lora: dict) -> dict:
    """The quantities of a LoRA (QLoRA) fine-tuning: ``params.trainable`` and ``memory.lora_*``
    (:func:`symllm.costs.finetune.closed_forms`), and the training peak is LoRA's (``lora_total``, in
    ``memory`` and ``memory_per_gpu``: the fit verdicts and the largest batch read it; LoRA's memory is one
    GPU's, not divided over a layout: an upper bound per GPU); full fine-tuning's stays as
    ``memory.full_finetune_peak``."""
    memory = {}
    for kind, expr in out["memory"].items():
        memory[kind] = lora["lora_total"] if kind == "training_peak" else expr
        if kind == "training_peak":
            memory["full_finetune_peak"] = expr
    memory.update({k: lora[k] for k in finetune.MEMORY_KEYS})
    return {**out, "params": {**out["params"], "trainable": lora["trainable_params"]}, "memory": memory,
            "memory_per_gpu": {**out["memory_per_gpu"], "training_peak": lora["lora_total"]}}


def _compose_model(mdl: Component, work: Workload) -> dict[str, dict[str, sp.Expr]]:
    """The model's own quantities (full fine-tuning's training peak)."""
    out = {
        "flops": {k: flops(mdl, phase, bucket=bucket, recompute=recompute_of(work))
                  for k, (phase, bucket) in WORKLOAD_FLOPS.items()},
        "memory": {kind: memory(mdl, kind, zero_stage=work.zero_stage, recompute=recompute_of(work), stack=work.stack,
                                optimizer=work.optimizer)
                   for kind in memory_kinds(mdl)},
    }
    laid = parallel.laid_out(work)
    if not laid or work.stack not in COMPONENT_STACKS:
        # one GPU: the whole model (the workload's stack), nothing sent; an HF stack is laid out only by data
        # parallelism (Workload refuses tp, pp and ep with it): every rank holds the whole model, and the
        # model's own figures are already ZeRO-sharded over N_d
        comm = parallel.workload_comm(mdl, work) if laid else {kind: sp.S.Zero for kind in parallel.comm_kinds(mdl)}
        return {"params": {"per_gpu": mdl.closed_form("params")}, **out,
                "memory_per_gpu": {kind: out["memory"][kind] for kind in _per_gpu_kinds(out["memory"])},
                "comm": comm}
    stages = parallel.stages(mdl, work.sp, work.expert_tp)  # what rank 0 of the first and the last stage holds
    return {"params": {"per_gpu": parallel.params_per_gpu(mdl, work.sp, experts=work.expert_tp)}, **out,
            "memory_per_gpu": {kind: parallel.largest(*(stage_memory(stages, i, kind, work.zero_stage,
                                                                     recompute_of(work), work.stack, work.optimizer)
                                                        for i in range(len(stages))))
                               for kind in _per_gpu_kinds(out["memory"])},
            "comm": parallel.workload_comm(mdl, work)}


def _per_gpu_kinds(memory_: dict) -> tuple[str, ...]:
    """The memory kinds given per GPU: :data:`PER_GPU_MEMORY`, the state cache where a model has one (one
    sequence's recurrent and convolution states on tensor rank 0: what serving reserves a sequence), the peaks;
    the KV cache among them is rank 0's keys and values in the layout (what serving pages a token)."""
    return PER_GPU_MEMORY + (("state_cache",) if "state_cache" in memory_ else ()) + PER_GPU_PEAKS


def stage_memory(stages: tuple, i: int, kind: str, zero_stage: int = 0, recompute: bool | str = False,
                 stack: str = "fused", optimizer: str = "adamw") -> sp.Expr:
    """Bytes of ``kind`` (:data:`PER_GPU_MEMORY`, :data:`PER_GPU_PEAKS`) that tensor rank 0 of pipeline stage
    ``stages[i]`` holds (:func:`symllm.costs.parallel.stages`: the first, then the last): the per-GPU figures
    of :func:`quantities` are the largest over the stages. The training peak is the stage's states,
    activations and, on the stage holding the head, the logits' gradient (:mod:`symllm.costs.loss_memory`); the
    local experts' states shard over the ``N_d/N_e`` ranks that hold the same experts, the rest over ``N_d``
    (DeepSpeed's expert and non-expert groups, each rank 0's padded share).

    >>> st = parallel.stages(model())
    >>> stage_memory(st, 1, "weights")  # doctest: +NORMALIZE_WHITESPACE
    beta_w*(d*ceiling(V/N_t) + d + (3*d*ceiling(d_ff/N_t) + 2*d*ceiling(d_h*n_h/N_t) + 2*d*ceiling(d_h*n_kv/N_t)
    + 2*d)*floor(L/N_p))
    """
    st = stages[i]
    if kind == "training_peak":
        return (stage_memory(stages, i, "training_states", zero_stage, recompute, stack, optimizer)
                + stage_memory(stages, i, "activations", zero_stage, recompute, stack, optimizer)
                + logits_memory(st, per_rank=True)["gradient"])
    mem = memory(st, kind, zero_stage=zero_stage, recompute=recompute, stack=stack, optimizer=optimizer)
    experts = parallel.expert_params(st)
    if kind != "training_states" or experts == 0:
        return mem
    opt = dict(zero_stage=zero_stage, optimizer=optimizer)
    frozen = sp.expand(st.total("params") - st.trained().total("params"))  # no gradient: their weights only
    no_grad = (Component("no_grad", params=frozen, rules=Rules(no_grad=True)),) if frozen != 0 else ()
    own = memory(Component("local_experts", params=experts), kind, **opt)
    whole = memory(Component("stage", params=st.total("params") - frozen, children=no_grad), kind, **opt)
    rest = memory(Component("rest", params=st.total("params") - experts - frozen, children=no_grad), kind, **opt)
    return mem - whole + rest + substitute(own, {S.N_d: S.N_d / S.N_e})


def workload(config, work: Workload | None = None, *, largest: bool = True, **options) -> dict:
    """Exact FLOPs and bytes of a workload on ``config``: ``{"workload", "flops", "memory"}``.

    ``work`` is a :class:`Workload`, or give its options by name (``batch`` 1, ``seq`` 2048, ``gen`` 0,
    ``context`` (default ``seq``), ``dtype`` bf16, ``attention`` dense, ``zero_stage`` 0, ``dp`` 1,
    ``recompute``, ``group_size`` 128, ...). ``config``: a preset name, a config.json path or folder, a
    :class:`~symllm.arch.config.ModelConfig` or a config.json's dict; its ``quantization_config`` sets
    ``weight_format`` (``weight_format`` in the output says where it was read; one given overrides it).

    ``flops``: ``prefill`` (``batch`` prompts of ``seq`` tokens, the logits of ``logits``' positions: the last by
    default), ``decode_token`` (one
    step with ``context`` tokens cached), ``generation`` (prefill + ``gen`` steps), ``training_step``
    (forward + backward over ``batch × seq``) — matmuls only — and ``elementwise`` (the prefill's
    element-wise bucket). ``memory``: ``weights`` (``dtype``), ``kv_cache`` (``kv_dtype``, for
    ``seq + gen`` tokens), ``training_states`` (ZeRO ``zero_stage`` over ``dp`` ranks, per rank),
    ``activations`` (``act_dtype``) and ``inference_peak``. Exact: ints, or a ``Fraction`` where a byte
    count is not integral (int4). With ``gpu`` (a name in :data:`symllm.costs.accelerators.GPUS`) a ``time`` group
    too: roofline ``prefill_s``, ``decode_token_s``, ``tokens_per_s``, ``fits``, ``max_batch``, ...
    (:func:`symllm.costs.hardware.roofline`; a time whose verdict is "does not fit" is None, and
    ``assumes`` says what each verdict assumes). A ``seq + gen`` past the positions the model was trained
    for is counted with a :class:`~symllm.errors.ContextWarning`; a layout that cannot run (``tp`` not
    dividing the heads) is refused (:mod:`symllm.costs.checks`). ``tp_layout`` and ``training_tp_layout``, where a
    part declares an engine's own split (DeepSeek-V4, the vocabulary under MLC): the layout the inference and the
    training per-GPU figures are in, "transformers" (its tp plan) or the engine's name
    (:func:`symllm.costs.layouts.tp_layouts`). ``largest`` False: the ``time`` group without the largest batch,
    context and sequence that fit (a search each: :func:`symllm.costs.hardware.roofline_numbers`).

    >>> w = workload("llama3.1-405b", seq=131072, kv_dtype="bf16")
    >>> w["memory"]["kv_cache"] == 2 * 126 * 8 * 128 * 2 * 131072
    True
    """
    from symllm.numbers.kernels import table
    from symllm.numbers.runtime import Numbers

    spec, work = resolved_workload(config, work, **options)
    mdl = model_of(spec, work)
    key = (id(mdl), work.shape(), accelerators.of(work) is not None)
    hit = _FORMS.get(key)
    if hit is None or hit[0] is not mdl:
        forms, groups = workload_forms(spec, work)
        if len(_FORMS) >= 512:
            _FORMS.clear()
        declares = declares_layout(spec, work)
        hit = _FORMS[key] = (mdl, forms, groups, table(forms, grouped(forms, groups)), declares)  # mdl held: id kept
    _, forms, groups, compiled, declares = hit
    return workload_numbers(work, Numbers(compiled, named(spec, work)), groups, weight_format_group(spec, work),
                            window=spec.config.max_positions, declares=declares, largest=largest)


#: (id of the model component, the workload's shape, whether an accelerator is asked) -> (the component,
#: :func:`workload_forms`' forms and groups, their compiled table, whether a part declares an engine's split): a
#: warm workload() only evaluates
_FORMS: dict[tuple, tuple] = {}


#: (id of a spec, a workload that passed :func:`symllm.costs.checks.check` on it) -> the spec: a warm
#: workload() checks a (config, workload) pair once
_CHECKED: dict[tuple, object] = {}


def resolved_workload(config, work: Workload | None = None, **options) -> tuple:
    """``(spec, workload)`` as :func:`workload` counts them: the config's stated weight format applied
    (a quantized config.json's ``quantization_config``, unless ``weight_format`` is given), the workload
    checked against the model (one line) and a context past the model's window flagged."""
    spec = resolved.spec(config)
    work = with_stated(Workload.of(work, **options), spec.config)
    key = (id(spec), work)  # frozen workload, compared by value
    try:
        hit = _CHECKED.get(key)
    except TypeError:  # an option that cannot be hashed (accelerator figures given as a dict): checked each time
        key = hit = None
    if hit is None or hit is not spec:
        checks.check(spec, work)  # raises: nothing kept
        if key is not None:
            if len(_CHECKED) >= 1024:
                _CHECKED.clear()
            _CHECKED[key] = spec  # spec held: its id is not reused
    checks.warn_past_window(spec, work.seq + work.gen)
    return spec, work


def declares_layout(spec, work: Workload) -> dict:
    """Whether ``work``'s output names the layouts its per-GPU figures are in (:func:`symllm.costs.layouts.tp_layouts`),
    and how: where a part declares its own split under either kind's engine
    (:func:`symllm.costs.parallel.declares_split`, on the model before an engine's layout), by kind whether its engine
    lays the model out otherwise than the plan (:func:`symllm.costs.parallel.layout`); else ``{}``, no name.

    >>> llama = resolved.spec("llama3.1-8b")
    >>> declares_layout(llama, Workload()), declares_layout(llama, Workload(engine="mlc"))
    ({}, {'inference': True, 'training': False})
    """
    mdl = spec.model(work.attention)
    laid = {kind: kind_layout(work.engine, kind) for kind in ("inference", "training")}
    if not any(parallel.declares_split(mdl, engine) for engine in laid.values()):
        return {}
    return {kind: parallel.layout(mdl, engine) is not mdl for kind, engine in laid.items()}


def layout_of(spec, work: Workload, kind: str = "inference") -> str | None:
    """The tensor-parallel layout ``work``'s per-GPU figures of ``kind`` (inference, training) are in, as outputs name
    it (``tp_layout``, ``training_tp_layout``: :func:`symllm.costs.layouts.tp_layouts`); None where none is named.

    >>> dsv4, llama = resolved.spec("deepseek-v4-flash-base"), resolved.spec("llama3.1-8b")
    >>> layout_of(dsv4, Workload()), layout_of(dsv4, Workload(engine="vllm")), layout_of(llama, Workload())
    ('transformers', 'vllm', None)
    >>> layout_of(dsv4, Workload(engine="vllm"), "training"), layout_of(llama, Workload(engine="mlc"), "training")
    ('transformers', 'transformers')
    >>> layout_of(resolved.spec("deepseek-v3"), Workload(), "training")   # MLA's down-projections: Megatron-Core's
    'megatron'
    """
    declares = declares_layout(spec, work)
    return tp_layout(kind_layout(work.engine, kind) if declares.get(kind) else None, bool(declares))


def model_of(spec, work: Workload, kind: str = "inference", *, definitions: bool = True):
    """The model ``work`` counts: ``spec``'s under the workload's attention, each part split as its engine of
    ``kind`` lays it out (:func:`symllm.costs.layouts.kind_layout`, :func:`symllm.costs.parallel.layout`; no engine:
    transformers' plan). :func:`quantities` of the inference one holds the training quantities of the training one,
    laid out again from the same model. ``definitions=False``: without the model's definitions (a sweep's ``d_ff``
    stays a symbol), before the layout, so that the training one has none either.

    >>> spc = resolved.spec("deepseek-v4-flash-base")
    >>> model_of(spc, Workload()) is spc.model(), model_of(spc, Workload(engine="vllm")) is spc.model()
    (True, False)
    >>> model_of(spc, Workload(engine="vllm"), "training") is spc.model()
    True
    """
    mdl = spec.model(work.attention)
    return parallel.layout(mdl if definitions else mdl.replace(definitions=()), kind_layout(work.engine, kind))


def workload_forms(spec, work: Workload) -> tuple[dict, tuple]:
    """``(forms, groups)``: every closed form :func:`workload_numbers` reads, by name (``flops.prefill``,
    ``memory.weights``, ...: each group of :func:`quantities` (``groups``, in order), and with an accelerator
    the roofline's, :func:`symllm.costs.hardware.roofline_forms`). They depend on the model's structure and
    the workload's shape only; a count at another point of that shape evaluates the same forms.

    >>> forms, groups = workload_forms(resolved.spec("llama3.2-1b"), Workload())
    >>> groups, forms["memory.kv_cache"]
    (('params', 'flops', 'memory', 'memory_per_gpu', 'comm'), 2*L*b*beta_kv*d_h*n_kv*(n + s))
    """
    mdl = model_of(spec, work)
    exprs = quantities(mdl, work)
    forms = {f"{group}.{k}": e for group, terms in exprs.items() for k, e in terms.items()}
    if accelerators.of(work) is not None:  # fit and time on the accelerator (not a sweep quantity: floats, a search)
        forms.update(hardware.roofline_forms(mdl, work, exprs, flops, spec=spec))
    return forms, tuple(exprs)
