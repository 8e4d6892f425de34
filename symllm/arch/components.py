"""LLaMA's components as SymPy expressions: one factory each, composed into a block and a model.

A :class:`Component` is an immutable value holding closed-form SymPy expressions for what it owns
(parameters, forward FLOPs, element-wise FLOPs, KV-cache elements) and its children. Totals add the
children up and multiply by ``repeat`` (the block repeats ``L`` times).

Conventions, stated once (docs/conventions.md):

* FLOPs count a multiply-add as 2; :func:`matmul` is the only place that says so.
* FLOP expressions are for one forward pass over ``b`` sequences of ``s`` new tokens each, with
  ``t`` tokens per sequence already in the KV cache (prefill: ``t = 0``; a decode step: ``s = 1``).
* The attention core (``QKᵀ`` and ``A·V``) counts every score of the ``s × (t + s)`` rectangle when
  ``causal=False`` ("dense", what eager/SDPA kernels and torch's ``FlopCounterMode`` count), or only
  the unmasked pairs ``s·t + s(s+1)/2`` when ``causal=True``. Never silently halved. A sliding window
  or attention chunk of ``W`` limits both to what transformers computes and its mask keeps (:func:`_pairs`).
* Element-wise FLOPs (norms, SiLU, gating, RoPE, softmax, residual adds) live in their own
  ``elementwise`` bucket, with the per-element counts in :data:`ELEMENTWISE`.

>>> from symllm.arch.symbols import d, d_h, n_h, n_kv
>>> attention().total("params")
2*d*d_h*n_h + 2*d*d_h*n_kv
>>> model().breakdown()["block/feed_forward/w2"]
L*d*d_ff
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
from dataclasses import dataclass

import sympy as sp

from symllm.arch.algebra import expanded, factored, minimum, substitute
from symllm.arch.config import swiglu_width
from symllm.arch import keeps
from symllm.arch.dtypes import FP32, INT64
from symllm.errors import SymllmError
from symllm.validate import boolean, short, with_list
from symllm.arch.layers import ACTIVATIONS, FFNS, NORMS, WINDOWS, LayerKind, Structure, Variant, group_names
from symllm.arch.layers import COMPONENTS, LATENT, MIXERS
from symllm.arch.symbols import (GROUP_COUNTS, L, LATEX, L_mtp, V, W, b, beta_a, s_o, d, d_fd, d_ff, d_se, d_h, d_hn, d_hr,
                                 d_hv, d_se, f, k, m, n, n_e, n_h, n_kv, r_kv, r_q, s, t)

__all__ = [
    "Component", "QUANTITIES", "ELEMENTWISE", "STAT_BYTES", "INDEX_BYTES", "matmul", "linear", "embedding",
    "attention", "latent_attention", "LATENT", "feed_forward", "swiglu", "rmsnorm", "qk_norms", "rope", "lm_head",
    "block", "model", "meta_hidden_dim",
    "router", "experts", "moe", "sinks", "FFNS", "WINDOWS", "LayerKind", "Structure", "group_counts", "SlidingPairs",
    "ChunkedPairs", "expand_windows",
    "COMPONENTS", "component", "collected", "decompressed_kv_cache", "mtp", "Rules", "SPLITS", "WEIGHTS", "lora_names",
    "Variant", "NORMS", "ACTIVATIONS", "MIXERS", "MIXER_FACTORIES", "mixer",
]

#: what a component can own and :meth:`Component.total` adds up; each an expression in symllm.arch.symbols
QUANTITIES = ("params", "active", "flops", "elementwise", "kv_cache", "saved", "state_cache")

#: element-wise FLOPs per element (the ``elementwise`` bucket), stated once
ELEMENTWISE = {
    "rmsnorm": 4,   # square, accumulate, scale by 1/rms, multiply by the weight (per-row rsqrt dropped)
    "silu": 4,      # x / (1 + exp(-x)): negate, exp, add, divide
    "gate": 1,      # silu(w1 x) * (w3 x)
    "rope": 3,      # per rotated element: 2 multiplies and 1 add of the 2x2 rotation
    "softmax": 5,   # per score: scale by 1/sqrt(d_h), subtract max, exp, accumulate, divide
    "residual": 1,  # per element of each residual add
    "bias": 1,      # per output element of a linear with a bias
    "l2norm": 3,    # Llama 4's weightless QK-norm: square, accumulate, scale by 1/rms
    "scale": 1,     # Llama 4's attention temperature on the queries of a layer without RoPE
    "combine": 2,   # per element of each routed expert's output: scale by its routing weight, add into the sum
    "sigmoid": 4,   # 1 / (1 + exp(-x)): negate, exp, add, divide (Qwen2-MoE's shared-expert gate)
    # gpt-oss's clamped SwiGLU per element of d_ff: clamp the gate from above (1), the up projection on both
    # sides (2), scale the gate by alpha = 1.702 (1), its sigmoid (4), gate * sigmoid (1), up + 1 (1), the product (1)
    "clamped_glu": 11,
    # GeGLU's gelu_pytorch_tanh, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): x³ (2 multiplies), times
    # 0.044715, add x, times √(2/π), tanh, add 1, times x, times 0.5
    "gelu_tanh": 9,
    "softcap": 3,   # Gemma 2's soft-capping c·tanh(x / c) per score or logit: divide, tanh, multiply
    "offset": 1,    # Gemma's RMSNorm scales by (1 + weight): one add per weight element, once per call
}

#: bytes of one saved normalisation statistic: RMSNorm's 1/rms per row is computed in
#: ``promote_types(activation dtype, fp32)`` (Meta's ``x.float()``; fp64 stays fp64), so max(4, β_a)
STAT_BYTES = sp.Max(FP32, beta_a, evaluate=False)  # the same Max (no comparison made, so import time builds no sum)
#: bytes of one token id saved by the embedding's backward (int64)
INDEX_BYTES = INT64

_T = b * s  # token rows in one forward pass

#: how tensor parallelism splits a component (:mod:`symllm.costs.parallel`; torch DTensor's plan styles):
#: "column" (a linear's output features: ``ColwiseParallel``), "row" (its input features, a bias replicated:
#: ``RowwiseParallel``), "vocab" (the embedding's rows), "sequence" (a replicated weight whose saved
#: activations sequence parallelism splits along the sequence: ``SequenceParallel``), "replicated", "expert"
#: (not tensor-split: divided over the expert-parallel ranks), "heads" (a vector of one number per query
#: head, split with the heads: ``Shard(0)``, transformers' ``local_rowwise``; gpt-oss's sinks)
SPLITS = ("column", "row", "vocab", "sequence", "replicated", "expert", "heads")
#: what a component's weight is, for the weight formats that store some kinds apart (symllm.costs.finetune:
#: QLoRA's NF4 stores the "linear" projections): "linear", "head" (the output projection), "embedding",
#: "norm", "router", "experts" (fused routed experts), "sinks" (gpt-oss's per-head attention sinks), "conv" (a
#: Gated DeltaNet's depthwise convolution), "decay" (its A_log and dt_bias), "none" (no weight)
WEIGHTS = ("linear", "head", "embedding", "norm", "router", "experts", "sinks", "conv", "decay", "none")

#: LLaMA's own block (:class:`symllm.arch.layers.Variant`)
LLAMA = Variant()


@dataclass(frozen=True)
class Rules:
    """What a component declares for the code that splits, adapts, stores and runs it, set where the
    layer is defined (as Meta's ``ColumnParallelLinear`` / ``RowParallelLinear`` say it): nothing
    downstream looks a component up by its name. ``None`` is "not declared": :func:`linear` refuses a
    linear without its split, its LoRA names and its stacks.

    >>> r = Rules("column", lora=("wq", "q_proj"), weight="linear", stacks=keeps.hf_rules(keeps.nothing))
    >>> r.split, r.lora, "hf-eager" in r.stacks, Rules(stacks=()).stacks
    ('column', ('wq', 'q_proj'), True, StackRules())
    >>> Rules("diagonal")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: split: unknown 'diagonal' (known: column, row, vocab, sequence, replicated, expert, heads)
    """

    #: how tensor parallelism splits it (:data:`SPLITS`); None: not declared (replicated if it has no shape)
    split: str | None = None
    #: the names LoRA adapts it by, symllm's then HF/PEFT's ``target_modules`` (("wq", "q_proj")); ():
    #: LoRA never adapts it; None: not declared
    lora: tuple[str, ...] | None = None
    #: what its weight is, for the weight formats (:data:`WEIGHTS`)
    weight: str = "none"
    #: each named stack (symllm.costs.stacks) that models it -> what that stack keeps for it
    #: (:class:`symllm.arch.keeps.Rule`: its saved and inference terms, in closed form); any other stack refuses
    #: a model holding it (``()``: none; None, not declared: every named stack refuses it)
    stacks: keeps.StackRules | None = None
    #: how a stack's refusal names it ("a sliding window (Mistral v0.1)"); "": the component's name
    label: str = ""
    #: LoRA targets (symllm names) under which PEFT adapts it in a way symllm does not model (Qwen3-MoE's
    #: fused experts, from gate_proj/up_proj/down_proj): a workload naming one is refused
    refused: tuple[str, ...] = ()
    #: the projections (symllm names) a fused linear holds (Phi-3's wqkv: wq, wk, wv): the default LoRA
    #: targets (wq, wv: PEFT's q_proj, v_proj) adapt it in a model that has no linear of theirs
    holds: tuple[str, ...] = ()

    def __post_init__(self):
        for field_, value, known in (("split", self.split, SPLITS), ("weight", self.weight, WEIGHTS)):
            if value is not None and value not in known:
                raise SymllmError(f"{field_}: unknown {value!r} (known: {', '.join(known)})")
        if self.stacks is not None and not isinstance(self.stacks, keeps.StackRules):
            if isinstance(self.stacks, tuple) and self.stacks:
                raise SymllmError(f"stacks: expected stack name -> rule (symllm.arch.keeps), got {self.stacks!r}")
            object.__setattr__(self, "stacks", keeps.StackRules(self.stacks))
        for field_ in ("lora", "refused", "holds"):
            value = getattr(self, field_)
            if value is not None and (not isinstance(value, tuple) or not all(isinstance(x, str) for x in value)):
                raise SymllmError(f"{field_}: expected a tuple of names, got {value!r}")
        if self.lora and len(self.lora) != 2:
            raise SymllmError(f"lora: expected (symllm name, HF name), got {self.lora!r}")


@dataclass(frozen=True, repr=False)
class Component:
    """A part of the model with closed-form expressions for what it owns, and its children.

    Every cost lives on the component that owns it: parameters, matmul and element-wise FLOPs, KV-cache
    elements, the bytes a training forward saves for backward, and what an inference pass keeps live;
    and so do its :class:`Rules` (tensor-parallel split, LoRA names, kind of weight, stacks).
    :mod:`symllm.costs.phases` only composes these (phases, dtypes, memory kinds); it never looks at names.

    >>> c = rmsnorm("attention_norm")
    >>> c.params, c.total("params")
    (d, d)
    >>> attention()
    Component(attention: params 2*d*d_h*n_h + 2*d*d_h*n_kv; children wq, wk, wv, wo, rope, scores, context)
    """

    #: short name; breakdown keys join names with "/"
    name: str
    #: parameters this component owns itself (children excluded)
    params: sp.Expr = sp.S.Zero
    #: of those, what one token uses (None: all of them; routed experts: the k it is sent to)
    active: sp.Expr | None = None
    #: matmul FLOPs of one forward pass (b sequences, s new tokens, t cached)
    flops: sp.Expr = sp.S.Zero
    #: element-wise FLOPs of that forward pass (see ELEMENTWISE)
    elementwise: sp.Expr = sp.S.Zero
    #: KV-cache elements held after that forward pass (keys and values of attention layers only)
    kv_cache: sp.Expr = sp.S.Zero
    #: bytes of every other per-sequence cache held after that pass (a Gated DeltaNet's recurrent and
    #: convolution states: symllm.arch.linear_attention), constant in the context
    state_cache: sp.Expr = sp.S.Zero
    #: bytes a training forward over b × s tokens saves for backward (β_a per activation element)
    saved: sp.Expr = sp.S.Zero
    #: bytes kept per repeat when this component is a recomputation checkpoint (its input); 0: not one
    checkpoint: sp.Expr = sp.S.Zero
    #: activation elements live throughout an inference pass through this component (the residual stream)
    resident: sp.Expr = sp.S.Zero
    #: activation elements this component holds live at its peak, one candidate per situation
    #: (the inference working set is the resident stream plus the largest candidate of the whole tree)
    live: tuple = ()
    #: the ``eager`` stack's ``saved`` and ``live`` where they differ (None: the same): ``saved`` and ``live``
    #: are the default ``fused`` stack's (FlashAttention / SDPA: no s² tensor), these an unfused attention
    #: core's (its s² probabilities kept for backward, its scores and probabilities live)
    eager_saved: sp.Expr | None = None
    eager_live: tuple | None = None
    #: sub-components
    children: tuple[Component, ...] = ()
    #: how many times this component occurs in its parent
    repeat: sp.Expr = sp.S.One
    #: definitions substituted by closed_form(), e.g. d_ff := Meta's rounding of d
    definitions: tuple[tuple[sp.Symbol, sp.Expr], ...] = ()
    #: what this component is, and the line of Meta's llama/model.py it models
    doc: str = ""
    #: a linear layer's (fan_in, fan_out); () for anything else (LoRA adapts by it: symllm.costs.finetune)
    shape: tuple = ()
    #: its tensor-parallel split, LoRA names, weight kind and stacks (:class:`Rules`)
    rules: Rules = Rules()

    def __post_init__(self):
        for q in QUANTITIES + ("checkpoint", "resident", "repeat"):
            if getattr(self, q) is not None or q != "active":
                object.__setattr__(self, q, sp.sympify(getattr(self, q)))
        object.__setattr__(self, "live", tuple(sp.sympify(x) for x in self.live))
        if self.eager_saved is not None:
            object.__setattr__(self, "eager_saved", sp.sympify(self.eager_saved))
        if self.eager_live is not None:
            object.__setattr__(self, "eager_live", tuple(sp.sympify(x) for x in self.eager_live))

    def own(self, quantity: str) -> sp.Expr:
        """What this component owns of ``quantity``, children excluded."""
        if quantity == "eager_saved":  # the eager stack's saved bytes: its own where it declares them
            return self.saved if self.eager_saved is None else self.eager_saved
        if quantity not in QUANTITIES:
            raise SymllmError(f"quantity: unknown {quantity!r} (known: {', '.join(QUANTITIES)})")
        if quantity == "active" and self.active is None:
            return self.params
        return getattr(self, quantity)

    def total(self, quantity: str = "params") -> sp.Expr:
        """``quantity`` summed over this component and its children, times ``repeat``.

        >>> block().total("params")
        3*d*d_ff + 2*d*d_h*n_h + 2*d*d_h*n_kv + 2*d
        """
        inner = self.own(quantity) + sum((c.total(quantity) for c in self.children), sp.S.Zero)
        return self.repeat * inner

    def breakdown(self, quantity: str = "params") -> dict[str, sp.Expr]:
        """Leaf path -> that leaf's total over every repeat of it, in model order.

        >>> list(attention().breakdown())
        ['wq', 'wk', 'wv', 'wo', 'rope', 'scores', 'context']
        """
        if not self.children:
            return {self.name: self.total(quantity)}
        out: dict[str, sp.Expr] = {}
        if self.own(quantity) != 0:
            out[self.name] = self.repeat * self.own(quantity)
        for c in self.children:
            for path, expr in c.breakdown(quantity).items():
                out[path if path == c.name else f"{c.name}/{path}"] = self.repeat * expr
        return out

    def walk(self):
        """This component and every descendant, depth first, in model order.

        >>> [c.name for c in feed_forward().walk()]
        ['feed_forward', 'w1', 'w2', 'w3']
        """
        yield self
        for c in self.children:
            yield from c.walk()

    def closed_form(self, quantity: str = "params") -> sp.Expr:
        """The total with this component's definitions substituted (e.g. Meta's d_ff rounding).

        >>> model(hidden="meta").closed_form().has(sp.ceiling)
        True
        """
        return substitute(self.total(quantity), dict(self.definitions))

    def child(self, path: str) -> Component:
        """The descendant at ``path`` ("block/attention"), relative to this component."""
        node = self
        for part in filter(None, path.split("/")):
            found = [c for c in node.children if c.name == part]
            if not found:
                raise SymllmError(f"component: no {part!r} in {node.name!r}")
            node = found[0]
        return node

    def replace(self, **changes) -> Component:
        """A copy with some fields changed (components are immutable)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self):
        kids = f"; children {', '.join(c.name for c in self.children)}" if self.children else ""
        times = f" x {self.repeat}" if self.repeat != 1 else ""
        return f"Component({self.name}{times}: params {self.total('params') / self.repeat}{kids})"

    def _repr_latex_(self) -> str:
        """Jupyter: each non-zero parameter sub-term and the collected total, as typeset math.

        >>> rmsnorm()._repr_latex_()
        '$$\\\\begin{aligned}N_{\\\\mathrm{rmsnorm}} &= d\\\\end{aligned}$$'
        """
        def label(name):
            leaf = name.rsplit("/", 1)[-1].replace("_", r"\_")
            return rf"N_{{\mathrm{{{leaf}}}}}"
        terms = [(k, v) for k, v in self.breakdown("params").items() if v != 0]
        lines = [rf"{label(k)} &= {sp.latex(v, symbol_names=LATEX)}" for k, v in terms] if len(terms) > 1 else []
        lines.append(rf"{label(self.name)} &= {sp.latex(collected(self.total('params')), symbol_names=LATEX)}")
        return "$$\\begin{aligned}" + r" \\ ".join(lines) + "\\end{aligned}$$"

    _repr_markdown_ = _repr_latex_  # Jupyter's Markdown renders the same $$ math


