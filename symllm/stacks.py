"""Named software stacks: which tensors a real stack saves for backward and keeps live, in which dtype.

symllm's own memory model (stack ``ideal``: each component's ``saved``, ``resident`` and ``live`` in
:mod:`symllm.components`) is a fused stack with every activation in ``β_a``. People run transformers'
``LlamaForCausalLM`` instead, which saves and holds more, and in fp32 in places. A stack here states,
per component and in closed form, what that code keeps, each with its one-line reason:

* ``hf-eager``: ``LlamaForCausalLM`` with ``attn_implementation="eager"``;
* ``hf-sdpa``: the same with ``"sdpa"`` (``F.scaled_dot_product_attention``; what is stated is what its
  flash kernel saves: ``_scaled_dot_product_flash_attention_for_cpu`` on the CPU, measured, and the CUDA
  flash kernel's inputs, output and fp32 log-sum-exp likewise).

Inference runs in the workload's dtype (``model.to(dtype)``, ``torch.no_grad()``, ``use_cache=True``,
logits at every position). Training runs under ``torch.autocast(dtype=torch.bfloat16)`` (2 bytes per
low-precision element, whatever ``--act-dtype`` says) with fp32 master weights, fp32 gradients and
``torch.optim.AdamW`` (two fp32 moments), and the loss on the fp32-upcast logits (transformers'
``ForCausalLMLoss``). ``recompute`` is transformers' gradient checkpointing (one checkpoint per decoder
layer: its fp32 input).

Where the numbers come from: transformers 5.23.0's ``modeling_llama.py`` (read) and what it does on the
CPU (measured by ``tests/test_stacks.py``: ``torch.autograd.graph.saved_tensors_hooks``, deduplicated by
storage and without the parameters themselves, for saved bytes; ``MemTracker`` for inference peaks).

>>> import sympy as sp
>>> from symllm.components import model
>>> sp.expand(activations(model(), "hf-sdpa") - activations(model(), "hf-eager")).coeff(S.s, 2)
-6*L*b*n_h
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from . import symbols as S
from .errors import SymllmError

if TYPE_CHECKING:  # a warm `symllm count` imports workload (and so STACKS) without building components
    from .components import Component

__all__ = ["STACKS", "Term", "saved_terms", "inference_terms", "activations", "inference_peak",
           "training_states"]

#: the stacks symllm knows; ``ideal`` is the component tree's own memory model
STACKS = ("ideal", "hf-eager", "hf-sdpa")

_T = S.b * S.s            # token rows
_SCORES = S.b * S.n_h * S.s ** 2  # attention scores of a prefill
_LOW = 2                  # bytes of autocast's bf16/fp16 copies
_FP32 = 4
_INDEX = 8                # int64 token ids and labels


@dataclass(frozen=True)
class Term:
    """Bytes one component of a stack keeps, and why."""

    #: where it sits in the model ("block/attention"; "block/..." terms repeat per layer)
    component: str
    #: the bytes, a closed form in symllm.symbols
    bytes: sp.Expr
    #: one line: which tensors, in which dtype, and which code line keeps them
    reason: str


def _check(stack: str, mdl: Component | None = None) -> None:
    if stack not in STACKS:
        raise SymllmError(f"stack: unknown {stack!r} (known: {', '.join(STACKS)})")
    if mdl is None or stack == "ideal":
        return
    if mdl.name != "model":
        raise SymllmError(f"stack: {stack} is modelled for the whole model, not for {mdl.name!r}")
    if any(c.name in ("moe", "temperature") for c in mdl.walk()):
        raise SymllmError(f"stack: {stack} models LlamaForCausalLM; mixture-of-experts and layers without RoPE "
                          "(Mixtral, Llama 4) are not modelled for it yet")
    if any(c.name in ("q_norm", "k_norm") for c in mdl.walk()):
        raise SymllmError(f"stack: {stack} models LlamaForCausalLM; per-head q/k norms (Qwen3) are not modelled yet")


def saved_terms(stack: str) -> tuple[Term, ...]:
    """What a training step's forward saves for backward under ``stack`` (``hf-eager``, ``hf-sdpa``).

    >>> [t.component for t in saved_terms("hf-sdpa")][:3]
    ['embedding', 'block/attention_norm', 'block/attention']
    """
    _check(stack)
    if stack == "ideal":
        raise SymllmError("stack: ideal's saved bytes are the components' own (symllm.costs.activations)")
    T, d, d_ff, V, n_h, n_kv, d_h = _T, S.d, S.d_ff, S.V, S.n_h, S.n_kv, S.d_h

    def norm(where):
        return Term(where, _FP32 * (2 * T * d + T),
                    "LlamaRMSNorm: its fp32 input (the fp32 residual stream; pow and x*rsqrt save it), the fp32 "
                    "1/rms per row, and the fp32 normalised x that weight * x saves")

    if stack == "hf-eager":
        core = Term("block/attention", _LOW * 3 * T * n_h * d_h + (_FP32 + _LOW) * _SCORES,
                    "eager_attention_forward: Q·Kᵀ saves bf16 casts of the fp32 RoPE'd q and of k repeated to n_h "
                    "heads; softmax(dtype=fp32) saves its fp32 output; A·V saves the bf16 probabilities and v "
                    "repeated to n_h heads")
    else:
        core = Term("block/attention", _LOW * T * d_h * (2 * n_h + 2 * n_kv) + _FP32 * S.b * n_h * S.s,
                    "SDPA's flash kernel saves bf16 q, k and v (enable_gqa: n_kv heads, not repeated), its output "
                    "(also o_proj's input: no copy) and the fp32 log-sum-exp per query and head")
    return (
        Term("embedding", _INDEX * T, "nn.Embedding saves the int64 token ids"),
        norm("block/attention_norm"),
        Term("block/attention", _LOW * (3 * T * d + d * d_h * (2 * n_h + 2 * n_kv)),
             "q_proj, k_proj, v_proj: autocast casts the fp32 normed input once per linear (3 bf16 copies), "
             "and each saves its bf16 weight copy"),
        core,
        Term("block/attention", _LOW * T * n_h * d_h * (1 if stack == "hf-eager" else 0),
             "o_proj saves its bf16 input (eager: attn_output.transpose(1, 2).contiguous() is a copy)"),
        Term("block/attention/rope", _FP32 * 2 * S.s * d_h,
             "apply_rotary_pos_emb: q * cos and rotate_half(q) * sin save cos and sin, fp32 (the residual "
             "stream's dtype), one table shared by every layer"),
        norm("block/ffn_norm"),
        Term("block/feed_forward", _LOW * (2 * T * d + 4 * T * d_ff + 3 * d * d_ff),
             "gate_proj and up_proj each save their own bf16 cast of the fp32 normed input; SiLU saves the "
             "gate, the product saves SiLU's output and up's; down_proj saves the product; 3 bf16 weight copies"),
        norm("norm"),
        Term("lm_head", _LOW * (T * d + V * d),
             "lm_head saves the bf16 cast of the fp32 final norm and the bf16 weight copy (tied or not)"),
        Term("loss", _FP32 * T * V + _INDEX * T + _FP32,
             "ForCausalLMLoss: logits.float(); log_softmax saves its fp32 output, nll_loss the int64 shifted "
             "labels and the fp32 total weight"),
    )


def inference_terms(stack: str) -> tuple[tuple[Term, ...], tuple[Term, ...]]:
    """``(resident, moments)`` of a prefill that returns every logit: bytes held while the layers run
    (besides weights and KV cache; the token ids are held throughout) and the candidates for the largest
    transient set (one moment at a time; the ``lm_head`` moment comes after the layers' residents are freed).

    >>> [t.component for t in inference_terms("hf-eager")[1]]
    ['block/attention', 'block/attention/rope', 'block/feed_forward', 'block/ffn_norm', 'lm_head']
    """
    _check(stack)
    if stack == "ideal":
        raise SymllmError("stack: ideal's working set is the components' own (symllm.costs.memory)")
    T, d, d_ff, V, n_h, n_kv, d_h, ba = _T, S.d, S.d_ff, S.V, S.n_h, S.n_kv, S.d_h, S.beta_a
    not_fp32 = sp.Min(1, (ba - _FP32) ** 2)  # 1 unless the model runs in fp32 (then .to(fp32) is no copy)
    resident = [
        Term("embedding", _INDEX * T + ba * T * d + _INDEX * S.s,
             "the int64 input ids, inputs_embeds and the int64 position_ids, which LlamaModel.forward holds "
             "until it returns"),
        Term("block", ba * T * d * sp.Min(1, S.L - 1),
             "the last layer's input, held by the layer loop (it is inputs_embeds itself when L = 1)"),
        Term("block/attention/rope", ba * (2 * S.s * d_h + d_h),
             "cos and sin for every position, and the inv_freq buffers"),
    ]
    if stack == "hf-eager":
        resident.append(Term("block/attention", ba * S.b * S.s ** 2,
                             "create_causal_mask's 4-D additive mask for eager attention, held for the whole pass"))
        core = Term("block/attention",
                    ba * T * d + ba * T * n_h * d_h
                    + 2 * ba * T * n_h * d_h * sp.Min(1, n_h - n_kv) * sp.Min(1, n_kv - 1)
                    + _SCORES * (ba + _FP32 + _FP32 * not_fp32),
                    "at softmax(dtype=fp32): the normed input, RoPE'd q, repeat_kv's copies of k and v (GQA; MHA and "
                    "MQA repeat by views), "
                    "the masked scores, their fp32 copy and the fp32 probabilities")
    else:
        core = Term("block/attention", ba * T * d + 2 * ba * T * n_h * d_h + _FP32 * S.b * n_h * S.s,
                    "SDPA: the normed input, RoPE'd q, the output and the kernel's fp32 log-sum-exp (no s² tensor)")
    # eager: the decoder layer's `hidden_states, _ = self.self_attn(...)` keeps the bf16 probabilities
    # (returned as attn_weights) alive in `_` until the layer ends: through ffn_norm and the MLP
    probs = ba * _SCORES if stack == "hf-eager" else sp.S.Zero
    moments = (
        core,
        Term("block/attention/rope", ba * (T * d + T * d_h * (4 * n_h + 2 * n_kv))
             - S.beta_kv * 2 * S.b * (S.s + S.n) * n_kv * d_h,
             "at rotate_half(q) * sin: the normed input, q, k, v, q * cos, rotate_half(q) and its product; the "
             "last layer's KV cache is not written yet"),
        Term("block/feed_forward", 2 * ba * T * d + 3 * ba * T * d_ff + probs,
             "at silu(gate) * up: the residual sum and its normed input, SiLU's output, up's and their product "
             "(eager: and the probabilities attention returned)"),
        Term("block/ffn_norm", ba * T * d + _FP32 * T * d * (1 + not_fp32) + probs,
             "inside LlamaRMSNorm: x (the residual sum), its fp32 copy and the fp32 x*rsqrt (or x**2) "
             "(eager: and the probabilities)"),
        Term("lm_head", ba * T * (d + V), "after LlamaModel returns (its inputs_embeds, layer input, cos/sin "
             "and mask freed): the final normed hidden states and the logits at every position"),
    )
    return tuple(resident), moments


def _total(terms, where=lambda t: True) -> sp.Expr:
    """The terms' bytes, ``block/...`` terms (except the shared RoPE table) times ``L``."""
    out = sp.S.Zero
    for t in terms:
        if where(t):
            per_layer = t.component.startswith("block") and t.component != "block/attention/rope"
            out += S.L * t.bytes if per_layer and t.component != "block" else t.bytes
    return out


def activations(mdl: Component, stack: str, recompute: bool = False) -> sp.Expr:
    """Bytes a training forward saves for backward under ``stack`` (not ``ideal``); with ``recompute``
    (gradient checkpointing) the peak during backward: one fp32 checkpoint per layer, one layer's saved
    tensors recomputed, and what lies outside the layers.

    >>> from symllm.components import model
    >>> sp.expand(activations(model(), "hf-eager", recompute=True)).coeff(S.L)
    4*b*d*s
    """
    _check(stack, mdl)
    terms = saved_terms(stack)
    if not recompute:
        return _total(terms)
    in_block = lambda t: t.component.startswith("block/") and t.component != "block/attention/rope"  # noqa: E731
    once = sum((t.bytes for t in terms if in_block(t)), sp.S.Zero)
    return S.L * _FP32 * _T * S.d + once + _total(terms, lambda t: not in_block(t))


def inference_peak(mdl: Component, stack: str) -> sp.Expr:
    """Weights, the KV cache after ``s + n`` tokens, what a prefill holds throughout and its largest
    moment, under ``stack`` (not ``ideal``).

    >>> from symllm.components import model
    >>> inference_peak(model(), "hf-sdpa").has(S.beta_w, S.beta_kv)
    True
    """
    _check(stack, mdl)
    resident, moments = inference_terms(stack)
    kv = S.beta_kv * sp.factor(mdl.total("kv_cache").subs(S.t, S.n))
    held = sum((t.bytes for t in resident if t.component != "embedding"), sp.S.Zero)
    ids, embeds = _INDEX * _T, S.beta_a * _T * S.d + _INDEX * S.s  # the embedding's term: ids stay to the end
    layers = [held + embeds + t.bytes for t in moments if t.component != "lm_head"]
    head = [t.bytes for t in moments if t.component == "lm_head"]
    return S.beta_w * mdl.total("params") + kv + ids + sp.Max(*layers, *head)


def training_states(mdl: Component, stack: str, zero_stage: int = 0) -> sp.Expr:
    """Per data-parallel rank: fp32 master weights 4N, fp32 gradients 4N, AdamW's two fp32 moments 8N;
    ZeRO stage 1 shards the moments over ``N_d`` ranks, 2 also the gradients, 3 also the weights.

    >>> from symllm.components import model
    >>> training_states(model(), "hf-eager", 1).coeff(S.N_d ** -1) == 8 * model().total("params")
    True
    """
    _check(stack, mdl)
    kept = sum([(4, 4, 8), (4, 4, 0), (4, 0, 0), (0, 0, 0)][zero_stage])
    N = mdl.total("params")
    return kept * N + (16 - kept) * N / S.N_d
