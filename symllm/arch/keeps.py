"""What each named software stack keeps for a component, declared by the component.

A component's :class:`~symllm.arch.components.Rules` maps each named stack that models it (``stacks``) to a
:class:`Rule`: a function of this module, with the component's sizes, giving the component's :class:`Keeps`
under that stack in closed form: the bytes a training forward saves for backward, what an inference pass
holds while the layers run, the candidates for its largest transient set, and the moments of a training step
inside a layer. :mod:`symllm.costs.stacks` walks the model tree and composes them: a term of a component
inside a group of layers counts once per layer (the group's repeat) unless it says it is held once for the
whole model (``per="once"``: a table every layer shares) or is the batch's own tensor (``per="input"``).

The stacks stated here are transformers' ``LlamaForCausalLM`` (:data:`HF`: ``hf-eager``, ``hf-sdpa``), read
in transformers 5.23.0's ``modeling_llama.py`` and measured on the CPU (``tests/test_stacks.py``,
``tests/test_training_peak.py``): training under ``torch.autocast(dtype=torch.bfloat16)`` (2 bytes per
low-precision element) with fp32 master weights; inference in the workload's dtype ``β_a``.

>>> from symllm.arch.components import feed_forward
>>> feed_forward().rules.stacks["hf-sdpa"]("hf-sdpa").saved[0].bytes
4*b*d*s + 8*b*d_ff*s + 6*d*d_ff
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.dtypes import BF16, FP32, INT64
from symllm.errors import SymllmError
from symllm.validate import choice

__all__ = ["HF", "PER", "Term", "Step", "Keeps", "Rule", "StackRules", "hf_rules", "nothing", "embedding",
           "stream_norm", "attention", "rope", "scores", "context", "feed_forward", "block", "lm_head"]

#: the named stacks that state what transformers' LlamaForCausalLM keeps (symllm.costs.stacks.STACKS; fused and
#: eager are the component tree's own)
HF = ("hf-eager", "hf-sdpa")
#: how many of a term the model holds: "each" (one per occurrence of its component: per layer inside the
#: layers), "once" (one for the whole model wherever its component sits), "input" (the batch's own tensor)
PER = ("each", "once", "input")

_T = S.b * S.s                     # token rows
_SCORES = S.b * S.n_h * S.s ** 2   # attention scores of a prefill
_LOW = BF16                        # bytes of autocast's bf16/fp16 copies
_FP32 = FP32
_INDEX = INT64                     # int64 token ids and labels


@dataclass(frozen=True)
class Term:
    """Bytes one component of a stack keeps, and why."""

    #: where it sits in the model, a readable label ("block/attention"; "" until the walk names it)
    component: str
    #: the bytes, a closed form in symllm.arch.symbols
    bytes: sp.Expr
    #: one line: which tensors, in which dtype, and which code line keeps them
    reason: str
    #: how many the model holds (:data:`PER`)
    per: str = "each"

    def __post_init__(self):
        choice("per", self.per, PER)


@dataclass(frozen=True)
class Step:
    """A moment of a training step inside a layer, at its component: the bytes live there besides what the
    step holds around the layer (:func:`symllm.costs.stacks.training_terms`) and the saves the layer made
    before this component (the components before it in model order)."""

    #: the moment's name ("MLP backward": "last layer MLP backward", "first layer MLP backward")
    name: str
    #: the bytes, a closed form
    bytes: sp.Expr
    #: one line; ``{where}`` is the layer ("last", "first")
    reason: str
    #: in the forward pass itself (the last layer only: the layers below saved, the KV cache, no gradients);
    #: else during backward, in the last and in the first layer (with recompute: its forward run again)
    forward: bool = False
    #: only with (True) or only without (False) recompute; None: both
    recompute: bool | None = None


@dataclass(frozen=True)
class Keeps:
    """What one stack keeps for one component (each a closed form, the component's own, children excluded)."""

    #: saved for backward by a training forward
    saved: tuple[Term, ...] = ()
    #: held while an inference pass runs the layers (besides weights and KV cache)
    resident: tuple[Term, ...] = ()
    #: the candidates for an inference pass's largest transient set: inside the layers on top of the residents,
    #: outside them (the head, once the layers have returned) alone
    moments: tuple[Term, ...] = ()
    #: bytes a layer keeps as its gradient-checkpointing checkpoint (its input), per layer
    checkpoint: sp.Expr = sp.S.Zero
    #: bytes held once around every layer run again during a recomputing backward
    held: sp.Expr = sp.S.Zero
    #: moments of a training step inside a layer, at this component
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class Rule:
    """One stack's rule for one component: ``keep(stack, **args)``, a function of this module, with the
    component's sizes (compared and hashed by value, so that equal components have equal rules)."""

    keep: Callable[..., Keeps]
    args: tuple = ()

    def __call__(self, stack: str) -> Keeps:
        return self.keep(stack, **dict(self.args))


class StackRules(Mapping):
    """stack -> :class:`Rule`, immutable and hashable: a component's ``Rules.stacks``.

    >>> rules = hf_rules(nothing)
    >>> list(rules), rules["hf-eager"]("hf-eager") == Keeps(), StackRules() == StackRules(())
    (['hf-eager', 'hf-sdpa'], True, True)
    """

    __slots__ = ("_items",)

    def __init__(self, items=()):
        items = dict(items)
        for stack, rule in items.items():
            if not isinstance(stack, str) or not callable(rule):
                raise SymllmError(f"stacks: expected stack name -> rule, got {stack!r} -> {rule!r}")
        self._items = tuple(items.items())

    def __getitem__(self, stack):
        for name, rule in self._items:
            if name == stack:
                return rule
        raise KeyError(stack)

    def __iter__(self):
        return (name for name, _ in self._items)

    def __len__(self):
        return len(self._items)

    def __hash__(self):
        return hash(self._items)

    def __eq__(self, other):
        return isinstance(other, Mapping) and dict(self._items) == dict(other.items())

    def __repr__(self):
        return f"StackRules({', '.join(name for name, _ in self._items)})"


def hf_rules(keep: Callable[..., Keeps], **args) -> StackRules:
    """``keep`` (with the component's sizes ``args``) as the rule of both of LlamaForCausalLM's stacks.

    >>> hf_rules(stream_norm, moment=True)["hf-sdpa"].args
    (('moment', True),)
    """
    rule = Rule(keep, tuple(sorted(args.items())))
    return StackRules((stack, rule) for stack in HF)


def _t(nbytes, reason: str, per: str = "each") -> Term:
    return Term("", sp.sympify(nbytes), reason, per)


def _not_fp32():
    """1 unless the model runs in fp32 (then ``.to(fp32)`` is no copy)."""
    return sp.Min(1, (S.beta_a - _FP32) ** 2)


def _gqa():
    """1 where repeat_kv copies k and v (GQA), 0 where it repeats by views (MHA, MQA)."""
    return sp.Min(1, S.n_h - S.n_kv) * sp.Min(1, S.n_kv - 1)


def nothing(stack: str) -> Keeps:
    """A part that keeps nothing of its own under ``stack``: the model itself, a layer's projections (their
    input casts and weight copies are stated by the attention and the feed-forward that hold them).

    >>> nothing("hf-eager")
    Keeps(saved=(), resident=(), moments=(), checkpoint=0, held=0, steps=())
    """
    return Keeps()


def embedding(stack: str) -> Keeps:
    """``nn.Embedding``: the token ids (the batch's own) and, at inference, the embeddings and position ids.

    >>> [t.per for t in embedding("hf-sdpa").resident]
    ['input', 'each']
    """
    return Keeps(
        saved=(_t(_INDEX * _T, "nn.Embedding saves the int64 token ids", "input"),),
        resident=(_t(_INDEX * _T, "the int64 input ids, held until the logits are returned", "input"),
                  _t(S.beta_a * _T * S.d + _INDEX * S.s, "inputs_embeds and the int64 position_ids, which "
                     "LlamaModel.forward holds until it returns")))


def stream_norm(stack: str, moment: bool = False) -> Keeps:
    """``LlamaRMSNorm`` of the residual stream; with ``moment`` (the norm of the residual sum, ffn_norm) also
    its inference moment: the residual sum is a new tensor there, and under eager attention the probabilities
    the attention returned are still held (the decoder layer's ``_``).

    >>> stream_norm("hf-eager").saved[0].bytes
    8*b*d*s + 4*b*s
    """
    saved = (_t(_FP32 * (2 * _T * S.d + _T),
                "LlamaRMSNorm: its fp32 input (the fp32 residual stream; pow and x*rsqrt save it), the fp32 1/rms "
                "per row, and the fp32 normalised x that weight * x saves"),)
    if not moment:
        return Keeps(saved=saved)
    ba = S.beta_a
    probs = ba * _SCORES if stack == "hf-eager" else sp.S.Zero
    return Keeps(saved=saved, moments=(
        _t(ba * _T * S.d + _FP32 * _T * S.d * (1 + _not_fp32()) + 2 * _FP32 * _T + probs,
           "inside LlamaRMSNorm: x (the residual sum), its fp32 copy, the fp32 x*rsqrt (or x**2), and the fp32 "
           "variance and its rsqrt per row (eager: and the probabilities)"),))


def attention(stack: str) -> Keeps:
    """``LlamaAttention``'s projections: autocast's bf16 casts of their input and of their weights.

    >>> attention("hf-sdpa").saved[0].bytes.has(S.n_kv)
    True
    """
    d, n_h, n_kv, d_h = S.d, S.n_h, S.n_kv, S.d_h
    return Keeps(saved=(_t(_LOW * (3 * _T * d + d * d_h * (2 * n_h + 2 * n_kv)),
                           "q_proj, k_proj, v_proj: autocast casts the fp32 normed input once per linear (3 bf16 "
                           "copies); the four projections save their bf16 weight copies"),))


def rope(stack: str) -> Keeps:
    """``LlamaRotaryEmbedding`` and ``apply_rotary_pos_emb``: one cos/sin table every layer shares.

    >>> [t.per for t in rope("hf-eager").saved], [s.name for s in rope("hf-eager").steps]
    (['once'], ['RoPE'])
    """
    T, d, n_h, n_kv, d_h, ba = _T, S.d, S.n_h, S.n_kv, S.d_h, S.beta_a
    X = T * n_h * d_h
    return Keeps(
        saved=(_t(_FP32 * 2 * S.s * d_h, "apply_rotary_pos_emb: q * cos and rotate_half(q) * sin save cos and "
                  "sin, fp32 (the residual stream's dtype), one table shared by every layer", "once"),),
        resident=(_t(ba * (2 * S.s * d_h + d_h), "cos and sin for every position, and the inv_freq buffers", "once"),),
        moments=(_t(ba * (T * d + T * d_h * sp.Max(4 * n_h + 2 * n_kv, 2 * n_h + 5 * n_kv))
                    - S.beta_kv * 2 * S.b * (S.s + S.n) * n_kv * d_h,
                    "at rotate_half(q) * sin: the normed input, q, k, v, q * cos, rotate_half(q) and its product; "
                    "or, when k's heads weigh more (n_kv > 2n_h/3), at rotate_half(k) * sin: q still held by the "
                    "caller, q_embed, k, v, k * cos, rotate_half(k) and its product; the last layer's KV cache is "
                    "not written yet"),),
        steps=(Step("RoPE", _FP32 * T * d + 2 * _LOW * T * n_kv * d_h + _LOW * X + 3 * _FP32 * X,
                    "at q * cos + rotate_half(q) * sin in the {where} layer, run again: what the step holds around "
                    "the layer, its norm and q/k/v saves, the fp32 normed input, bf16 q, k and v, and three fp32 "
                    "b·s·n_h·d_h tensors (q * cos, the rotated product, their sum)", recompute=True),))


def scores(stack: str) -> Keeps:
    """The attention core: eager's ``softmax(QKᵀ)V`` (its s² probabilities, its 4-D mask) or SDPA's flash
    kernel (its inputs, output and fp32 log-sum-exp).

    >>> sp.expand(scores("hf-eager").saved[0].bytes - scores("hf-sdpa").saved[0].bytes).coeff(S.s, 2)
    6*b*n_h
    """
    T, d, d_ff, n_h, n_kv, d_h, ba = _T, S.d, S.d_ff, S.n_h, S.n_kv, S.d_h, S.beta_a
    if stack != "hf-eager":
        return Keeps(
            saved=(_t(_LOW * T * d_h * (2 * n_h + 2 * n_kv) + _FP32 * S.b * n_h * S.s,
                      "SDPA's flash kernel saves bf16 q, k and v (enable_gqa: n_kv heads, not repeated), its output "
                      "(also o_proj's input: no copy) and the fp32 log-sum-exp per query and head"),),
            moments=(_t(ba * T * d + 2 * ba * T * n_h * d_h + _FP32 * S.b * n_h * S.s,
                        "SDPA: the normed input, RoPE'd q, the output and the kernel's fp32 log-sum-exp (no s² "
                        "tensor)"),))
    mask = _FP32 * S.b * S.s ** 2  # eager's 4-D fp32 mask under autocast
    qk = _LOW * 2 * T * n_h * d_h  # Q·Kᵀ's bf16 casts of q and of the repeated k
    core_fwd = mask + _FP32 * T * d + _FP32 * T * n_h * d_h * (1 + 2 * _gqa()) + 2 * _FP32 * _SCORES
    return Keeps(
        saved=(_t(_LOW * 3 * T * n_h * d_h + (_FP32 + _LOW) * _SCORES,
                  "eager_attention_forward: Q·Kᵀ saves bf16 casts of the fp32 RoPE'd q and of k repeated to n_h "
                  "heads; softmax(dtype=fp32) saves its fp32 output; A·V saves the bf16 probabilities and v "
                  "repeated to n_h heads"),),
        resident=(_t(ba * S.b * S.s ** 2, "create_causal_mask's 4-D additive mask for eager attention, held for the "
                     "whole pass", "once"),),
        moments=(_t(ba * T * d + ba * T * n_h * d_h + 2 * ba * T * n_h * d_h * _gqa()
                    + _SCORES * (ba + _FP32 + _FP32 * _not_fp32()),
                    "at softmax(dtype=fp32): the normed input, RoPE'd q, repeat_kv's copies of k and v (GQA; MHA "
                    "and MQA repeat by views), the masked scores, their fp32 copy and the fp32 probabilities"),),
        held=mask,
        steps=(
            Step("forward", qk + core_fwd,
                 "at the last layer's softmax: the layers below, its norm, q/k/v and Q·Kᵀ saves, the KV cache, the "
                 "eager 4-D fp32 mask, the fp32 normed input and RoPE'd q, repeat_kv's fp32 copies of k and v, the "
                 "masked fp32 scores and the fp32 probabilities", forward=True, recompute=False),
            Step("forward", qk + core_fwd - mask,
                 "at the {where} layer's softmax, run again: what the step holds around the layer (the mask among "
                 "it), its saves up to the softmax, the fp32 normed input and RoPE'd q, repeat_kv's fp32 copies, "
                 "the masked fp32 scores and the fp32 probabilities", recompute=True),
            Step("backward", qk + _FP32 * _SCORES + _FP32 * (3 * d * d_ff + d + n_h * d_h * d) + 2 * _FP32 * _SCORES
                 + _FP32 * T * n_h * d_h,
                 "at the {where} layer's softmax backward: what the step holds around the layer, its saves up to "
                 "the fp32 probabilities, the fp32 gradients of its MLP, ffn_norm and o_proj, two fp32 b·n_h·s² "
                 "gradients and v's fp32 gradient waiting"),
        ))


def context(stack: str) -> Keeps:
    """``A·V`` and its transpose: eager's contiguous copy, which o_proj saves (SDPA's output is saved by the
    kernel already).

    >>> context("hf-sdpa") == Keeps(), len(context("hf-eager").moments)
    (True, 1)
    """
    if stack != "hf-eager":
        return Keeps()
    T, d, n_h, d_h, ba = _T, S.d, S.n_h, S.d_h, S.beta_a
    return Keeps(
        saved=(_t(_LOW * T * n_h * d_h, "o_proj saves its bf16 input (eager: attn_output.transpose(1, 2)"
                  ".contiguous() is a copy)"),),
        # short prompts: the output's contiguous copy outweighs the fp32 scores
        moments=(_t(ba * T * d + ba * T * n_h * d_h * (3 + 2 * _gqa()) + ba * _SCORES,
                    "at attn_output.transpose(1, 2).contiguous(): the normed input, RoPE'd q, repeat_kv's copies, "
                    "the probabilities, A·V's output and its contiguous copy"),))


def feed_forward(stack: str) -> Keeps:
    """``LlamaMLP``: SwiGLU's casts, products and weight copies.

    >>> [s.name for s in feed_forward("hf-sdpa").steps]
    ['MLP backward']
    """
    T, d, d_ff, ba = _T, S.d, S.d_ff, S.beta_a
    saved = _LOW * (2 * T * d + 4 * T * d_ff + 3 * d * d_ff)
    # eager: the decoder layer's `hidden_states, _ = self.self_attn(...)` keeps the bf16 probabilities
    # (returned as attn_weights) alive in `_` until the layer ends: through ffn_norm and the MLP
    probs = ba * _SCORES if stack == "hf-eager" else sp.S.Zero
    return Keeps(
        saved=(_t(saved, "gate_proj and up_proj each save their own bf16 cast of the fp32 normed input; SiLU saves "
                  "the gate, the product saves SiLU's output and up's; down_proj saves the product; 3 bf16 weight "
                  "copies"),),
        moments=(_t(2 * ba * T * d + 3 * ba * T * d_ff + probs,
                    "at silu(gate) * up: the residual sum and its normed input, SiLU's output, up's and their "
                    "product (eager: and the probabilities attention returned)"),),
        steps=(Step("MLP backward", saved + 2 * _LOW * T * d_ff + _FP32 * d * d_ff,
                    "at silu(gate) * up's backward in the {where} layer: what the step holds around the layer (the "
                    "layers below saved, or with recompute their fp32 inputs; the fp32 gradients of the head and of "
                    "the layers above; the residual stream's), the layer's saves, the bf16 gradient of down_proj's "
                    "input and one of its two products, down_proj's fp32 gradient"),))


def block(stack: str) -> Keeps:
    """``LlamaDecoderLayer`` as the layer loop holds it: the last layer's input; gradient checkpointing keeps
    each layer's fp32 input.

    >>> block("hf-sdpa").checkpoint
    4*b*d*s
    """
    return Keeps(resident=(_t(S.beta_a * _T * S.d * sp.Min(1, S.L - 1), "the last layer's input, held by the layer "
                              "loop (it is inputs_embeds itself when L = 1)", "once"),),
                 checkpoint=_FP32 * _T * S.d)


def lm_head(stack: str) -> Keeps:
    """``LlamaForCausalLM.lm_head`` and its loss (``ForCausalLMLoss`` on the fp32-upcast logits).

    >>> [t.component for t in lm_head("hf-eager").saved]
    ['', 'loss']
    """
    T, d, V, ba = _T, S.d, S.V, S.beta_a
    return Keeps(
        saved=(_t(_LOW * (T * d + V * d), "lm_head saves the bf16 cast of the fp32 final norm and the bf16 weight "
                  "copy (tied or not)"),
               Term("loss", _FP32 * T * V + _INDEX * T + _FP32, "ForCausalLMLoss: logits.float(); log_softmax saves "
                    "its fp32 output, nll_loss the int64 shifted labels and the fp32 total weight")),
        moments=(_t(ba * T * (d + V), "after LlamaModel returns (its inputs_embeds, layer input, cos/sin and mask "
                    "freed): the final normed hidden states and the logits at every position"),))