def collected(expr: sp.Expr) -> sp.Expr:
    """The shorter of the factored and the expanded form (readability, not a new formula).

    >>> collected(2 * d * d_h * n_h + 2 * d * d_h * n_kv)
    2*d*d_h*(n_h + n_kv)
    """
    return min([factored(expr), expanded(expr)], key=sp.count_ops)  # SymPy's factor and expand, faster


def matmul(rows: sp.Expr, inner: sp.Expr, cols: sp.Expr) -> sp.Expr:
    """FLOPs of a ``rows × inner`` by ``inner × cols`` product: the one place a multiply-add is 2 FLOPs.

    >>> matmul(b * s, d, d_ff)
    2*b*d*d_ff*s
    """
    return 2 * rows * inner * cols


def linear(name: str, fan_in: sp.Expr, fan_out: sp.Expr, bias: bool = False, doc: str = "", *,
           rules: Rules) -> Component:
    """A bias-optional linear layer over the ``b·s`` token rows, with its :class:`Rules` (a split, its LoRA
    names and its stacks must be declared).

    Parameters ``fan_in·fan_out`` (+ ``fan_out`` bias); FLOPs ``2·b·s·fan_in·fan_out``.

    >>> linear("wq", d, n_h * d_h, rules=_rules("column", "wq", "q_proj")).flops
    2*b*d*d_h*n_h*s
    >>> linear("wz", d, d, rules=Rules("column"))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: linear: wz declares no LoRA decision (Rules.lora)
    """
    for field_, what in (("split", "tensor-parallel split"), ("lora", "LoRA decision"), ("stacks", "stack rule")):
        if getattr(rules, field_) is None:
            raise SymllmError(f"linear: {name} declares no {what} (Rules.{field_})")
    return Component(
        name,
        params=fan_in * fan_out + (fan_out if bias else 0),
        flops=matmul(_T, fan_in, fan_out),
        elementwise=ELEMENTWISE["bias"] * _T * fan_out if bias else 0,
        doc=doc or f"nn.Linear({fan_in}, {fan_out}, bias={bias})",
        shape=(sp.sympify(fan_in), sp.sympify(fan_out)),
        rules=rules,
    )


