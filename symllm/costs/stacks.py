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
stack here states, per component and in closed form, what that code keeps, each with its one-line reason:

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

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.dtypes import BF16, FP32, INT64
from symllm.costs import zero
from symllm.costs.workloads import COMPONENT_STACKS, STACKS
from symllm.costs.workloads import check_stack as check_name
from symllm.errors import SymllmError
from symllm.validate import choice, listed

if TYPE_CHECKING:  # a warm `symllm count` imports workload (and so STACKS) without building components
    from symllm.arch.components import Component

__all__ = ["STACKS", "COMPONENT_STACKS", "check_name", "Term", "saved_terms", "inference_terms", "activations", "inference_peak",
           "training_states", "training_terms", "training_peak", "training_peak_parts", "moments"]


_T = S.b * S.s            # token rows
_SCORES = S.b * S.n_h * S.s ** 2  # attention scores of a prefill
_LOW = BF16               # bytes of autocast's bf16/fp16 copies
_FP32 = FP32
_INDEX = INT64            # int64 token ids and labels
_P_BLOCK = sp.Symbol("P_block", positive=True)  # one block's parameters (training_peak substitutes them)
_P_LARGEST = sp.Symbol("P_largest", positive=True)  # the largest parameter tensor's elements (likewise)


@dataclass(frozen=True)
class Term:
    """Bytes one component of a stack keeps, and why."""

    #: where it sits in the model ("block/attention"; "block/..." terms repeat per layer)
    component: str
    #: the bytes, a closed form in symllm.arch.symbols
    bytes: sp.Expr
    #: one line: which tensors, in which dtype, and which code line keeps them
    reason: str


def _check(stack: str, mdl: Component | None = None) -> None:
    check_name(stack)
    if mdl is None or stack in COMPONENT_STACKS:
        return
    if mdl.name != "model":
        raise SymllmError(f"stack: {stack} is modelled for the whole model, not for {mdl.name!r}")
    missing = list(dict.fromkeys(c.rules.label or c.name for c in _unmodelled(mdl, stack)))
    if missing:
        names = missing if len(", ".join(missing)) <= 50 else [m.split(" (")[0] for m in missing]  # the labels' names
        raise SymllmError(f"stack: {stack} does not model {listed(names, 50)} yet")


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


def saved_terms(stack: str) -> tuple[Term, ...]:
    """What a training step's forward saves for backward under ``stack`` (``hf-eager``, ``hf-sdpa``).

    >>> [t.component for t in saved_terms("hf-sdpa")][:3]
    ['embedding', 'block/attention_norm', 'block/attention']
    """
    _check(stack)
    if stack in COMPONENT_STACKS:
        raise SymllmError(f"stack: {stack}'s saved bytes are the components' own (phases.activations)")
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

    >>> [t.component for t in inference_terms("hf-eager")[1]][:3]
    ['block/attention', 'block/attention/context', 'block/attention/rope']
    """
    _check(stack)
    if stack in COMPONENT_STACKS:
        raise SymllmError(f"stack: {stack}'s working set is the components' own (symllm.costs.phases.memory)")
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
    context = ()
    if stack == "hf-eager":  # short prompts: the output's contiguous copy outweighs the fp32 scores
        context = (Term("block/attention/context",
                        ba * T * d + ba * T * n_h * d_h * (3 + 2 * sp.Min(1, n_h - n_kv) * sp.Min(1, n_kv - 1))
                        + ba * _SCORES,
                        "at attn_output.transpose(1, 2).contiguous(): the normed input, RoPE'd q, repeat_kv's "
                        "copies, the probabilities, A·V's output and its contiguous copy"),)
    moments = (
        core,
        *context,
        Term("block/attention/rope", ba * (T * d + T * d_h * sp.Max(4 * n_h + 2 * n_kv, 2 * n_h + 5 * n_kv))
             - S.beta_kv * 2 * S.b * (S.s + S.n) * n_kv * d_h,
             "at rotate_half(q) * sin: the normed input, q, k, v, q * cos, rotate_half(q) and its product; or, "
             "when k's heads weigh more (n_kv > 2n_h/3), at rotate_half(k) * sin: q still held by the caller, "
             "q_embed, k, v, k * cos, rotate_half(k) and its product; the last layer's KV cache is not written yet"),
        Term("block/feed_forward", 2 * ba * T * d + 3 * ba * T * d_ff + probs,
             "at silu(gate) * up: the residual sum and its normed input, SiLU's output, up's and their product "
             "(eager: and the probabilities attention returned)"),
        Term("block/ffn_norm", ba * T * d + _FP32 * T * d * (1 + not_fp32) + 2 * _FP32 * T + probs,
             "inside LlamaRMSNorm: x (the residual sum), its fp32 copy, the fp32 x*rsqrt (or x**2), and the fp32 "
             "variance and its rsqrt per row (eager: and the probabilities)"),
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
    """Bytes a training forward saves for backward under ``stack`` (an HF stack); with ``recompute``
    (gradient checkpointing) the peak during backward: one fp32 checkpoint per layer, one layer's saved
    tensors recomputed, and what lies outside the layers.

    >>> from symllm.arch.components import model
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
    moment, under ``stack`` (an HF stack).

    >>> from symllm.arch.components import model
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


