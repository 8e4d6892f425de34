"""Named software stacks: which tensors a real stack saves for backward and keeps live, in which dtype.

symllm's own memory model is the component tree's (each component's ``saved``, ``resident`` and ``live`` in
:mod:`symllm.arch.components`), every activation in ``β_a``, in two stacks (:data:`COMPONENT_STACKS`):

* ``fused`` (the default): a fused attention kernel (FlashAttention, SDPA's flash or memory-efficient
  kernel) that never materialises the ``s²`` scores: its forward keeps the output and one fp32 log-sum-exp
  per query and head, its backward recomputes the scores tile by tile;
* ``eager``: an unfused attention core (``softmax(QKᵀ)V`` as separate ops): the ``b·n_h·s²``
  probabilities saved for backward, the scores and probabilities live at inference (each component's
  ``eager_saved`` and ``eager_live``).

People often run transformers' ``LlamaForCausalLM``, which saves and holds more, and in fp32 in places. A
stack states, per component and in closed form, what that code keeps, each with its one-line reason; the
component declares it (``Rules.stacks``: its rule in :mod:`symllm.arch.keeps`) and this module walks the model
and adds the terms up (per layer inside the groups of layers, from their repeats; once where a term says so):

* ``hf-eager``: ``LlamaForCausalLM`` with ``attn_implementation="eager"``;
* ``hf-sdpa``: the same with ``"sdpa"`` (``F.scaled_dot_product_attention``; what is stated is what its
  flash kernel saves: ``_scaled_dot_product_flash_attention_for_cpu`` on the CPU, measured, and the CUDA
  flash kernel's inputs, output and fp32 log-sum-exp likewise).

Inference runs in the workload's dtype (``model.to(dtype)``, ``torch.no_grad()``, ``use_cache=True``,
logits at every position: a plain forward, what was measured, so an HF stack's inference peak holds every
position's logits whatever ``--logits`` says; the FLOPs and bytes moved follow ``--logits``). Training runs under
``torch.autocast(dtype=torch.bfloat16)`` (2 bytes per low-precision element, whatever ``--act-dtype`` says) with fp32
master weights, fp32 gradients and ``torch.optim.AdamW`` (two fp32 moments), and the loss on the fp32-upcast logits
(transformers' ``ForCausalLMLoss``). ``recompute`` is transformers' gradient checkpointing (one checkpoint per decoder
layer: its fp32 input).

The training step's peak (:func:`training_peak`) is the largest of the step's moments
(:func:`training_terms`: the forward's end, the backward's start, the optimizer step, inside the first and the
last layer), each a closed form over the same tensors, on top of the fp32 weights and AdamW's moments.

Where the numbers come from: transformers 5.23.0's ``modeling_llama.py`` (read) and what it does on the
CPU (measured by ``tests/test_stacks.py``: ``torch.autograd.graph.saved_tensors_hooks``, deduplicated by
storage and without the parameters themselves, for saved bytes; ``MemTracker`` for inference peaks; and by
``tests/test_training_peak.py``: ``MemTracker`` over a steady-state training step for training peaks).

>>> import sympy as sp
>>> from symllm.arch.components import model
>>> sp.expand(activations(model(), "hf-sdpa") - activations(model(), "hf-eager")).coeff(S.s, 2)
-6*L*b*n_h
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import sympy as sp

from symllm.arch.algebra import factored, maximum, substitute
from symllm.arch import symbols as S
from symllm.arch.dtypes import BF16, FP32, INT64
from symllm.arch.keeps import Keeps, Term
from symllm.costs import selective, zero
from symllm.costs.workloads import COMPONENT_STACKS, check_stack
from symllm.errors import SymllmError
from symllm.validate import ROOM, choice, listed

if TYPE_CHECKING:  # a warm `symllm count` imports workload (and so workloads.STACKS) without building components
    from symllm.arch.components import Component

__all__ = ["check_model", "is_whole",
           "saved_terms", "inference_terms", "activations", "inference_peak", "component_activations",
           "training_states", "training_terms", "training_peak", "training_peak_parts", "moments"]


_T = S.b * S.s            # token rows
_LOW = BF16               # bytes of autocast's bf16/fp16 copies
_FP32 = FP32
_INDEX = INT64            # int64 token ids and labels
_P_BLOCK = sp.Symbol("P_block", positive=True)  # one block's parameters (training_peak substitutes them)
_P_LARGEST = sp.Symbol("P_largest", positive=True)  # the largest parameter tensor's elements (likewise)


@lru_cache(maxsize=256)
def component_activations(comp: Component, recompute: bool | str, eager: bool = False) -> sp.Expr:
    """Bytes a training forward saves for backward in the component stacks (:data:`COMPONENT_STACKS`): every
    component's ``saved`` (``eager``: its ``eager_saved`` where it declares one); with ``recompute`` the
    checkpoints plus one checkpointed component's activations and what lies outside them
    (:func:`symllm.costs.phases.activations` states the convention; :mod:`symllm.costs.finetune` reads it for
    the adapted model).

    >>> from symllm.arch.components import feed_forward
    >>> component_activations(feed_forward(), False)
    beta_a*(b*d*s + 3*b*d_ff*s)
    """
    saved = "eager_saved" if eager else "saved"
    if not recompute:
        return comp.total(saved)
    # a checkpoint keeps its input; op checkpointing (symllm.costs.selective) the outputs its policy saves too
    keeps = (lambda c: c.checkpoint + selective.saved(c)) if recompute == "op" else (lambda c: c.checkpoint)
    if comp.checkpoint != 0:
        return comp.repeat * keeps(comp)
    checkpointed = [c for c in comp.children if c.checkpoint != 0]
    if not checkpointed:
        what = "op checkpointing" if recompute == "op" else "full recomputation"
        raise SymllmError(f"recompute: {what} checkpoints blocks; component {comp.name!r} is not one")
    kept = sum((c.repeat * keeps(c) for c in checkpointed), sp.S.Zero)
    once = maximum(*(c.replace(repeat=1).total(saved) for c in checkpointed))
    outside = sum((c.total(saved) for c in comp.children if c.checkpoint == 0), comp.own(saved))
    return comp.repeat * (kept + once + outside)


def check_model(stack: str, mdl: Component | None = None) -> None:
    """Refuse, in one line, a ``stack`` that does not model ``mdl`` (a whole model: every part of it; a
    part of one: only the component stacks) (:func:`symllm.costs.checks.check_structure` asks it)."""
    check_stack(stack)
    if mdl is None or stack in COMPONENT_STACKS:
        return
    if not is_whole(mdl):
        raise SymllmError(f"stack: {stack} is modelled for the whole model, not for {mdl.name!r}")
    missing = list(dict.fromkeys(c.rules.label or c.name for c in _unmodelled(mdl, stack)))
    if missing:
        names = missing if len(", ".join(missing)) <= 50 else [m.split(" (")[0] for m in missing]  # the labels' names
        start = f"stack: {stack} does not model "
        whole = ", ".join(names)
        if len(start + whole + " yet") <= ROOM:
            raise SymllmError(f"{start}{whole} yet")
        raise SymllmError(start + listed(names, ROOM - len(start), see=None))  # whole names, and how many more


def is_whole(mdl: Component) -> bool:
    """Whether ``mdl`` is a whole model: it holds the groups of layers (each a recomputation checkpoint).

    >>> from symllm.arch.components import model
    >>> is_whole(model()), is_whole(model().children[1])
    (True, False)
    """
    return any(c.checkpoint != 0 for c in mdl.children)


def _unmodelled(comp: Component, stack: str):
    """The outermost components of ``comp`` whose rules do not name ``stack`` among the stacks that state
    what they keep for them (a component declaring none is refused by every named stack).

    >>> from symllm.arch.components import LayerKind, model
    >>> [c.name for c in _unmodelled(model(kinds=(LayerKind(ffn="moe"),)), "hf-sdpa")]
    ['moe']
    """
    if stack not in (comp.rules.stacks or ()):
        yield comp
        return
    for c in comp.children:
        yield from _unmodelled(c, stack)


@dataclass(frozen=True)
class _Kept:
    """What ``stack`` keeps for one component of a model, and where the walk found it."""

    #: its path in the model ("block/attention"), the label of its terms
    path: str
    #: its rule's closed forms (symllm.arch.keeps.Keeps)
    keeps: Keeps
    #: how many times the model holds it (the repeats above it and its own: L inside the layers)
    times: sp.Expr
    #: the group of layers it sits in (a component the model repeats, a recomputation checkpoint); None: outside
    layer: Component | None

    def terms(self, kind: str) -> tuple[Term, ...]:
        """Its ``saved``, ``resident`` or ``moments`` terms, labelled with its path where they name none."""
        return tuple(t if t.component else dataclasses.replace(t, component=self.path)
                     for t in getattr(self.keeps, kind))

    def count(self, term: Term) -> sp.Expr:
        """How many of ``term`` the model holds: one per occurrence, or one (``per`` "once", "input")."""
        return self.times if term.per == "each" else sp.S.One


def _walk(mdl: Component, stack: str) -> list[_Kept]:
    """What ``stack`` keeps for every component of ``mdl`` (each declares it: ``Rules.stacks``), in model order.

    >>> from symllm.arch.components import model
    >>> [(k.path, k.times) for k in _walk(model(), "hf-sdpa")][:3]
    [('model', 1), ('embedding', 1), ('block', L)]
    """
    check_model(stack, mdl)
    out = []

    def visit(c, path, times, layer):
        times = times * c.repeat
        layer = c if layer is None and c.checkpoint != 0 else layer
        out.append(_Kept(path or c.name, c.rules.stacks[stack](stack), times, layer))
        for child in c.children:
            visit(child, f"{path}/{child.name}" if path else child.name, times, layer)

    visit(mdl, "", sp.S.One, None)
    return out


def _default(mdl: Component | None) -> Component:
    from symllm.arch.components import model  # LLaMA's, as LlamaForCausalLM has it

    return model() if mdl is None else mdl


def _hf_only(stack: str, what: str, where: str) -> None:
    check_stack(stack)
    if stack in COMPONENT_STACKS:
        raise SymllmError(f"stack: {stack}'s {what} (phases.{where})")


def saved_terms(stack: str, mdl: Component | None = None) -> tuple[Term, ...]:
    """What a training step's forward saves for backward under ``stack`` (``hf-eager``, ``hf-sdpa``), for
    ``mdl`` (default: LLaMA's model), each component's in model order (``per``: how many the model holds).

    >>> [t.component for t in saved_terms("hf-sdpa")][:3]
    ['embedding', 'block/attention_norm', 'block/attention']
    """
    _hf_only(stack, "saved bytes are the components' own", "activations")
    return tuple(t for k in _walk(_default(mdl), stack) for t in k.terms("saved"))


def inference_terms(stack: str, mdl: Component | None = None) -> tuple[tuple[Term, ...], tuple[Term, ...]]:
    """``(resident, moments)`` of a prefill that returns every logit, for ``mdl`` (default: LLaMA's model):
    bytes held while the layers run (besides weights and KV cache; the token ids, ``per="input"``, are held
    throughout) and the candidates for the largest transient set (one moment at a time; a moment outside the
    layers, the ``lm_head``'s, comes after the layers' residents are freed).

    >>> [t.component for t in inference_terms("hf-eager")[1]][:3]
    ['block/attention/rope', 'block/attention/scores', 'block/attention/context']
    """
    _hf_only(stack, "working set is the components' own", "memory")
    kept = _walk(_default(mdl), stack)
    return (tuple(t for k in kept for t in k.terms("resident")), tuple(t for k in kept for t in k.terms("moments")))


def activations(mdl: Component, stack: str, recompute: bool = False) -> sp.Expr:
    """Bytes a training forward saves for backward under ``stack`` (an HF stack); with ``recompute``
    (gradient checkpointing) the peak during backward: each layer's checkpoint, one layer's saved tensors
    recomputed, and what lies outside the layers.

    >>> from symllm.arch.components import model
    >>> sp.expand(activations(model(), "hf-eager", recompute=True)).coeff(S.L)
    4*b*d*s
    """
    kept = _walk(mdl, stack)
    if not recompute:
        return sum((k.count(t) * t.bytes for k in kept for t in k.terms("saved")), sp.S.Zero)
    in_layer = lambda k, t: k.layer is not None and t.per == "each"  # noqa: E731
    groups = list(dict.fromkeys(k.layer for k in kept if k.layer is not None))
    checkpoints = sum((k.times * k.keeps.checkpoint for k in kept if k.keeps.checkpoint != 0), sp.S.Zero)
    one = maximum(*(sum((t.bytes for k in kept if k.layer is g for t in k.terms("saved") if in_layer(k, t)),
                       sp.S.Zero) for g in groups))
    rest = sum((k.count(t) * t.bytes for k in kept for t in k.terms("saved") if not in_layer(k, t)), sp.S.Zero)
    return checkpoints + one + rest


def inference_peak(mdl: Component, stack: str) -> sp.Expr:
    """Weights, the KV cache after ``s + n`` tokens, what a prefill holds throughout and its largest
    moment, under ``stack`` (an HF stack).

    >>> from symllm.arch.components import model
    >>> inference_peak(model(), "hf-sdpa").has(S.beta_w, S.beta_kv)
    True
    """
    kept = _walk(mdl, stack)
    kv = S.beta_kv * factored(mdl.total("kv_cache").subs(S.t, S.n))
    resident = [(k, t) for k in kept for t in k.terms("resident")]
    inputs = sum((t.bytes for _, t in resident if t.per == "input"), sp.S.Zero)  # the ids stay to the end
    held = sum((k.count(t) * t.bytes for k, t in resident if t.per != "input"), sp.S.Zero)
    layers = [held + t.bytes for k in kept if k.layer is not None for t in k.terms("moments")]
    after = [t.bytes for k in kept if k.layer is None for t in k.terms("moments")]
    return S.beta_w * mdl.total("params") + kv + inputs + maximum(*layers, *after)


def training_states(mdl: Component, stack: str, zero_stage: int = 0, optimizer: str = "adamw") -> sp.Expr:
    """Per data-parallel rank: fp32 master weights 4N, fp32 gradients 4N, AdamW's two fp32 moments 8N;
    ZeRO stage 1 shards the moments over ``N_d`` ranks, 2 also the gradients, 3 also the weights.

    >>> from symllm.arch.components import model
    >>> N = model().total("params")
    >>> training_states(model(), "hf-eager", 1) == 8 * N + 8 * sp.ceiling(N / S.N_d)   # rank 0's padded shard
    True
    """
    check_model(stack, mdl)
    return zero.optimizer_states(mdl, zero_stage, optimizer, master=False)  # other optimizers: symllm.costs.zero


# --------------------------------------------------------------------------- the training step's peak

def training_terms(stack: str, recompute: bool = False, zero_stage: int = 0,
                   optimizer: str = "adamw", mdl: Component | None = None) -> tuple[Term, ...]:
    """The candidates for the highest point of one steady-state training step under ``stack`` (``hf-eager``,
    ``hf-sdpa``) for ``mdl`` (default: LLaMA's model): each Term is everything live at that moment except the
    fp32 master weights and AdamW's moments ``8N`` (held throughout). ``component`` names the moment; ``N`` counts
    the parameters that get a gradient (all but a part that runs forward only, whose weights alone are held).

    The loop (docs/stacks.md, "Training peak"): ``optimizer.zero_grad(set_to_none=True)``; ``loss =
    model(input_ids=ids, labels=labels).loss`` under autocast (the output, with its logits and KV cache,
    dropped before backward, as transformers' Trainer does); ``loss.backward()``; ``optimizer.step()`` with
    torch's default on a GPU, ``foreach`` AdamW. The batch (int64 ids and labels, ``16·b·s``) is held
    throughout. Step 2 onwards: the moments exist; the gradients of the previous step were freed. ZeRO
    shards as :func:`training_states` does (the optimizer step's gradients from stage 2, its temporary from
    stage 1); the backward's gradients are counted whole, as they are produced. The moments inside a layer
    are its components' (``Keeps.steps``), in model order, each in the last and in the first layer.

    >>> [t.component for t in training_terms("hf-eager")][:5]
    ['forward end', 'backward start', 'optimizer step', 'last layer forward', 'last layer backward']
    >>> [t.component for t in training_terms("hf-eager")][5:]
    ['first layer backward', 'last layer MLP backward', 'first layer MLP backward']
    >>> len(training_terms("hf-sdpa", recompute=True)), len(training_terms("hf-eager", recompute=True))
    (7, 11)
    """
    _hf_only(stack, "training peak is a convention", "memory), not moments (")
    kept = _walk(_default(mdl), stack)
    groups = list(dict.fromkeys(k.layer for k in kept if k.layer is not None))
    if len(groups) != 1:  # every kind of layer but LLaMA's refuses these stacks (symllm.arch.keeps)
        raise SymllmError(f"stack: {stack} models one group of identical layers, not {len(groups)}")
    group = groups[0]
    T, d, n_kv, d_h, V, L = _T, S.d, S.n_kv, S.d_h, S.V, group.repeat
    saved = [(k, t) for k in kept for t in k.terms("saved")]
    # a layer's saves (its components', one each); what every layer shares (RoPE's table); what lies outside
    block = sum((t.bytes for k, t in saved if k.layer is group and t.per == "each"), sp.S.Zero)
    shared = sum((t.bytes for k, t in saved if k.layer is group and t.per != "each"), sp.S.Zero)
    checkpoint = sum((k.keeps.checkpoint for k in kept if k.layer is group), sp.S.Zero)
    # the forward's saved bytes: every block (or, with recompute, its fp32 input: one checkpoint a layer)
    # and what lies outside the blocks; the int64 ids the embedding saves are the batch's (counted there)
    layers = L * (checkpoint if recompute else block)
    outside = shared + sum((t.bytes for k, t in saved if k.layer is None and t.per != "input"), sp.S.Zero)
    batch = 2 * _INDEX * T
    kv = 0 if recompute else 2 * _FP32 * L * T * n_kv * d_h
    N = S.N
    grads = zero.share(N, S.N_d) if zero.sharded("gradients", zero_stage) else N  # rank 0's padded shard
    # the step's temporary (symllm.costs.zero.step_temporary): foreach AdamW's copy of a moment by default
    temp = zero.step_temporary(optimizer, zero.share(N, S.N_d) if zero.sharded("optimizer", zero_stage) else N,
                               _P_LARGEST)
    out = [
        Term("forward end", batch + layers + outside + kv + (_LOW + _FP32) * T * V + _FP32 * T * d
             + _INDEX * S.b * (S.s + 1),
             "at nll_loss: the saved activations; still referenced, the bf16 logits (LlamaForCausalLM's "
             "`logits`) and their fp32 copy (ForCausalLMLoss's), the final norm's fp32 output, the padded "
             "labels, and (without recompute: use_cache defaults to True) the DynamicCache's K and V, fp32 "
             "(RoPE upcasts k; v is cat onto k's fp32 empty tensor)"),
        Term("backward start", batch + layers + outside - _INDEX * T + 2 * _FP32 * T * V,
             "at log_softmax's backward: the saved activations (nll_loss's labels released) and two fp32 "
             "b·s × V gradients, nll_loss's output and log_softmax's input's"),
        Term("optimizer step", batch + _FP32 * (grads + temp),
             "in the optimizer's step: the fp32 gradients and its temporary (foreach AdamW, torch's default on a "
             "GPU: _foreach_sqrt(exp_avg_sq), a fp32 copy of every moment); activations all freed"),
    ]
    # Inside a layer. Going down the backward, each layer frees its saves and adds its fp32 gradients, so a
    # moment inside a layer is highest in the last layer (the layers below still saved) or in the first (the
    # gradients of all above made): both are candidates. With recompute every layer runs its forward again
    # there, after the head's backward, with only the fp32 inputs (and what the layers declare held: eager's
    # mask) of the layers below held.
    head_grads = _FP32 * (V * d + d)  # lm_head's (tied: the shared table's) and the final norm's
    again = sum((k.keeps.held for k in kept), sp.S.Zero) if recompute else 0
    ends = {"last": ((L - 1) * (checkpoint if recompute else block), sp.S.Zero),
            "first": (sp.S.Zero, (L - 1) * _FP32 * _P_BLOCK)}
    held = batch + shared + head_grads + _FP32 * T * d + again  # residual's gradient
    before = sp.S.Zero  # the layer's saves made before the component walked
    for k in kept:
        if k.layer is not group:
            continue
        for step in k.keeps.steps:
            if step.recompute is not None and step.recompute != bool(recompute):
                continue
            if step.forward:  # in the forward itself, the last layer: its KV cache held, no gradients
                out.append(Term(f"last layer {step.name}", batch + ends["last"][0] + shared + kv + before + step.bytes,
                                step.reason.format(where="last")))
                continue
            for where, (below, above) in ends.items():
                out.append(Term(f"{where} layer {step.name}", held + below + above + before + step.bytes,
                                step.reason.format(where=where)))
        before += sum((t.bytes for t in k.terms("saved") if t.per == "each"), sp.S.Zero)
    return tuple(out)


def training_peak(mdl: Component, stack: str, recompute: bool = False, zero_stage: int = 0,
                  optimizer: str = "adamw") -> sp.Expr:
    """The highest point of one steady-state training step under ``stack`` (an HF stack): fp32 master
    weights ``4N`` and the optimizer's states (AdamW's moments ``8N``; ZeRO-sharded as :func:`training_states`
    shards them), plus the largest of :func:`training_terms`' moments.

    >>> from symllm.arch.components import model
    >>> peak = training_peak(model(tied=True), "hf-sdpa")
    >>> sp.expand(peak - peak.atoms(sp.Max).pop()).coeff(S.V)  # 4N + 8N held: the tied table's 12·V·d
    12*d
    """
    return sum(training_peak_parts(mdl, stack, recompute, zero_stage, optimizer).values(), sp.S.Zero)


def training_peak_parts(mdl: Component, stack: str, recompute: bool = False, zero_stage: int = 0,
                        optimizer: str = "adamw") -> dict:
    """:func:`training_peak`'s two parts: ``weights_and_moments`` (held throughout) and ``largest_moment``.

    >>> from symllm.arch.components import model
    >>> list(training_peak_parts(model(), "hf-sdpa"))
    ['weights_and_moments', 'largest_moment']
    """
    held, sizes = _held(mdl, stack, zero_stage, optimizer)
    largest = maximum(*(substitute(t.bytes, sizes)
                        for t in training_terms(stack, recompute, zero_stage, optimizer, mdl)))
    return {"weights_and_moments": held, "largest_moment": largest}


def _held(mdl: Component, stack: str, zero_stage: int, optimizer: str = "adamw"):
    """fp32 master weights and the optimizer's states (ZeRO-sharded: the gradients are freed before each step),
    and the sizes the moments' symbols stand for."""
    check_model(stack, mdl)
    graded = mdl.trained()  # the gradients, the step and its temporary: the parameters that get a gradient only
    N = graded.total("params")
    held = zero.optimizer_states(mdl, zero_stage, optimizer, master=False) \
        - zero.training_states(N, zero_stage, {"gradients": zero.FP32_ADAMW["gradients"]})
    per_block = next(c for c in graded.children if c.checkpoint != 0)
    sizes = {S.N: N, _P_BLOCK: per_block.total("params") / per_block.repeat, _P_LARGEST: largest_tensor(graded)}
    return held, sizes


def largest_tensor(mdl: Component) -> sp.Expr:
    """Elements of the largest parameter tensor of ``mdl``: the embedding table, or the largest matrix of a
    block (its linears' ``shape``), whichever is larger.

    >>> from symllm.arch.components import model
    >>> largest_tensor(model())
    Max(V*d, d*d_ff, d*d_h*n_h, d*d_h*n_kv)
    """
    sizes = set()
    for c in mdl.walk():
        if c.shape and c.params != 0:
            sizes.add(sp.expand(c.shape[0] * c.shape[1]))
        elif c.rules.weight == "embedding" and c.params != 0:
            sizes.add(c.params)
    return maximum(*sizes)


def moments(mdl: Component, stack: str, recompute: bool = False, zero_stage: int = 0,
            optimizer: str = "adamw") -> list[tuple[Term, sp.Expr]]:
    """Each of :func:`training_terms` with its whole bytes at that moment (the weights and the optimizer's
    states added, ``N`` and a block's parameters put in): :func:`training_peak` is their largest.

    >>> from symllm.arch.components import model
    >>> [t.component for t, _ in moments(model(), "hf-sdpa")][:2]
    ['forward end', 'backward start']
    """
    held, sizes = _held(mdl, stack, zero_stage, optimizer)
    return [(t, held + substitute(t.bytes, sizes))
            for t in training_terms(stack, recompute, zero_stage, optimizer, mdl)]