def _rules(split: str, *lora: str) -> Rules:
    """The rules of one of LLaMA's projections: its split, its LoRA names (symllm's, HF's), a "linear"
    weight, and LlamaForCausalLM's stacks (which state its casts with its attention's or feed-forward's)."""
    return Rules(split, lora=lora, weight="linear", stacks=keeps.hf_rules(keeps.nothing))


def embedding(*, scale: bool = False) -> Component:
    """Token embedding ``V·d`` (a table look-up: no FLOPs); with ``scale`` (Gemma) the looked-up rows are
    multiplied by ``√d``, one element-wise FLOP per element and no parameter (a buffer).

    Models ``self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)``.

    >>> embedding().params, embedding(scale=True).elementwise
    (V*d, b*d*s)
    """
    _switches(scale=scale)
    out = Component("embedding", params=V * d, saved=INDEX_BYTES * _T,  # backward keeps the int64 token ids
                    doc="self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)",
                    # VocabParallelEmbedding
                    rules=Rules("vocab", lora=(), weight="embedding", stacks=keeps.hf_rules(keeps.embedding)))
    if not scale:
        return out
    return out.replace(elementwise=ELEMENTWISE["scale"] * _T * d,
                       doc="GemmaTextScaledWordEmbedding: embed_tokens(input_ids) * hidden_size**0.5",
                       rules=dataclasses.replace(out.rules, stacks=(), label="embeddings scaled by sqrt(d) (Gemma)"))


def _no_weight(keep=keeps.nothing) -> Rules:
    """The rules of a part without a weight that LlamaForCausalLM has: replicated, what its stacks keep ``keep``."""
    return Rules("replicated", lora=(), stacks=keeps.hf_rules(keep))


#: a part without a weight of LlamaForCausalLM that keeps nothing of its own
_NO_WEIGHT = _no_weight()
#: a norm of the residual stream: replicated, its saved input split along the sequence under sequence parallelism
_STREAM_NORM = Rules("sequence", lora=(), weight="norm", stacks=keeps.hf_rules(keeps.stream_norm))
#: the norm of the residual sum (ffn_norm): the same, and an inference moment of LlamaForCausalLM's stacks
_SUM_NORM = dataclasses.replace(_STREAM_NORM, stacks=keeps.hf_rules(keeps.stream_norm, moment=True))


def rmsnorm(name: str = "rmsnorm", width: sp.Expr = d, rows: sp.Expr = _T, doc: str = "",
            rules: Rules = _STREAM_NORM, offset: bool = False) -> Component:
    """RMSNorm: a weight of ``width`` (``d``; no bias) over ``rows`` rows (the ``b·s`` tokens),
    ``ELEMENTWISE['rmsnorm']`` FLOPs per element; by default a norm of the residual stream (``rules``).
    With ``offset`` (Gemma) it scales by ``1 + weight``: the same parameters, and the ``width`` adds of
    ``1 + weight`` once per call.

    Models ``self.weight = nn.Parameter(torch.ones(dim))`` in ``RMSNorm``.

    >>> rmsnorm().params, rmsnorm("q_norm", d_h, b * s * n_h).elementwise
    (d, 4*b*d_h*n_h*s)
    >>> rmsnorm(offset=True).elementwise - rmsnorm().elementwise
    d
    """
    _switches(offset=offset)
    if offset:
        doc = (doc or "GemmaRMSNorm(dim)") + "  # output * (1.0 + self.weight)"
        rules = dataclasses.replace(rules, stacks=(), label="RMSNorm scaling by (1 + weight) (Gemma)")
    return Component(name, params=width,
                     elementwise=ELEMENTWISE["rmsnorm"] * rows * width + (ELEMENTWISE["offset"] * width if offset else 0),
                     saved=beta_a * rows * width + STAT_BYTES * rows,  # its input x and the per-row 1/rms
                     doc=doc or "RMSNorm(args.dim): self.weight = nn.Parameter(torch.ones(dim))", rules=rules)


def qk_norms(kind: str = "rmsnorm", offset: bool = False) -> tuple[Component, Component]:
    """A norm on every query head and every key head: Qwen3's ``q_norm`` and ``k_norm`` (``"rmsnorm"``:
    RMSNorms of width ``d_h``, ``2·d_h`` parameters per layer, before RoPE; Gemma 3's scale by ``1 +
    weight``: ``offset``) or Llama 4's ``"l2"`` norm (no weight, after RoPE), over ``b·s·n_h`` and
    ``b·s·n_kv`` rows; or OLMo 2's ``"full"``: one RMSNorm over the whole query width ``n_h·d_h`` and one
    over the whole key width ``n_kv·d_h``, per token, before RoPE.

    >>> [c.params for c in qk_norms()], [c.params for c in qk_norms("l2")], [c.params for c in qk_norms("full")]
    ([d_h, d_h], [0, 0], [d_h*n_h, d_h*n_kv])
    """
    if kind == "full":
        # transformers' plan gathers q_proj's and k_proj's outputs for these norms: replicated on every rank
        rules = Rules("replicated", lora=(), weight="norm", stacks=(), label="QK-norms over the whole q and k (OLMo 2)")
        return (rmsnorm("q_norm", n_h * d_h, _T, "self.q_norm = Olmo2RMSNorm(num_attention_heads * head_dim)",
                        rules),
                rmsnorm("k_norm", n_kv * d_h, _T, "self.k_norm = Olmo2RMSNorm(num_key_value_heads * head_dim)",
                        rules))
    # on the heads, already split by tensor parallelism; LlamaForCausalLM has none
    rules = Rules("replicated", lora=(), weight="norm", stacks=(), label="per-head q/k norms (Qwen3, Llama 4)")
    if kind == "l2":
        doc = "self.qk_norm = Llama4TextL2Norm(config.rms_norm_eps)  # no weight; on each {} head after RoPE"
        return tuple(rmsnorm(name, d_h, _T * heads, doc.format(what), rules).replace(
                         params=0, elementwise=ELEMENTWISE["l2norm"] * _T * heads * d_h)
                     for name, heads, what in (("q_norm", n_h, "query"), ("k_norm", n_kv, "key")))
    if kind != "rmsnorm":
        raise SymllmError(f"qk_norm: unknown {kind!r} (known: rmsnorm, l2, full)")
    return (rmsnorm("q_norm", d_h, _T * n_h, "self.q_norm = Qwen3RMSNorm(self.head_dim)  # on each query head", rules,
                    offset),
            rmsnorm("k_norm", d_h, _T * n_kv, "self.k_norm = Qwen3RMSNorm(self.head_dim)  # on each key head", rules,
                    offset))


def rope(heads: sp.Expr = n_h + n_kv, width: sp.Expr = d_h) -> Component:
    """Rotary position embedding: no parameters (``freqs_cis`` is a buffer); rotates ``width`` elements
    of each of ``heads`` query and key heads (a partial rotary, GLM-4.5: ``d_hr`` of ``d_h``; MLA: its
    ``d_hr``-wide RoPE part of ``n_h`` query heads and one shared key head).

    >>> rope().params, rope().elementwise
    (0, 3*b*d_h*s*(n_h + n_kv))
    """
    return Component("rope", elementwise=ELEMENTWISE["rope"] * _T * heads * width,
                     doc="xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)", rules=_no_weight(keeps.rope))


class _WindowPairs(sp.Function):
    """``P(x, W)``: the unmasked query-key pairs of the first ``x`` positions of a sequence under a window
    ``W`` (a sum over positions of the keys each sees). Kept unevaluated inside a component's FLOPs so
    that a sum over decode steps telescopes (``P(t+1) - P(t)`` summed over ``t`` is two terms);
    :func:`expand_windows` writes it out with ``Min`` / ``floor`` (what ``costs`` hands on)."""

    @classmethod
    def eval(cls, x, w):
        if x == 0:
            return sp.S.Zero
        if x.is_Integer and w.is_Integer:
            return cls.explicit(x, w)
        return None

    @staticmethod
    def explicit(x, w):  # pragma: no cover - each subclass states its own
        raise NotImplementedError