def training_states(mdl: Component, stack: str, zero_stage: int = 0, optimizer: str = "adamw") -> sp.Expr:
    """Per data-parallel rank: fp32 master weights 4N, fp32 gradients 4N, AdamW's two fp32 moments 8N;
    ZeRO stage 1 shards the moments over ``N_d`` ranks, 2 also the gradients, 3 also the weights.

    >>> from symllm.arch.components import model
    >>> N = model().total("params")
    >>> training_states(model(), "hf-eager", 1) == 8 * N + 8 * sp.ceiling(N / S.N_d)   # rank 0's padded shard
    True
    """
    _check(stack, mdl)
    return zero.optimizer_states(mdl, zero_stage, optimizer, master=False)  # other optimizers: symllm.costs.zero


# --------------------------------------------------------------------------- the training step's peak

def training_terms(stack: str, recompute: bool = False, zero_stage: int = 0,
                   optimizer: str = "adamw") -> tuple[Term, ...]:
    """The candidates for the highest point of one steady-state training step under ``stack`` (``hf-eager``,
    ``hf-sdpa``): each Term is everything live at that moment except the fp32 master weights ``4N`` and
    AdamW's moments ``8N`` (held throughout). ``component`` names the moment; ``N`` is the parameter count.

    The loop (docs/stacks.md, "Training peak"): ``optimizer.zero_grad(set_to_none=True)``; ``loss =
    model(input_ids=ids, labels=labels).loss`` under autocast (the output, with its logits and KV cache,
    dropped before backward, as transformers' Trainer does); ``loss.backward()``; ``optimizer.step()`` with
    torch's default on a GPU, ``foreach`` AdamW. The batch (int64 ids and labels, ``16·b·s``) is held
    throughout. Step 2 onwards: the moments exist; the gradients of the previous step were freed. ZeRO
    shards as :func:`training_states` does (the optimizer step's gradients from stage 2, its temporary from
    stage 1); the backward's gradients are counted whole, as they are produced.

    >>> [t.component for t in training_terms("hf-eager")][:5]
    ['forward end', 'backward start', 'optimizer step', 'last layer MLP backward', 'first layer MLP backward']
    >>> [t.component for t in training_terms("hf-eager")][5:]
    ['last layer forward', 'last layer backward', 'first layer backward']
    >>> len(training_terms("hf-sdpa", recompute=True)), len(training_terms("hf-eager", recompute=True))
    (7, 11)
    """
    _check(stack)
    if stack in COMPONENT_STACKS:
        raise SymllmError(f"stack: {stack}'s training peak is a convention (phases.memory), not moments")
    T, d, d_ff, V, n_h, n_kv, d_h, L = _T, S.d, S.d_ff, S.V, S.n_h, S.n_kv, S.d_h, S.L
    saved = saved_terms(stack)
    emb, attn_norm, qkv, core, o_proj, rope, ffn_norm, ffn, norm, head, loss = saved
    block = sum((t.bytes for t in saved if t.component.startswith("block/") and t is not rope), sp.S.Zero)
    # the forward's saved bytes: every block (or, with recompute, its fp32 input: one checkpoint a layer)
    # and what lies outside the blocks; the int64 ids the embedding saves are the batch's (counted there)
    layers = L * (_FP32 * T * d if recompute else block)
    outside = rope.bytes + norm.bytes + head.bytes + loss.bytes
    batch = 2 * _INDEX * T
    kv = 0 if recompute else 2 * _FP32 * L * T * n_kv * d_h
    N = S.N
    grads = sp.ceiling(N / S.N_d) if zero.sharded("gradients", zero_stage) else N  # rank 0's padded shard
    # the step's temporary (symllm.costs.zero.step_temporary): foreach AdamW's copy of a moment by default
    temp = zero.step_temporary(optimizer, sp.ceiling(N / S.N_d) if zero.sharded("optimizer", zero_stage) else N,
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
    # there, after the head's backward, with only the fp32 inputs (and eager's mask) of the layers below held.
    head_grads = _FP32 * (V * d + d)  # lm_head's (tied: the shared table's) and the final norm's
    mask = _FP32 * S.b * S.s ** 2 if stack == "hf-eager" else 0  # eager's 4-D fp32 mask
    ends = {"last": ((L - 1) * (_FP32 * T * d if recompute else block), sp.S.Zero),
            "first": (sp.S.Zero, (L - 1) * _FP32 * _P_BLOCK)}
    held = batch + rope.bytes + head_grads + _FP32 * T * d + (mask if recompute else 0)  # residual's gradient
    for where, (below, above) in ends.items():
        out.append(Term(f"{where} layer MLP backward", held + below + above + block + 2 * _LOW * T * d_ff
                        + _FP32 * d * d_ff,
                        f"at silu(gate) * up's backward in the {where} layer: the layers below saved (recompute: "
                        "their fp32 inputs), the fp32 gradients of the head and of the layers above, the residual "
                        "stream's, the layer's saves, the bf16 gradient of down_proj's input and one of its two "
                        "products, down_proj's fp32 gradient"))
    if recompute:  # RoPE in a layer run again (in the forward itself the forward end holds more)
        X = T * n_h * d_h
        for where, (below, above) in ends.items():
            out.append(Term(f"{where} layer RoPE", held + below + above + attn_norm.bytes + qkv.bytes + _FP32 * T * d
                            + 2 * _LOW * T * n_kv * d_h + _LOW * X + 3 * _FP32 * X,
                            f"at q * cos + rotate_half(q) * sin in the {where} layer, run again: as its MLP "
                            "backward's moment, with its norm and q/k/v saves, the fp32 normed input, bf16 q, k and v, "
                            "and three fp32 b·s·n_h·d_h tensors (q * cos, the rotated product, their sum)"))
    if stack != "hf-eager":
        return tuple(out)
    scores = _SCORES
    gqa = sp.Min(1, n_h - n_kv) * sp.Min(1, n_kv - 1)  # repeat_kv copies (MHA, MQA: views)
    qk = _LOW * 2 * T * n_h * d_h  # Q·Kᵀ's bf16 casts of q and of the repeated k
    to_core = attn_norm.bytes + qkv.bytes + qk  # a layer's saves up to the softmax
    core_fwd = (mask + _FP32 * T * d + _FP32 * T * n_h * d_h * (1 + 2 * gqa) + 2 * _FP32 * scores)
    if not recompute:  # in the forward itself, the last layer: its KV cache and the mask held, no gradients
        out.append(Term("last layer forward", batch + (L - 1) * block + rope.bytes + to_core + kv + core_fwd,
                        "at the last layer's softmax: the layers below, its norm, q/k/v and Q·Kᵀ saves, the KV "
                        "cache, the eager 4-D fp32 mask, the fp32 normed input and RoPE'd q, repeat_kv's fp32 "
                        "copies of k and v, the masked fp32 scores and the fp32 probabilities"))
    else:
        for where, (below, above) in ends.items():
            out.append(Term(f"{where} layer forward", held - mask + below + above + to_core + core_fwd,
                            f"at the {where} layer's softmax, run again: as its MLP backward's moment, with its saves "
                            "up to the softmax, the mask, the fp32 normed input and RoPE'd q, repeat_kv's fp32 copies, "
                            "the masked fp32 scores and the fp32 probabilities"))
    for where, (below, above) in ends.items():
        out.append(Term(f"{where} layer backward", held + below + above + to_core + _FP32 * scores
                        + _FP32 * (3 * d * d_ff + d + n_h * d_h * d) + 2 * _FP32 * scores + _FP32 * T * n_h * d_h,
                        f"at the {where} layer's softmax backward: as its MLP backward's moment, with its saves up "
                        "to the fp32 probabilities, the fp32 gradients of its MLP, ffn_norm and o_proj, two fp32 "
                        "b·n_h·s² gradients and v's fp32 gradient waiting"))
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
    largest = sp.Max(*(t.bytes.subs(sizes) for t in training_terms(stack, recompute, zero_stage, optimizer)))
    return {"weights_and_moments": held, "largest_moment": largest}


def _held(mdl: Component, stack: str, zero_stage: int, optimizer: str = "adamw"):
    """fp32 master weights and the optimizer's states (ZeRO-sharded: the gradients are freed before each step),
    and the sizes the moments' symbols stand for."""
    _check(stack, mdl)
    N = mdl.total("params")
    held = zero.optimizer_states(mdl, zero_stage, optimizer, master=False) \
        - zero.training_states(N, zero_stage, {"gradients": zero.FP32_ADAMW["gradients"]})
    per_block = next(c for c in mdl.children if c.checkpoint != 0)
    sizes = {S.N: N, _P_BLOCK: per_block.total("params") / per_block.repeat, _P_LARGEST: largest_tensor(mdl)}
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
    return sp.Max(*sizes)


def moments(mdl: Component, stack: str, recompute: bool = False, zero_stage: int = 0,
            optimizer: str = "adamw") -> list[tuple[Term, sp.Expr]]:
    """Each of :func:`training_terms` with its whole bytes at that moment (the weights and the optimizer's
    states added, ``N`` and a block's parameters put in): :func:`training_peak` is their largest.

    >>> from symllm.arch.components import model
    >>> [t.component for t, _ in moments(model(), "hf-sdpa")][:2]
    ['forward end', 'backward start']
    """
    held, sizes = _held(mdl, stack, zero_stage, optimizer)
    return [(t, held + t.bytes.subs(sizes)) for t in training_terms(stack, recompute, zero_stage, optimizer)]