class SlidingPairs(_WindowPairs):
    """``Σ_{j=1}^{x} min(j, W)``: position ``j`` (1-based) sees the last ``min(j, W)`` positions.

    >>> SlidingPairs(10, 4), sum(min(j, 4) for j in range(1, 11))
    (34, 34)
    >>> SlidingPairs.explicit(s, W)
    W*(s - Min(W, s)) + (Min(W, s) + 1)*Min(W, s)/2
    """

    @staticmethod
    def explicit(x, w):
        low = sp.Min(x, w)
        return low * (low + 1) / 2 + (x - low) * w


class ChunkedPairs(_WindowPairs):
    """``Σ_{j=1}^{x} ((j - 1) mod W + 1)``: position ``j`` sees the positions of its own chunk up to itself.

    >>> ChunkedPairs(10, 4), sum((j - 1) % 4 + 1 for j in range(1, 11))
    (23, 23)
    """

    @staticmethod
    def explicit(x, w):
        chunks = sp.floor(x / w)
        rest = x - w * chunks
        return chunks * w * (w + 1) / 2 + rest * (rest + 1) / 2


def expand_windows(expr: sp.Expr) -> sp.Expr:
    """``expr`` with every :class:`SlidingPairs` / :class:`ChunkedPairs` written out in ``Min`` / ``floor``.

    >>> expand_windows(SlidingPairs(s, W) - SlidingPairs(s - 1, W)).subs({s: 9, W: 4})
    4
    """
    if not expr.has(_WindowPairs):
        return expr
    return expr.replace(lambda e: isinstance(e, _WindowPairs), lambda e: type(e).explicit(*e.args))


def _pairs(causal: bool, window: str | None = None) -> sp.Expr:
    """Query-key pairs per sequence and head of a pass of ``s`` new queries after ``t`` cached tokens.

    Full attention: the dense rectangle ``s·(t + s)`` or the unmasked causal pairs. With a window the
    dense rectangle is what transformers computes: ``s`` queries × the keys it holds, the last
    ``min(t, W - 1)`` cached ones and the ``s`` new ones (its ``DynamicSlidingWindowLayer``, used for
    sliding and chunked layers alike); causal counts the pairs the mask keeps, ``P(t + s) - P(t)``.

    >>> _pairs(False, "sliding").subs({t: 100, s: 1, W: 8}), _pairs(True, "chunked").subs({t: 0, s: 10, W: 4})
    (8, 23)
    """
    if window not in WINDOWS:
        raise SymllmError(f"window: unknown {window!r} (known: {', '.join(map(str, WINDOWS))})")
    if window is None:
        return s * t + s * (s + 1) / 2 if causal else s * (t + s)
    if not causal:
        return s * (sp.Min(t + 1, W) + s - 1)  # min(t, W - 1) + s keys, written so decode steps telescope
    pairs = SlidingPairs if window == "sliding" else ChunkedPairs
    return pairs(t + s, W) - pairs(t, W)


def _structure(structure: Structure | None, options: dict) -> Structure:
    """The structure a factory builds for: ``structure``, or a :class:`Structure` of ``options`` (its fields
    as keywords: ``model(tied=True)``); never both."""
    if structure is None:
        unknown = sorted(set(options) - set(Structure.__dataclass_fields__))
        if unknown:
            known = ", ".join(Structure.__dataclass_fields__)
            raise SymllmError(f"{unknown[0]}: not a structural option (known: {known})")
        return Structure(**options)
    if not isinstance(structure, Structure) or options:
        raise SymllmError("structure: give a Structure or its fields as keywords, not both")
    return structure


def sinks() -> Component:
    """gpt-oss's attention sinks: one learned logit per query head (``n_h`` parameters per layer), appended to
    every row of scores before the softmax and dropped after it, so that a query may attend to "nothing".
    No matmul; the softmax runs over one more entry per query and head (``ELEMENTWISE['softmax']`` each),
    and nothing enters the KV cache.

    >>> sinks().params, sinks().elementwise
    (n_h, 5*b*n_h*s)
    """
    # split with the query heads under tensor parallelism (transformers' GptOssConfig plan: "local_rowwise";
    # vLLM's GptOssAttention holds num_attention_heads // tp_size of them); no LoRA target; a vector, kept
    # in the model's dtype by every weight format
    return Component("sinks", params=n_h, elementwise=ELEMENTWISE["softmax"] * b * n_h * s,
                     doc="self.sinks = nn.Parameter(torch.empty(config.num_attention_heads))  # GptOssAttention",
                     rules=Rules("heads", lora=(), weight="sinks", stacks=(), label="attention sinks (gpt-oss)"))


def attention(structure: Structure | None = None, kind: LayerKind = LayerKind(), *, causal: bool = False,
              **options) -> Component:
    """Attention for MHA, GQA and MQA alike (``n_kv`` decides), with RoPE and the attention core, of a layer
    of ``kind`` in a model of ``structure`` (or of a :class:`Structure` of ``options``).

    ``wq: d -> n_h·d_h``, ``wk, wv: d -> n_kv·d_h``, ``wo: n_h·d_h -> d``; ``QKᵀ`` and ``A·V`` each
    cost ``2·b·n_h·d_h`` FLOPs per query-key pair (``causal`` picks which pairs count).
    The KV cache holds ``2·b·(t + s)·n_kv·d_h`` elements after the pass. ``attention_bias`` puts a bias on
    all four projections, ``qkv_bias`` on ``wq``, ``wk``, ``wv`` only (Qwen2); ``qk_norm="rmsnorm"`` adds
    Qwen3's ``q_norm`` and ``k_norm`` (see :func:`qk_norms`), ``"l2"`` Llama 4's (in its layers with RoPE).
    A kind without ``rotary`` is a Llama 4 layer without RoPE: no rotation, and the temperature scaling of
    its queries. The kind's ``window`` (:data:`WINDOWS`) limits the keys a query sees to ``W`` (see
    :func:`_pairs`); the cache then holds the last ``min(t + s, W)`` positions. The structure's
    ``partial_rope`` rotates only ``d_hr`` of each head's ``d_h`` elements (GLM-4.5's
    ``partial_rotary_factor``: element-wise work only). The structure's ``sinks``
    adds gpt-oss's attention sinks (:func:`sinks`).
    The structure's ``variant`` (:class:`Variant`): Phi-3's fused ``wqkv`` (the same parameters and FLOPs as
    ``wq``, ``wk``, ``wv``), Gemma 2's soft-capped scores (``softcap`` FLOPs per score; eager attention also
    saves the capped scores' tanh for backward), Gemma's ``1 + weight`` QK-norms.

    >>> sp.factor(attention().total("params"))
    2*d*d_h*(n_h + n_kv)
    >>> sp.expand(attention(qkv_bias=True).total("params") - attention().total("params"))
    d_h*n_h + 2*d_h*n_kv
    """
    structure = _structure(structure, options)
    _switches(causal=causal)
    if not isinstance(kind, LayerKind):
        raise SymllmError(f"kind: expected a LayerKind, got {kind!r}")
    bias, qkv_bias, rotary, window = structure.attention_bias, structure.qkv_bias, kind.rotary, kind.window
    variant = structure.variant
    qk_norm = None if not rotary and structure.qk_norm == "l2" else structure.qk_norm  # Llama 4: RoPE layers only
    pairs = _pairs(causal, window)
    def holds(positions):  # what the cache holds after ``positions`` tokens: all, or the window's last W
        return positions if window is None else minimum(positions, W)
    held = holds(t + s)  # positions in the cache after the pass
    in_bias = bias or qkv_bias
    norms = qk_norms(qk_norm, variant.norm_offset and qk_norm != "full") if qk_norm is not None else ()
    core = matmul(b * n_h, d_h, 1) * pairs  # per head and query-key pair, a d_h-long dot product
    per_score = ELEMENTWISE["softmax"] + (ELEMENTWISE["softcap"] if variant.attn_softcap else 0)
    scores_rules = _no_weight(keeps.scores) if not variant.attn_softcap else Rules(
        "replicated", lora=(), stacks=(), label="soft-capped attention scores (Gemma 2)")
    if variant.fused:  # Phi-3: one linear for q, k and v, sliced after (its TP plan gathers the output)
        projections = (linear("wqkv", d, (n_h + 2 * n_kv) * d_h, in_bias,
                              "self.qkv_proj = nn.Linear(hidden_size, (n_heads + 2 * n_kv_heads) * head_dim)",
                              rules=Rules("column", lora=("wqkv", "qkv_proj"), weight="linear", stacks=(),
                                          label="fused projections (Phi-3)", holds=("wq", "wk", "wv"))),)
    elif structure.output_gate:  # Qwen3-Next, Qwen3.5: q_proj also makes the output gate, one per query element
        projections = (
            linear("wq", d, 2 * n_h * d_h, in_bias, "self.q_proj = nn.Linear(hidden_size, num_attention_heads * "
                   "head_dim * 2)  # query, gate = chunk(2)", rules=_rules("column", "wq", "q_proj")),
            *(linear(name, d, n_kv * d_h, in_bias, doc, rules=_rules("column", name, hf))
              for name, hf, doc in (("wk", "k_proj", "self.k_proj = nn.Linear(hidden_size, num_key_value_heads * head_dim)"),
                                    ("wv", "v_proj", "self.v_proj = nn.Linear(hidden_size, num_key_value_heads * head_dim)"))))
    else:
        projections = (
            linear("wq", d, n_h * d_h, in_bias, "self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim)",
                   rules=_rules("column", "wq", "q_proj")),  # ColumnParallelLinear
            linear("wk", d, n_kv * d_h, in_bias, "self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim)",
                   rules=_rules("column", "wk", "k_proj")),  # ColumnParallelLinear
            linear("wv", d, n_kv * d_h, in_bias, "self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim)",
                   rules=_rules("column", "wv", "v_proj")),  # ColumnParallelLinear
        )
    # LlamaForCausalLM's stacks hold a full-attention cache: a windowed attention is not theirs
    rules = _no_weight(keeps.attention) if window is None else Rules(
        "replicated", lora=(), stacks=(), label=f"a {window} window ({'Mistral v0.1' if window == 'sliding' else 'Llama 4'})")
    return Component(
        "attention",
        rules=rules,
        kv_cache=2 * b * held * n_kv * d_h,
        # saved for backward: the normed input of wq/wk/wv; Q and K after RoPE and V (n_kv heads: GQA
        # saves them unrepeated); the attention output (the core's, and the input of wo); the core's own
        # (the fused kernel's log-sum-exp, or eager's probabilities) sits on `scores`
        saved=beta_a * (_T * d + _T * d_h * (n_h + 2 * n_kv) + _T * n_h * d_h),
        children=(
            *projections,
            linear("wo", n_h * d_h, d, bias, "self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim)",
                   rules=_rules("row", "wo", "o_proj")),  # RowParallelLinear
            *norms,
            *((sinks(),) if structure.sinks else ()),
            *((Component("output_gate", elementwise=(ELEMENTWISE["sigmoid"] + ELEMENTWISE["gate"]) * _T * n_h * d_h,
                         saved=beta_a * _T * n_h * d_h,  # the gate, for the product's backward
                         doc="attn_output = attn_output * torch.sigmoid(gate)",
                         rules=Rules("replicated", lora=(), stacks=(), label="a gated attention output (Qwen3-Next, "
                                     "Qwen3.5)")),) if structure.output_gate else ()),
            (rope(width=d_hr) if structure.partial_rope else rope()) if rotary else Component(
                "temperature", elementwise=ELEMENTWISE["scale"] * _T * n_h * d_h,
                doc="query_states = query_states * attn_scales  # Llama 4: a layer without RoPE",
                rules=Rules("replicated", lora=(), stacks=(), label="layers without RoPE (Llama 4)")),
            # fused (FlashAttention's forward, SDPA's flash kernel): saves one fp32 log-sum-exp per query and
            # head, and holds live q and the output (k and v are the cache's) and that log-sum-exp (in whole
            # activation elements: exact but for int4 activations, 4.125 bytes a row); the scores
            # are recomputed tile by tile in backward. Eager: saves the probabilities b·n_h·s·s (A·V's left
            # operand), and holds live a prefill's scores and probabilities, or a decode step's at context s + n
            Component("scores", flops=core, elementwise=per_score * b * n_h * pairs,
                      saved=STAT_BYTES * b * n_h * s,
                      live=(2 * _T * n_h * d_h + sp.ceiling(STAT_BYTES / beta_a) * b * n_h * s,),
                      eager_saved=(2 if variant.attn_softcap else 1) * beta_a * b * n_h * s ** 2,
                      eager_live=(2 * b * n_h * s ** 2,
                                  2 * b * n_h * holds(s + n)),  # a decode step: 1 query at context s + n - 1
                      doc="scores = softmax(torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim))"
                          + ("; softcap * tanh(scores / softcap) before the mask" if variant.attn_softcap else ""),
                      rules=scores_rules),
            Component("context", flops=core, doc="output = torch.matmul(scores, values)",
                      rules=_no_weight(keeps.context)),
        ),
        doc="Attention(args): wq, wk, wv, wo; n_kv_heads = n_heads is MHA, 1 is MQA",
    )


#: the stacks of LlamaForCausalLM keep a GQA cache: a latent attention is none of theirs
_MLA = dict(stacks=(), label="multi-head latent attention (DeepSeek)")
#: its attention core (no stack models it: the latent attention holding it is refused first)
_MLA_CORE = Rules("replicated", lora=(), **_MLA)


def _mla_rules(split: str, ours: str, hf: str) -> Rules:
    """An MLA projection: its split, DeepSeek's name (``inference/model.py``) and HF's (LoRA targets)."""
    return Rules(split, lora=(ours, hf), weight="linear", **_MLA)


def latent_attention(*, queries: str = "q_lora", bias: bool = False, causal: bool = False) -> Component:
    """Multi-head latent attention (DeepSeek-V2, V3), as transformers' ``DeepseekV3Attention`` computes it.

    Queries: ``wq_a: d -> r_q``, an RMSNorm of ``r_q``, ``wq_b: r_q -> n_h·(d_hn + d_hr)`` (``queries=
    "q_proj"``: one ``wq: d -> n_h·(d_hn + d_hr)``). Keys and values: ``wkv_a: d -> r_kv + d_hr`` (the latent
    and one RoPE key shared by every head), an RMSNorm of ``r_kv``, ``wkv_b: r_kv -> n_h·(d_hn + d_hv)``
    (the decompression), ``wo: n_h·d_hv -> d``. ``bias`` (HF ``attention_bias``) is on ``wq_a``, ``wkv_a``
    and ``wo``. The cache holds the latent, ``b·(t + s)·(r_kv + d_hr)`` elements a layer (what transformers
    5's ``DynamicCache`` and the inference engines keep; :func:`decompressed_kv_cache` is the cache of a
    plain implementation). FLOPs are transformers': ``wkv_b`` decompresses every cached position on every
    pass (``b·(t + s)`` rows), and ``QKᵀ`` costs ``2·(d_hn + d_hr)``, ``A·V`` ``2·d_hv`` per head and pair.

    >>> a = latent_attention()
    >>> sp.expand(a.total("params"))
    d*d_hr + d*d_hv*n_h + d*r_kv + d*r_q + d_hn*n_h*r_kv + d_hn*n_h*r_q + d_hr*n_h*r_q + d_hv*n_h*r_kv + r_kv + r_q
    >>> a.total("kv_cache")
    b*(d_hr + r_kv)*(s + t)
    """
    if queries not in LATENT[1:]:
        raise SymllmError(f"latent: unknown {queries!r} (known: {', '.join(LATENT[1:])})")
    _switches(bias=bias, causal=causal)
    pairs = _pairs(causal)
    held = t + s
    d_qk = d_hn + d_hr  # a query/key head: its part without RoPE and its RoPE part
    # the latents' norms act on the replicated latent: replicated, no LoRA
    norm = Rules("replicated", lora=(), weight="norm", **_MLA)
    if queries == "q_lora":
        q = (linear("wq_a", d, r_q, bias, "self.wq_a = Linear(self.dim, self.q_lora_rank)",
                    rules=_mla_rules("replicated", "wq_a", "q_a_proj")),  # in no TP plan of transformers
             rmsnorm("q_a_norm", r_q, doc="self.q_norm = RMSNorm(self.q_lora_rank)", rules=norm),
             linear("wq_b", r_q, n_h * d_qk, doc="self.wq_b = ColumnParallelLinear(self.q_lora_rank, self.n_heads * "
                    "self.qk_head_dim)", rules=_mla_rules("column", "wq_b", "q_b_proj")))
    else:
        q = (linear("wq", d, n_h * d_qk, doc="self.wq = ColumnParallelLinear(self.dim, self.n_heads * self.qk_head_dim)",
                    rules=_mla_rules("column", "wq", "q_proj")),)
    wkv_b = linear("wkv_b", r_kv, n_h * (d_hn + d_hv),
                   doc="self.wkv_b = ColumnParallelLinear(self.kv_lora_rank, self.n_heads * (self.qk_nope_head_dim "
                       "+ self.v_head_dim))", rules=_mla_rules("column", "wkv_b", "kv_b_proj"))
    # transformers decompresses the whole cache (b·(t + s) latents) on every pass, not only the s new ones
    wkv_b = wkv_b.replace(flops=matmul(b * held, r_kv, n_h * (d_hn + d_hv)))
    return Component(
        "attention",
        rules=Rules("replicated", lora=(), **_MLA),
        kv_cache=b * held * (r_kv + d_hr),
        # saved for backward (tests/test_mla.py: transformers' DeepseekV3 under saved_tensors_hooks): the normed
        # input of wq_a (or wq) and wkv_a; the normed query latent, wq_b's input; q after RoPE; the normed KV
        # latent, wkv_b's input; the decompressed keys (RoPE key included) and values; the attention output,
        # wo's input (the latents' norms save their own inputs; RoPE saves only its cos/sin tables)
        saved=beta_a * (_T * d + (_T * r_q if queries == "q_lora" else 0) + _T * n_h * d_qk + _T * r_kv
                        + _T * n_h * (d_qk + d_hv) + _T * n_h * d_hv),
        children=(
            *q,
            linear("wkv_a", d, r_kv + d_hr, bias, "self.wkv_a = Linear(self.dim, self.kv_lora_rank + "
                   "self.qk_rope_head_dim)", rules=_mla_rules("replicated", "wkv_a", "kv_a_proj_with_mqa")),
            rmsnorm("kv_a_norm", r_kv, doc="self.kv_norm = RMSNorm(self.kv_lora_rank)", rules=norm),
            wkv_b,
            linear("wo", n_h * d_hv, d, bias, "self.wo = RowParallelLinear(self.n_heads * self.v_head_dim, self.dim)",
                   rules=_mla_rules("row", "wo", "o_proj")),
            rope(n_h + 1, d_hr),  # the RoPE part of every query head and the one shared key
            Component("scores", flops=matmul(b * n_h, d_qk, 1) * pairs,
                      elementwise=ELEMENTWISE["softmax"] * b * n_h * pairs, saved=STAT_BYTES * b * n_h * s,
                      live=(_T * n_h * (2 * d_qk + 2 * d_hv) + sp.ceiling(STAT_BYTES / beta_a) * b * n_h * s,),
                      eager_saved=beta_a * b * n_h * s ** 2,
                      eager_live=(2 * b * n_h * s ** 2, 2 * b * n_h * (s + n)),  # a decode step: t + s at s=1, t=s+n-1
                      doc="scores = torch.einsum('bshd,bthd->bsht', q, k) * self.softmax_scale", rules=_MLA_CORE),
            Component("context", flops=matmul(b * n_h, d_hv, 1) * pairs,
                      doc="x = torch.einsum('bsht,bthd->bshd', scores, v)", rules=_MLA_CORE),
        ),
        doc="MLA(args) (DeepSeek-V3 inference/model.py, attn_impl 'naive'; transformers' DeepseekV3Attention)",
    )


def decompressed_kv_cache() -> sp.Expr:
    """The KV-cache elements one latent-attention layer holds when the keys and values are kept
    decompressed (DeepSeek's ``attn_impl="naive"``, transformers 4's ``DeepseekV3Attention``): ``n_h``
    keys of ``d_hn + d_hr`` and values of ``d_hv`` per position, against the latent's ``r_kv + d_hr``
    (:func:`latent_attention`).

    >>> decompressed_kv_cache().subs({n_h: 128, d_hn: 128, d_hr: 64, d_hv: 128, b: 1, s: 1, t: 0})
    40960
    """
    return b * (t + s) * n_h * (d_hn + d_hr + d_hv)


def meta_hidden_dim(multiplier: bool = True) -> sp.Expr:
    """Meta's SwiGLU width, ``d_ff = m·⌈⌊f·⌊8d/3⌋⌋ / m⌉`` (the ``f`` step only with a multiplier).

    Models ``FeedForward.__init__`` in llama/model.py: ``hidden_dim = int(2 * (4 * dim) / 3)``, then
    ``int(ffn_dim_multiplier * hidden_dim)``, then rounding up to ``multiple_of``. Evaluate it with ``f``
    as a 53-bit ``Float`` and the product truncates exactly as Meta's IEEE double product does.

    >>> meta_hidden_dim()
    m*ceiling(floor(f*floor(8*d/3))/m)
    >>> meta_hidden_dim().subs({d: 4096, m: 1024, f: sp.Float(1.3)})
    14336
    """
    hidden = swiglu_width(d)
    if multiplier:
        hidden = sp.floor(f * hidden)
    return m * sp.ceiling(hidden / m)


def feed_forward(*, bias: bool = False, width: sp.Expr = d_ff, name: str = "feed_forward",
                 variant: Variant = LLAMA) -> Component:
    """The SwiGLU feed-forward ``w2(silu(w1 x) * w3 x)``: ``3·d·d_ff`` parameters without biases
    (``width`` is ``d_ff``; the dense layers of a model that interleaves MoE layers have ``d_fd``).
    ``variant``: GeGLU (Gemma's ``gelu_pytorch_tanh`` in place of SiLU, :data:`ELEMENTWISE`), or Phi-3's
    ``w13`` (``gate_up_proj``: ``w1`` and ``w3`` in one linear of ``2·d_ff`` outputs, chunked after).

    >>> feed_forward().total("params"), feed_forward(width=d_fd).total("params")
    (3*d*d_ff, 3*d*d_fd)
    >>> [c.name for c in feed_forward(variant=Variant(fused=True)).children]
    ['w13', 'w2']
    >>> feed_forward(variant=Variant(activation="gelu_tanh")).elementwise
    10*b*d_ff*s
    """
    act = variant.activation
    if variant.fused:  # Phi-3: gate and up in one linear (its TP plan gathers the output for the chunk)
        fused = Rules("column", lora=("w13", "gate_up_proj"), weight="linear", stacks=(),
                      label="fused projections (Phi-3)", holds=("w1", "w3"))
        projections = (linear("w13", d, 2 * width, bias, "self.gate_up_proj = nn.Linear(hidden_size, 2 * "
                              "intermediate_size)  # gate, up = chunk(2)", rules=fused),
                       linear("w2", width, d, bias, "self.down_proj = nn.Linear(intermediate_size, hidden_size)",
                              rules=_rules("row", "w2", "down_proj")))
    else:
        projections = (
            linear("w1", d, width, bias, "self.w1 = nn.Linear(dim, hidden_dim)",
                   rules=_rules("column", "w1", "gate_proj")),  # ColumnParallelLinear
            linear("w2", width, d, bias, "self.w2 = nn.Linear(hidden_dim, dim)",
                   rules=_rules("row", "w2", "down_proj")),  # RowParallelLinear
            linear("w3", d, width, bias, "self.w3 = nn.Linear(dim, hidden_dim)",
                   rules=_rules("column", "w3", "up_proj")),  # ColumnParallelLinear
        )
    return Component(
        name,
        elementwise=(ELEMENTWISE[act] + ELEMENTWISE["gate"]) * _T * width,
        # saved: the normed input of w1/w3, the w1 and w3 outputs (the activation's and gate's backward), the w2 input
        saved=beta_a * (_T * d + 3 * _T * width),
        live=(3 * _T * width,),  # the w1 and w3 outputs and their gated product
        children=projections,
        doc=("FeedForward: return self.w2(F.silu(self.w1(x)) * self.w3(x))" if act == "silu" else
             "GemmaMLP: down_proj(gelu_pytorch_tanh(gate_proj(x)) * up_proj(x))"),
        rules=_no_weight(keeps.feed_forward) if act == "silu" else Rules("replicated", lora=(), stacks=(),
                                                                         label="GeGLU (Gemma)"),
    )


def router(*, bias: bool = False) -> Component:
    """The router of a mixture-of-experts layer: ``d -> n_e`` logits per token (``bias``: gpt-oss's), and
    their softmax (Mixtral; Llama 4 takes a sigmoid of the top k, gpt-oss a softmax of the top k: the same
    per-logit count is used).

    >>> router().params, router().flops, router(bias=True).params
    (d*n_e, 2*b*d*n_e*s, d*n_e + n_e)
    """
    # replicated on every tensor rank (torch's plan for Mixtral and Llama 4 leaves the gate out); PEFT's
    # LoRA for them targets the projections, not the gate; QLoRA keeps it in the model's dtype
    out = linear("router", d, n_e, bias, doc=f"self.gate = nn.Linear(hidden_size, num_local_experts, bias={bias})",
                 rules=Rules("replicated", lora=(), weight="router", stacks=(), label="a mixture-of-experts router"))
    return out.replace(elementwise=out.elementwise + ELEMENTWISE["softmax"] * _T * n_e)


def experts(*, bias: bool = False, clamped: bool = False, fused_lora: bool = False) -> Component:
    """``n_e`` routed SwiGLU experts of width ``d_ff``; each token runs ``k`` of them.

    Parameters ``3·d·d_ff`` per expert, all ``n_e`` of them (``active``: the ``k`` a token uses); FLOPs
    the ``k`` experts' three matmuls per token (the model's FLOPs: an implementation that runs every
    expert on every token, as transformers' Llama 4 does, computes ``n_e / k`` times as many). ``bias``:
    gpt-oss's biases, ``2·d_ff`` on the fused gate/up projection and ``d`` on the down projection of each
    expert; ``clamped``: gpt-oss's clamped SwiGLU (``ELEMENTWISE['clamped_glu']`` per element of ``d_ff``).
    ``fused_lora``: PEFT adapts these fused tensors under the SwiGLU's LoRA names (Qwen3-MoE), which symllm
    does not model: those targets are refused (``Rules.refused``).

    >>> e = experts()
    >>> e.params, e.active, e.flops
    (3*d*d_ff*n_e, 3*d*d_ff*k, 6*b*d*d_ff*k*s)
    >>> sp.factor(experts(bias=True).params - e.params)
    n_e*(d + 2*d_ff)
    """
    rows = k * _T  # token-expert pairs: each token's row goes through k experts
    per = 3 * d * d_ff + ((2 * d_ff + d) if bias else 0)  # one expert's weights (and biases)
    glu = ELEMENTWISE["clamped_glu"] if clamped else ELEMENTWISE["silu"] + ELEMENTWISE["gate"]
    return Component(
        "experts", params=per * n_e, active=per * k,
        flops=2 * matmul(rows, d, d_ff) + matmul(rows, d_ff, d),
        elementwise=rows * (glu * d_ff + ELEMENTWISE["combine"] * d
                            + (ELEMENTWISE["bias"] * (2 * d_ff + d) if bias else 0)),
        # saved: each pair's gathered input, its w1 and w3 outputs, the w2 input, the w2 output (scaled)
        saved=beta_a * rows * (2 * d + 3 * d_ff),
        # experts run one after another: the largest expert's w1/w3 outputs and gated product (every token
        # routed to it), and the output being summed
        live=(3 * _T * d_ff + _T * d,),
        doc=("GptOssExperts: n_e x (gate_up_proj [d, 2 d_ff] + bias, down_proj [d_ff, d] + bias)" if bias
             else "MixtralExperts / Llama4TextExperts: n_e x SwiGLU(d, d_ff); top-k routing"),
        # fused parameters, not linears: no LoRA target, kept in the model's dtype by QLoRA
        rules=Rules("expert", lora=(), weight="experts", stacks=(), label="routed experts",
                    refused=("w1", "w2", "w3") if fused_lora else ()),
    )


def moe(*, shared: bool = False, gated: bool = False, bias: bool = False, clamped: bool = False,
        fused_lora: bool = False, shared_experts: bool = False, shared_bias: bool = False) -> Component:
    """A mixture-of-experts feed-forward: router, ``n_e`` routed experts (``k`` per token), and with
    ``shared`` Llama 4's shared expert (a dense SwiGLU of width ``d_ff`` every token runs); ``gated`` makes
    it Qwen2-MoE's: of its own width ``d_se``, its output scaled by ``sigmoid(shared_expert_gate(x))``, a
    ``d -> 1`` linear. ``bias`` and ``clamped`` are gpt-oss's router and expert biases and clamped SwiGLU
    (:func:`router`, :func:`experts`); ``fused_lora`` is :func:`experts`'. ``shared_experts``: DeepSeek's
    (one SwiGLU of width ``d_se``, ``n_shared_experts × moe_intermediate_size``, every token runs;
    ``shared_bias``: DeepSeek-V2's ``mlp_bias`` on it).

    >>> moe().total("params"), moe().total("active")
    (3*d*d_ff*n_e + d*n_e, 3*d*d_ff*k + d*n_e)
    >>> sp.expand(moe(shared=True).total("params") - moe().total("params"))
    3*d*d_ff
    >>> sp.expand(moe(shared=True, gated=True).total("params") - moe().total("params"))
    3*d*d_se + d
    >>> sp.expand(moe(shared_experts=True).total("params") - moe().total("params"))
    3*d*d_se
    """
    _switches(shared=shared, gated=gated, bias=bias, clamped=clamped, fused_lora=fused_lora,
              shared_experts=shared_experts, shared_bias=shared_bias)
    if gated and not shared:
        raise SymllmError("gated: a gate without a shared expert (gated=True needs shared=True)")
    if shared and shared_experts:
        raise SymllmError("shared_experts: a layer has Llama 4's shared expert or DeepSeek's, not both")
    extra = ()
    if shared:
        width = d_se if gated else d_ff
        ffn = feed_forward(name="shared_expert", width=width)
        extra = (ffn.replace(saved=beta_a * 3 * _T * width,  # its input is the router's, counted once here
                             doc="self.shared_expert = Llama4TextMLP(config)  # every token" if not gated else
                             "self.shared_expert = Qwen2MoeMLP(config, shared_expert_intermediate_size)"),)
    if shared_experts:
        ffn = feed_forward(name="shared_experts", width=d_se, bias=shared_bias)
        extra = (ffn.replace(saved=beta_a * 3 * _T * d_se,  # its input is the router's, counted once here
                             doc="self.shared_experts = MLP(self.dim, args.n_shared_experts * args.moe_inter_dim)"
                                 "  # every token"),)
    if gated:
        # F.sigmoid(self.shared_expert_gate(x)) * shared_expert_output: a d -> 1 linear (replicated on every
        # tensor rank, as transformers' plan leaves it; PEFT adapts it only when named), its sigmoid, the product
        gate = linear("shared_expert_gate", d, 1, doc="self.shared_expert_gate = torch.nn.Linear(hidden_size, 1, bias=False)",
                      rules=Rules("replicated", lora=("shared_expert_gate", "shared_expert_gate"), weight="linear",
                                  stacks=(), label="a gated shared expert (Qwen2-MoE)"))
        extra += (gate.replace(elementwise=ELEMENTWISE["sigmoid"] * _T + ELEMENTWISE["gate"] * _T * d,
                               saved=beta_a * (_T + _T * d)),)  # the gate's sigmoid; the shared expert's output
    return Component(
        "moe", saved=beta_a * (_T * d + _T * n_e),  # the normed input; the routing probabilities
        children=(router(bias=bias), experts(bias=bias, clamped=clamped, fused_lora=fused_lora), *extra),
        doc="MixtralSparseMoeBlock / Llama4TextMoe / DeepseekV3MoE: route each token to k of n_e experts",
        rules=Rules("replicated", lora=(), stacks=(), label="mixture-of-experts layers (Mixtral, Llama 4, DeepSeek)"),
    )


swiglu = feed_forward


def _switches(**flags) -> None:
    """Refuse a switch that is not a bool (``tied="no"`` is truthy; it must not count as tied)."""
    for name, value in flags.items():
        boolean(name, value)


def lm_head(*, tied: bool = False, softcap: bool = False) -> Component:
    """The output projection ``d -> V``: ``V·d`` parameters untied, 0 tied (counted once, in the
    embedding), and ``2·b·s_o·d·V`` FLOPs either way over the ``s_o`` positions of each sequence whose logits
    are computed (``--logits``: 1, the last, by default at inference, as vLLM, SGLang, TensorRT-LLM and HF
    ``generate`` do: ``logits_to_keep``; ``s``, every position, in training: :mod:`symllm.costs.phases`), the
    ``b·s_o·V`` logits live; with ``softcap`` (Gemma 2) each logit is soft-capped,
    ``ELEMENTWISE['softcap']`` FLOPs per logit.

    >>> lm_head(tied=True).params, lm_head(tied=True).flops, lm_head().live
    (0, 2*V*b*d*s_o, (V*b*s_o,))
    >>> lm_head(tied="no")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tied: expected True or False, got 'no'
    """
    _switches(tied=tied, softcap=softcap)
    # ColumnParallelLinear over the vocabulary (its loss vocabulary-parallel); no LoRA target; transformers
    # keeps the output embedding out of bitsandbytes' quantization
    out = linear("lm_head", d, V, doc="self.output = nn.Linear(params.dim, params.vocab_size, bias=False)",
                 rules=Rules("column", lora=(), weight="head", stacks=keeps.hf_rules(keeps.lm_head)))
    rows = b * s_o  # the positions whose logits are computed (hidden_states[:, -logits_to_keep:, :])
    # saves its input (training: every position); the logits are live
    out = out.replace(flops=matmul(rows, d, V), saved=beta_a * _T * d, live=(rows * V,))
    if softcap:  # logits = tanh(logits / cap) * cap: element-wise, after the matmul
        out = out.replace(elementwise=ELEMENTWISE["softcap"] * rows * V, doc=out.doc + "; soft-capped logits",
                          saved=out.saved + beta_a * _T * V,  # tanh's backward keeps its output
                          rules=dataclasses.replace(out.rules, stacks=(), label="soft-capped final logits (Gemma 2)"))
    return out.replace(params=0, doc=out.doc + " (tied to tok_embeddings)") if tied else out


def block(structure: Structure | None = None, kind: LayerKind = LayerKind(), *, causal: bool = False,
          name: str = "block", **options) -> Component:
    """One pre-norm transformer block of ``kind`` in a model of ``structure`` (or of a :class:`Structure` of
    ``options``): ``h = x + attention(attention_norm(x))``, ``out = h + feed_forward(ffn_norm(h))``. A kind
    with ``ffn="moe"`` has a mixture of experts (:func:`moe`, with the structure's shared expert or DeepSeek's
    shared experts); a dense one a SwiGLU of width ``d_ff``, or ``d_fd`` in a model that also has MoE layers.
    The structure's ``latent`` makes its attention a multi-head latent attention (:func:`latent_attention`).
    The structure's ``variant.norms`` moves the norms: ``"post"`` (OLMo 2) normalises each branch's output
    before its residual add, ``h = x + post_attention_norm(attention(x))``, ``out = h +
    post_ffn_norm(feed_forward(h))``; ``"sandwich"`` (Gemma 2, 3) has both, four norms a block.

    >>> [c.name for c in block().children], [c.name for c in block(kind=LayerKind(ffn="moe")).children][-1]
    (['attention_norm', 'attention', 'ffn_norm', 'feed_forward'], 'moe')
    >>> [c.name for c in block(variant=Variant(norms="post")).children]
    ['attention', 'post_attention_norm', 'feed_forward', 'post_ffn_norm']
    """
    structure = _structure(structure, options)
    _switches(causal=causal)
    variant = structure.variant
    if kind.ffn == "moe":
        ffn = moe(shared=structure.shared_expert, gated=structure.shared_gate, bias=structure.moe_bias,
                  clamped=structure.clamped, fused_lora=structure.fused_lora, shared_experts=structure.shared_experts,
                  shared_bias=structure.mlp_bias and structure.shared_experts)
    else:
        ffn = feed_forward(bias=structure.mlp_bias, width=d_fd if structure.has_moe else d_ff, variant=variant)
    if kind.mixer != "attention":  # a token mixer of its own module (symllm.arch.linear_attention)
        attn = mixer(kind.mixer)(structure, kind)
    elif structure.latent is not None:
        attn = latent_attention(queries=structure.latent, bias=structure.attention_bias, causal=causal)
    else:
        attn = attention(structure, kind, causal=causal)
    off = variant.norm_offset
    post = Rules("sequence", lora=(), weight="norm", stacks=(), label="norms after attention and feed-forward "
                 "(OLMo 2, Gemma 2 and 3)")
    pre = variant.norms in ("pre", "sandwich")
    after = variant.norms in ("post", "sandwich")
    children = (
        *([rmsnorm("attention_norm", offset=off)] if pre else []),
        attn,
        *([rmsnorm("post_attention_norm", doc="post_attention_layernorm(attn_output), before the residual add",
                   rules=post, offset=off)] if after else []),
        *([rmsnorm("ffn_norm", rules=_SUM_NORM, offset=off)] if pre else []),
        ffn,
        *([rmsnorm("post_ffn_norm", doc="post_feedforward_layernorm(mlp_output), before the residual add",
                   rules=post, offset=off)] if after else []),
    )
    return Component(
        name,
        elementwise=2 * ELEMENTWISE["residual"] * _T * d,
        checkpoint=beta_a * _T * d,  # full recomputation keeps only the block's input
        resident=2 * _T * d,  # the residual stream and the normed input
        children=children,
        doc="TransformerBlock(layer_id, args)",
        rules=_no_weight(keeps.block),
    )


#: token mixer (a LayerKind's ``mixer`` other than attention) -> its factory ``(structure, kind) -> Component``,
#: registered by its own module, which imports this one (so this one names it only as a string)
MIXER_FACTORIES: dict = {}
#: the module that registers each mixer's factory
_MIXER_MODULES = {"linear_attention": "symllm.arch.linear_attention"}


def mixer(name: str):
    """The factory of the token mixer ``name`` (:data:`MIXER_FACTORIES`), its module imported on first use.

    >>> mixer("linear_attention").__name__
    'gated_deltanet'
    """
    if name not in MIXER_FACTORIES:
        if name not in _MIXER_MODULES:
            raise SymllmError(f"mixer: unknown {name!r} (known: attention, {', '.join(_MIXER_MODULES)})")
        importlib.import_module(_MIXER_MODULES[name])
    return MIXER_FACTORIES[name]


def group_counts(groups: int) -> tuple[sp.Expr, ...]:
    """The blocks of each of ``groups`` groups: ``L`` for one; ``L - L_2 - ...`` then ``L_2``, ... for more
    (:data:`symllm.arch.symbols.GROUP_COUNTS`, bound to the spec's counts).

    >>> group_counts(1), group_counts(3)
    ((L,), (L - L_2 - L_3, L_2, L_3))
    """
    rest = GROUP_COUNTS[:groups - 1]
    return (L,) if groups == 1 else (L - sum(rest), *rest)


def model(structure: Structure | None = None, *, causal: bool = False, **options) -> Component:
    """The whole model of ``structure`` (or of a :class:`Structure` of ``options``): embedding, one group of
    identical blocks per kind of layer (``structure.kinds``, each repeated by its count: :func:`group_counts`,
    named by :func:`symllm.arch.layers.group_names`), the final norm and the lm_head.

    ``hidden`` says where ``d_ff`` comes from: ``"explicit"`` (a stated ``hidden_dim`` /
    ``intermediate_size``, never re-rounded), ``"meta"`` (Meta's rounding with a multiplier ``f``) or
    ``"meta_plain"`` (Meta's rounding without one).
    The structure's ``variant`` (:class:`Variant`) is what Phi-3, OLMo 2 and Gemma change of LLaMA's block, in
    every layer.

    >>> sp.expand(model(hidden="explicit").total())
    3*L*d*d_ff + 2*L*d*d_h*n_h + 2*L*d*d_h*n_kv + 2*L*d + 2*V*d + d
    >>> kinds = (LayerKind(), LayerKind(ffn="moe"), LayerKind(ffn="moe", rotary=False))
    >>> [(c.name, c.repeat) for c in model(kinds=kinds).children[1:-2]]
    [('block', L - L_2 - L_3), ('moe_block', L_2), ('nope_block', L_3)]
    """
    structure = _structure(structure, options)
    _switches(causal=causal)
    hidden = structure.hidden
    definitions = () if hidden == "explicit" else ((d_ff, meta_hidden_dim(hidden == "meta")),)
    variant = structure.variant
    groups = tuple(block(structure, kind, causal=causal, name=name).replace(repeat=count)
                   for kind, name, count in zip(structure.kinds, group_names(structure.kinds),
                                                group_counts(len(structure.kinds))))
    return Component(
        "model",
        children=(embedding(scale=variant.embed_scale), *groups, rmsnorm("norm", offset=variant.norm_offset),
                  lm_head(tied=structure.tied, softcap=variant.final_softcap)),
        definitions=definitions,
        doc="Transformer(params)",
        rules=_NO_WEIGHT,
    )


def mtp(whole: Component) -> Component:
    """The ``L_mtp`` multi-token-prediction modules a DeepSeek-V3 or GLM-4.5 checkpoint stores after the
    last layer (``model.layers.{L}``: DeepSeek-V3's ``MTP`` of its ``inference/model.py`` and paper §2.2), as
    the checkpoint holds them: its own copies of the embedding and the output head (``embed_tokens``,
    ``shared_head.head``; the paper shares them with the main model), ``enorm`` and ``hnorm`` (RMSNorms of
    ``d``), ``eh_proj`` (``2d -> d``), one block like the model's last ones and ``shared_head.norm``.
    transformers does not build them: their parameters are reported apart (``mtp``), never in the total.

    >>> sp.expand(mtp(model()).total("params") - L_mtp * block().total("params"))
    2*L_mtp*V*d + 2*L_mtp*d**2 + 3*L_mtp*d
    """
    last = [c for c in whole.children if c.checkpoint != 0][-1]
    return Component(
        "mtp", repeat=L_mtp,
        children=(embedding(), rmsnorm("enorm"), rmsnorm("hnorm"),
                  linear("eh_proj", 2 * d, d, doc="self.eh_proj = nn.Linear(2 * dim, dim, bias=False)",
                         rules=Rules("replicated", lora=(), weight="linear", stacks=(), label="multi-token prediction")),
                  last.replace(repeat=1), rmsnorm("shared_head_norm"), lm_head()),
        doc="the multi-token-prediction module (model.layers.{L} of the checkpoint)", rules=_NO_WEIGHT)


def component(name: str, whole: Component | None = None) -> Component:
    """The component called ``name`` (see :data:`COMPONENTS`; ``swiglu`` is ``feed_forward``) as it sits
    in the model ``whole`` (default: :func:`model` with default options); ``block`` is one block.

    >>> component("swiglu").name
    'feed_forward'
    >>> component("block").repeat, component("rmsnorm").total("params")
    (1, d)
    """
    if name not in COMPONENTS:
        raise SymllmError(with_list(f"component: unknown {short(name, 20)} (known: ", COMPONENTS,
                                    see="symllm derive --help", near=name))
    whole = whole if whole is not None else model()
    path = COMPONENTS[name]
    if not path.startswith("block"):
        comp = whole.child(path)
    else:  # the first group of blocks that has it (Maverick's MoE is its second group)
        for group in (c for c in whole.children if c.checkpoint != 0):
            try:
                comp = group.child(path.partition("/")[2])
                break
            except SymllmError:
                continue
        else:
            raise SymllmError(f"component: this model has no {name!r}")
    return comp.replace(repeat=1) if comp.repeat != 1 else comp


#: model() with every structural option switched on: every factory's parts, each at least once
#: (:func:`lora_names` reads the declarations from it; a new option belongs here)
EVERY_PART = dict(attention_bias=True, mlp_bias=True, qkv_bias=True, qk_norm="rmsnorm", shared_expert=True,
                  partial_rope=True,
                  kinds=(LayerKind(window="sliding"), LayerKind(ffn="moe", window="chunked"),
                         LayerKind(ffn="moe", rotary=False), LayerKind(mixer="linear_attention")),
                  output_gate=True,
                  variant=Variant(norms="sandwich", activation="gelu_tanh", norm_offset=True, embed_scale=True,
                                  attn_softcap=True, final_softcap=True),
                  shared_gate=True, sinks=True, moe_bias=True, clamped=True, fused_lora=True)
#: the parts that replace others (Phi-3's fused projections replace wq/wk/wv and w1/w3): a second model
#: :func:`lora_names` reads, after :data:`EVERY_PART`'s
EVERY_FUSED = dict(EVERY_PART, variant=dataclasses.replace(EVERY_PART["variant"], fused=True), delta_split=True)
#: the same for a model with latent attention (DeepSeek), whose attention and shared experts exclude some of
#: EVERY_PART's (q/k/v biases, QK-norm, windows, Llama 4's shared expert, layers without RoPE)
EVERY_LATENT_PART = dict(attention_bias=True, mlp_bias=True, shared_experts=True, latent="q_lora",
                         kinds=(LayerKind(), LayerKind(ffn="moe")))


def lora_names() -> dict[str, str]:
    """Every name LoRA may target -> its symllm name, read from the linears' :class:`Rules` (symllm's
    names first, in model order, then HF/PEFT's): the vocabulary of ``--lora-targets``.

    >>> list(lora_names())[:7]
    ['wq', 'wk', 'wv', 'wo', 'w1', 'w2', 'w3']
    >>> lora_names()["gate_proj"]
    'w1'
    """
    return dict(_lora_pairs())


@functools.cache
def _lora_pairs() -> tuple:
    """:func:`lora_names` as (name, symllm name) pairs, read once per process (three whole models are walked)."""
    pairs = dict.fromkeys(c.rules.lora for every in (EVERY_PART, EVERY_FUSED, EVERY_LATENT_PART)
                          for c in model(**every).walk() if c.rules.lora)
    return (*((ours, ours) for ours, _ in pairs), *((hf, ours) for ours, hf in pairs))
