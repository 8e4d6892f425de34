"""The part options, declared once each: what a config field sets in the component tree.

An :class:`Option` says, for one way a model differs from LLaMA's: the :class:`~symllm.arch.config.ModelConfig`
field(s) it is read from and their default, the axis it sets (a :class:`~symllm.arch.layers.Structure`
field, a :class:`~symllm.arch.layers.Variant` field, or a :class:`~symllm.arch.layers.LayerKind` field that
a family states per layer), the components it contributes (each declares its own Hugging Face, GGUF and
LoRA names on its :class:`~symllm.arch.components.Rules`), its value with every part switched on (what the
LoRA vocabulary and tests/test_rules.py build), what the torch reference (:mod:`symllm.reference`) does
with it, and the line ``symllm count`` prints for it. From :data:`OPTIONS` come the structure of a config
(:func:`structure_options`, :func:`variant_options`: what :func:`symllm.arch.specs.spec_of` builds), the
lines ``count`` prints (:func:`described`), the models with every part
(:data:`symllm.arch.components.EVERY_PART`) and the tests' lists of options.

This module loads no SymPy (config files are read with it).

>>> from symllm.arch.config import load
>>> structure_options(load("qwen3-8b"))["qk_norm"], variant_options(load("gemma-2-2b"))["norms"]
('rmsnorm', 'sandwich')
>>> print(", ".join(o.name for o in OPTIONS if o.axis == "kind"))  # doctest: +NORMALIZE_WHITESPACE
moe, linear_attention, mamba, compressed, nope, temperature, own_heads, layer_sinks, k_eq_v, kv_shared, wide_ffn,
shared_topk, whole_rope, sliding, chunked
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable

from symllm.arch.layers import LATENT, LayerKind, Structure, Variant
from symllm.errors import SymllmError
from symllm.validate import choice, plural

__all__ = ["Option", "OPTIONS", "AXES", "option", "structure_options", "variant_options", "described",
           "every_part"]

#: the axes an option sets: a field every layer shares (``structure``), what a dense family changes of
#: LLaMA's block (``variant``), a way layers differ (``kind``: a family states it per layer), or none
#: (``size``: a width of parts another option contributes, read as a number)
AXES = ("structure", "variant", "kind", "size")


@dataclass(frozen=True)
class Option:
    """One part option, declared once (module docstring).

    >>> option("sinks").config, option("sinks").parts, option("sinks").on
    (('attention_sinks',), ('sinks',), True)
    """

    #: its name (the axis field's, where it has one)
    name: str
    #: the ModelConfig field(s) it is read from
    config: tuple[str, ...]
    #: what those fields default to (LLaMA's block), one per field
    default: tuple
    #: the axis it sets (:data:`AXES`)
    axis: str
    #: the axis field it sets (a Structure, Variant or LayerKind field; "" for a size)
    field: str
    #: the value of that field for a config (default: the config field as it is)
    value: Callable[[Any], Any] | None = None
    #: the components it contributes to the tree (symllm's names; each declares its own names and rules)
    parts: tuple[str, ...] = ()
    #: the values the tests switch it to (its choices where it has several): tests/test_rules.py builds a model
    #: with each (a kind's: one layer of it beside a plain one), tests/strategies.py draws a variant's
    choices: tuple = ()
    #: its value with every part switched on (symllm.arch.components.EVERY_PART); None: not switched on there
    on: Any = None
    #: the attention it goes with: "gqa" (every option but DeepSeek's), "latent" (with latent attention only,
    #: as the tests draw it) or "both"
    models: str = "gqa"
    #: what the torch reference (symllm/reference.py) does with it; "": the reference does not build it
    #: (windows, a partial rotary, ...: transformers' own classes check those)
    reference: str = ""
    #: the line ``symllm count`` prints for a config that has it ("" where another line says it)
    text: Callable[[Any], str] | None = None
    #: one line: what it is
    doc: str = ""
    #: the tensors a checkpoint stores its part as, for each of its values: ``(value, ((Hugging Face name, shape),
    #: ...))``, each size of a shape a product of :mod:`symllm.arch.symbols` names and integers (``"2*d_ff"``), a name
    #: ending in ``_bias`` only where the part has biases; :func:`symllm.costs.checkpoints.expected` lays them out
    #: (and checks their elements are the part's parameters); (): the part's components name their own tensors
    names: tuple = ()

    def __post_init__(self):
        choice("axis", self.axis, AXES)
        choice("models", self.models, ("gqa", "latent", "both"))
        if len(self.default) != len(self.config):
            raise SymllmError(f"{self.name}: one default per config field ({self.config})")

    def read(self, config) -> Any:
        """The axis value for ``config`` (its first config field as it is, unless :attr:`value` says)."""
        return self.value(config) if self.value is not None else getattr(config, self.config[0])


def _on(field: str, doc: str, ref: str, text: str = "", *, axis: str = "structure", parts=(), config=None,
        choices=(True,), on=True, models="gqa") -> Option:
    """A boolean option read from the config field ``config`` (default: ``field``), False by default."""
    name = config or field
    return Option(field, (name,), (False,), axis, field, parts=parts, choices=choices, on=on, models=models,
                  reference=ref, text=(lambda c: text if getattr(c, name) else "") if text else None, doc=doc)


def _moe_text(c) -> str:
    shared = (f"; a gated shared expert of width {c.shared_hidden_dim}" if c.shared_hidden_dim
              and c.n_shared_experts is None else
              "; a shared expert" if c.shared_expert else "")
    return (f"mixture of experts: {c.n_experts} experts, {c.experts_per_token} per token, in {c.n_moe_layers} "
            f"of {c.n_layers} layers" + shared)


def _window_text(c) -> str:
    windowed = c.count_layers(lambda kind: kind.window == "sliding")
    return f"sliding window {c.sliding_window}" + (f" in {windowed} of {c.n_layers} layers"
                                                   if 0 < windowed < c.n_layers else "")


def _linear_text(c) -> str:
    linear = c.count_layers(lambda kind: kind.mixer == "linear_attention")
    return f"Gated DeltaNet (linear attention) in {linear} of {c.n_layers} layers" if linear else ""


def _shared_topk_text(c) -> str:
    shared = c.count_layers(lambda kind: kind.shared_topk)
    return (f"{shared} of {c.n_layers} layers reuse the previous layer's top-k (no indexer, no indexer keys)"
            if shared else "")


def _heads_text(c) -> str:
    own = c.count_layers(lambda kind: kind.heads == "own")
    return (f"{own} of {c.n_layers} layers with {c.alt_heads} query heads, {c.alt_kv_heads} key/value heads of width "
            f"{c.alt_head_dim}" if own else "")


def _partial_rope_text(c) -> str:
    if not c.partial_rotary_factor:
        return ""
    whole = c.count_layers(lambda kind: kind.rope_part == "whole")
    return (f"RoPE on {c.rope_dim} of each head's {c.head_dim}" + (
        f" in {c.n_layers - whole} of {c.n_layers} layers, on all of it in the others" if whole else ""))


def _sinks_text(c) -> str:
    with_sinks = c.count_layers(lambda kind: kind.sinks)
    return f"attention sinks in {with_sinks} of {c.n_layers} layers" if with_sinks else ""


def _k_eq_v_text(c) -> str:
    shared = c.count_layers(lambda kind: kind.k_eq_v)
    return f"{shared} of {c.n_layers} layers without wv (keys used as values)" if shared else ""


def _kv_shared_text(c) -> str:
    shared = c.count_layers(lambda kind: kind.kv_shared)
    wide = c.count_layers(lambda kind: kind.wide_ffn)
    return ((f"{shared} of {c.n_layers} layers reuse an earlier layer's keys and values (no wk, wv, no KV cache of "
             "their own)" if shared else "")
            + (f"; their feed-forward {2 * c.hidden_dim} wide" if wide else ""))


def _mamba_text(c) -> str:
    mamba = c.count_layers(lambda kind: kind.mixer == "mamba")
    return (f"Mamba-2 mixers in {mamba} of {c.n_layers} layers: {c.mamba_heads} heads of {c.mamba_head_dim}, "
            f"state {c.ssm_state}, {c.mamba_groups} groups" if mamba else "")


def _compressed_text(c) -> str:
    counts = {m: c.count_layers(lambda kind, m=m: kind.mixer == m)
              for m in ("shared_kv", "compressed_sparse", "heavily_compressed")}
    if not any(counts.values()):
        return ""
    kinds = {"shared_kv": "sliding window only", "compressed_sparse": f"compressed sparse (every {c.compress_csa} "
             f"tokens, top {c.index_topk})",
             "heavily_compressed": f"heavily compressed (every {c.compress_hca} tokens)"}
    said = ", ".join(f"{text} in {counts[m]}" for m, text in kinds.items() if counts[m])  # the kinds it has
    return (f"DeepSeek-V4 attention: one shared key-value head, queries through q_lora_rank {c.q_lora_rank}, "
            f"output in {c.o_groups} groups of {c.o_lora_rank}; {said} of {c.n_layers} layers")


def _latent_text(c) -> str:
    return (f"multi-head latent attention: kv_lora_rank {c.kv_lora_rank}, q_lora_rank {c.q_lora_rank}, head widths "
            f"{c.qk_nope_head_dim} + {c.qk_rope_head_dim} (RoPE), values {c.v_head_dim}; the KV cache holds the "
            f"latent, {(c.kv_lora_rank or 0) + (c.qk_rope_head_dim or 0)} a token and layer")


_QK_TEXT = {"rmsnorm": "QK-norm (rmsnorm of width d_h)", "l2": "QK-norm (weightless L2, in the RoPE layers)",
            "full": "QK-norm over the whole q and k (rmsnorm of n_h*d_h and n_kv*d_h)",
            "layernorm": "QK-norm (a LayerNorm per head)"}
_NORMS_TEXT = {"post": "norms after attention and feed-forward",
               "sandwich": "norms before and after attention and feed-forward",
               "parallel": "attention and feed-forward in parallel under one norm"}

#: every part option, in the order ``symllm count`` describes them
OPTIONS: tuple[Option, ...] = (
    _on("attention_bias", "biases on wq, wk, wv, wo (HF attention_bias)", "nn.Linear(bias=True) on wq, wk, wv, wo",
        "biases on wq, wk, wv, wo", models="both"),
    Option("qkv_bias", ("qkv_bias",), (False,), "structure", "qkv_bias", choices=(True,), on=True,
           reference="nn.Linear(bias=True) on wq, wk, wv (Qwen2Attention)",
           text=lambda c: "biases on wq, wk, wv" if c.qkv_bias and not c.attention_bias else "",
           doc="biases on wq, wk, wv only (Qwen2)"),
    _on("mlp_bias", "biases on w1, w2, w3 (HF mlp_bias)", "nn.Linear(bias=True) on w1, w2, w3",
        "biases on w1, w2, w3", models="both"),
    Option("qk_norm", ("qk_norm",), (None,), "structure", "qk_norm", parts=("q_norm", "k_norm"),
           choices=("rmsnorm", "l2", "full", "layernorm"), on="rmsnorm",
           reference="RMSNorm(head_dim) on each q/k head (Qwen3), over the whole q and k (OLMo 2), weightless "
                     "L2 after RoPE (Llama 4), a LayerNorm per head with its own weight (Command-R+)",
           text=lambda c: _QK_TEXT.get(c.qk_norm, ""), doc="a norm on q and k: per head (Qwen3, Llama 4's L2, "
                                                           "Command-R+'s LayerNorm) or over the whole width (OLMo 2)"),
    Option("fused", ("fused",), (False,), "variant", "fused", parts=("wqkv", "w13"), choices=(True,),
           reference="wqkv sliced into q, k, v; w13 chunked into gate, up",
           text=lambda c: "" if not c.fused else "fused projections wqkv (qkv_proj) and w13 (gate_up_proj)"
           if c.activation in ("silu", "gelu_tanh") else "q, k and v from one fused projection wqkv (MPT's Wqkv)",
           doc="fused projections wqkv and w13 (Phi-3; wqkv alone beside an ungated MLP: MPT)"),
    Option("norms", ("norms",), ("pre",), "variant", "norms", parts=("post_attention_norm", "post_ffn_norm"),
           choices=("post", "sandwich", "parallel"), on="sandwich",
           reference="RMSNorm of each branch's output before its residual add (post: OLMo 2; sandwich: Gemma 2, "
                     "3); parallel: x + attn(n) + ffn(n), n = norm(x) (Command-R)",
           text=lambda c: _NORMS_TEXT.get(c.norms, ""), doc="where a block's norms sit (NORMS)"),
    _on("layernorm", "every norm is Cohere's LayerNorm: mean subtracted, a weight, no bias (Command-R)",
        "CohereLayerNorm: the mean subtracted, weight only", "LayerNorm (mean subtracted, no bias)", axis="variant"),
    Option("logit_scale", ("logit_scale",), (None,), "variant", "logit_scale",
           value=lambda c: c.logit_scale is not None, choices=(True,), on=True, reference="logits * logit_scale",
           text=lambda c: f"logits scaled by {c.logit_scale:g}" if c.logit_scale else "",
           doc="the logits multiplied by a constant (Command-R's logit_scale)"),
    Option("activation", ("activation",), ("silu",), "variant", "activation", choices=("gelu_tanh", "relu2", "gelu"),
           on="gelu_tanh", reference="F.gelu(approximate='tanh') in place of SiLU; w2(relu(w3 x)²), w2(gelu(w3 x)) "
                                     "ungated",
           text=lambda c: {"gelu_tanh": "GeGLU (gelu_pytorch_tanh)",
                           "relu2": "an ungated MLP with squared ReLU (relu2)",
                           "gelu": "an ungated MLP with the exact GELU"}.get(c.activation, ""),
           doc="the feed-forward's activation (ACTIVATIONS: Gemma's GeGLU, Nemotron-H's ungated relu2, MPT's "
               "ungated GELU)"),
    _on("alibi", "ALiBi: each head's slope times the query-key distance added to every attention score (MPT)",
        "scores + slope_h * (j - i), MPT's slopes", "ALiBi position bias (no parameters)", axis="variant",
        on=None),  # not in the every-part models: MPT's Wqkv replaces Phi-3's (components.EVERY_ALIBI has it)
    Option("clip_qkv", ("clip_qkv",), (None,), "variant", "clip_qkv", value=lambda c: c.clip_qkv is not None,
           choices=(True,), on=None,
           text=lambda c: f"q, k and v clamped to [-{c.clip_qkv:g}, {c.clip_qkv:g}]" if c.clip_qkv else "",
           doc="q, k and v clamped after their projection, two compares an element (MPT's attn_config.clip_qkv)"),
    _on("value_norm", "a weightless RMSNorm on the values (Gemma 4's v_norm)", "", "", axis="variant",
        parts=("v_norm",)),
    _on("layer_scalar", "each block's output times its layer_scalar buffer (Gemma 4)", "", "", axis="variant"),
    _on("norm_offset", "RMSNorm scales by 1 + weight (Gemma)", "RMSNorm(offset=True): output * (1 + weight)",
        "RMSNorm by (1 + weight)", axis="variant"),
    _on("embed_scale", "embeddings times sqrt(d) (Gemma)", "h = embedding * sqrt(dim)",
        "embeddings scaled by sqrt(d)", axis="variant"),
    Option("attn_softcap", ("attn_softcap",), (None,), "variant", "attn_softcap",
           value=lambda c: c.attn_softcap is not None, choices=(True,), on=True,
           reference="scores = c * tanh(scores / c) before the mask",
           text=lambda c: f"attention scores soft-capped at {c.attn_softcap:g}" if c.attn_softcap else "",
           doc="attention scores soft-capped at the value (Gemma 2)"),
    Option("final_softcap", ("final_softcap",), (None,), "variant", "final_softcap",
           value=lambda c: c.final_softcap is not None, choices=(True,), on=True,
           reference="logits = c * tanh(logits / c)",
           text=lambda c: f"final logits soft-capped at {c.final_softcap:g}" if c.final_softcap else "",
           doc="final logits soft-capped at the value (Gemma 2)"),
    Option("moe", ("n_experts", "experts_per_token"), (None, None), "kind", "ffn", parts=("moe", "router", "experts"),
           choices=("moe",), models="both",
           reference="MoE(router, n_experts SwiGLU experts, top-k) in the layers of kind moe",
           text=lambda c: _moe_text(c) if c.n_experts else "",
           doc="a mixture of experts in the layers whose kind says ffn='moe' (the family states which)"),
    _on("shared_expert", "Llama 4's shared expert (a SwiGLU of width d_ff every token runs)",
        "a dense SwiGLU beside the experts", parts=("shared_expert",)),
    Option("shared_gate", ("shared_hidden_dim",), (None,), "structure", "shared_gate",
           value=lambda c: c.shared_hidden_dim is not None and c.n_shared_experts is None,
           parts=("shared_expert_gate",), choices=(True,), on=True,
           reference="the shared expert of its own width, scaled by sigmoid(shared_expert_gate(x))",
           doc="Qwen2-MoE's gated shared expert of its own width d_se"),
    Option("shared_experts", ("n_shared_experts",), (None,), "structure", "shared_experts",
           value=lambda c: c.n_shared_experts is not None, parts=("shared_experts",), choices=(True,), on=None,
           models="latent", reference="one SwiGLU of n_shared_experts x hidden_dim every token runs",
           text=lambda c: (f"{plural(c.n_shared_experts, 'shared expert')} of width {c.hidden_dim}"
                           if c.shared_hidden_dim is None
                           else f"a shared expert of width {c.shared_hidden_dim}") if c.n_shared_experts else "",
           doc="DeepSeek's shared experts"),
    Option("latent_moe", ("moe_latent_size",), (None,), "structure", "latent_moe",
           value=lambda c: c.moe_latent_size is not None, parts=("fc1_latent_proj", "fc2_latent_proj"),
           choices=(True,), on=True,
           text=lambda c: (f"routed experts in a latent width of {c.moe_latent_size} (fc1_latent_proj, "
                           "fc2_latent_proj)") if c.moe_latent_size else "",
           doc="the routed experts run in a latent width between two projections (Nemotron-3 Super's "
               "moe_latent_size)"),
    _on("moe_beside_mlp", "Gemma 4's MoE block (enable_moe_block): the dense MLP of width d_fd kept, Gemma 4's "
        "router and GeGLU experts beside it, each branch under its own norms, their outputs summed", "",
        "the dense MLP beside the experts (Gemma 4's MoE block: three more norms a layer)",
        parts=("router_scale", "per_expert_scale", "post_ffn_norm_1", "moe_norm", "post_moe_norm")),
    _on("moe_bias", "gpt-oss's biases on the router and the experts", "biases on the router and every expert",
        "biases on the router and the experts"),
    _on("clamped", "gpt-oss's clamped SwiGLU experts", "the clamped SwiGLU in the experts",
        "clamped SwiGLU experts", config="clamped_swiglu"),
    _on("sinks", "gpt-oss's attention sinks (a learned logit per query head)",
        "a column of sink logits in the softmax, dropped after it", "attention sinks", parts=("sinks",),
        config="attention_sinks"),
    Option("dense_width", ("dense_hidden_dim",), (None,), "size", "",
           text=lambda c: f"dense layers of width {c.dense_hidden_dim}" if c.dense_hidden_dim else "",
           reference="the dense layers' SwiGLU of width dense_hidden_dim",
           doc="the dense layers' width d_fd beside MoE layers (Llama 4's intermediate_size_mlp)"),
    Option("latent", ("kv_lora_rank", "q_lora_rank"), (None, None), "structure", "latent",
           value=lambda c: c.latent, parts=("wq_a", "q_a_norm", "wq_b", "wkv_a", "kv_a_norm", "wkv_b"),
           choices=tuple(LATENT[1:]), on=None, models="latent", reference="LatentAttention (DeepSeek-V3's MLA)",
           text=lambda c: _latent_text(c) if c.kv_lora_rank else "",
           doc="multi-head latent attention (DeepSeek-V2, V3)"),
    Option("indexer", ("index_topk",), (None,), "structure", "indexer",
           value=lambda c: c.index_topk is not None and c.kv_lora_rank is not None,
           parts=("indexer", "index_wq_b", "index_wk", "index_k_norm", "index_weights", "index_rope", "index_scores"),
           choices=(True,), on=True, models="latent",
           text=lambda c: (f"DeepSeek Sparse Attention: an indexer of {c.index_heads} heads of {c.index_head_dim}; "
                           f"each query attends its top {c.index_topk} keys; the indexer's keys, "
                           f"{c.index_head_dim} a token and layer, in the state cache")
                           if c.index_topk and c.kv_lora_rank else "",
           doc="DeepSeek Sparse Attention's indexer on a latent attention (DeepSeek-V3.2, GLM-5)"),
    Option("partial_rope", ("partial_rotary_factor",), (None,), "structure", "partial_rope",
           value=lambda c: c.partial_rotary_factor is not None, choices=(True,), on=True,
           text=lambda c: _partial_rope_text(c),
           doc="RoPE on part of each head (GLM-4.5, Phi-4-mini's partial_rotary_factor)"),
    Option("mtp", ("n_mtp_layers",), (0,), "structure", "mtp", value=lambda c: c.n_mtp_layers > 0,
           choices=(True,), on=None, models="latent",
           text=lambda c: (f"{plural(c.n_mtp_layers, 'multi-token prediction module')} in the checkpoint, "
                           "counted apart (transformers does not build them)") if c.n_mtp_layers else "",
           doc="multi-token-prediction modules the checkpoint stores (reported apart)"),
    Option("mtp_blocks", ("mtp_kinds",), (None,), "structure", "mtp_blocks",
           value=lambda c: () if c.mtp_kinds is None else tuple(
               [kind for kind, _ in c.groups].index(k) for k in c.mtp_kinds), choices=((0,),), on=None,
           text=lambda c: (f"each multi-token prediction module: {plural(len(c.mtp_kinds), 'block')} like the model's, "
                           "its embedding and output head the model's") if c.mtp_kinds else "", models="both",
           doc="the blocks of a multi-token-prediction module sharing the model's embedding and head (Nemotron-H's "
               "mtp_layers_block_type, Qwen3-Next's one full-attention layer; reported apart)"),
    Option("mtp_copy", ("n_mtp_layers",), (0,), "structure", "mtp_copy",
           value=lambda c: ([kind for kind, _ in c.groups].index(c.layers[-1][0])
                            if c.n_mtp_layers and c.mtp_kinds is None else -1), choices=(0,), on=None,
           models="latent",
           doc="the block a DeepSeek-V3-style multi-token-prediction module copies: the kind of the model's last "
               "layer (vLLM's DeepSeekMultiTokenPredictorLayer builds layer num_hidden_layers, of the kind "
               "first_k_dense_replace gives it: the last layer's)"),
    _on("output_gate", "a gated attention output: o_proj(attn * sigmoid(gate)), the gate from a doubled q_proj "
        "(Qwen3-Next, Qwen3.5)", "", "gated attention output", parts=("output_gate",)),
    Option("gate_proj", ("gate_proj",), (None,), "structure", "gate_proj", parts=("wg", "output_gate"),
           choices=("head", "element"), on="head",
           text=lambda c: f"a softplus output gate (g_proj) per {c.gate_proj}" if c.gate_proj else "",
           doc="Laguna's output gate o_proj(attn * softplus(g_proj(x))), one gate a head or a query element"),
    replace(
        _on("router_score_bias", "the router's e_score_correction_bias held as a parameter, n_e numbers (Laguna)", "",
            on=None),  # held on the router (mlp.gate); transformers' conversion mapping saves it beside the experts
        names=((True, (("experts.e_score_correction_bias", ("n_e",)),)),)),
    Option("linear_attention", ("layers",), (None,), "kind", "mixer",
           parts=("in_proj_qkvz", "in_proj_ba", "conv1d", "decay", "delta_rule", "out_proj"),
           choices=("linear_attention",),
           text=lambda c: _linear_text(c),
           doc="Gated DeltaNet token mixers in the layers of kind mixer='linear_attention' (Qwen3-Next, Qwen3.5)"),
    _on("delta_split", "the Gated DeltaNet's four input projections (Qwen3.5: in_proj_qkv, in_proj_z, in_proj_b, "
        "in_proj_a); False: Qwen3-Next's two", "", parts=("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"),
        choices=(False, True), on=None),  # False too: Qwen3-Next's in_proj_qkvz and in_proj_ba
    Option("mamba", ("layers",), (None,), "kind", "mixer", choices=("mamba",),
           parts=("in_proj", "conv1d", "A_log", "D", "dt_bias", "ssd_scan", "out_proj"),
           text=lambda c: _mamba_text(c),
           doc="Mamba-2 token mixers in the layers of kind mixer='mamba' (Nemotron-H)"),
    Option("compressed", ("layers",), (None,), "kind", "mixer",
           choices=("shared_kv", "compressed_sparse", "heavily_compressed"),
           parts=("wq_a", "q_a_norm", "wq_b", "wkv", "kv_norm", "wo_a", "wo_b", "sinks", "compressor", "indexer"),
           text=lambda c: _compressed_text(c),
           doc="DeepSeek-V4's attention in the layers of kind mixer='shared_kv' (sliding window only), "
               "'compressed_sparse' (CSA) or 'heavily_compressed' (HCA)"),
    Option("hyper_connections", ("hc_mult",), (None,), "structure", "hyper_connections",
           value=lambda c: c.hc_mult is not None, parts=("attn_hc", "ffn_hc", "hc_head"), choices=(True,), on=True,
           text=lambda c: f"{c.hc_mult} residual streams mixed by hyper-connections" if c.hc_mult else "",
           doc="DeepSeek-V4's manifold-constrained hyper-connections (hc_mult residual streams)"),
    _on("conv_bias", "a bias on the Mamba-2 convolution (Nemotron-H's use_conv_bias)", ""),
    _on("mamba_bias", "biases on the Mamba-2 in_proj and out_proj (Nemotron-H's use_bias)", ""),
    Option("nope", ("layers",), (None,), "kind", "rotary", choices=(False,),
           reference="no rotation in the layers of kind rotary=False",
           text=lambda c: f"{c.n_nope_layers} layers without RoPE" if c.n_nope_layers else "",
           doc="layers without RoPE (Llama 4's, EXAONE 4's full-attention layers)"),
    Option("temperature", ("layers",), (None,), "kind", "temperature", parts=("temperature",), choices=(True,),
           reference="queries scaled by log(floor((pos + 1) / 8192) + 1) * 0.1 + 1",
           doc="Llama 4's query temperature in its layers without RoPE (attn_temperature_tuning)"),
    Option("own_heads", ("alt_heads", "alt_kv_heads", "alt_head_dim", "layers"), (None, None, None, None), "kind",
           "heads", choices=("own",), text=lambda c: _heads_text(c),
           doc="a second head shape (n_ha, n_kva, d_ha) in the layers of kind heads='own' (Gemma 4's full layers)"),
    Option("layer_sinks", ("layers",), (None,), "kind", "sinks", choices=(True,), text=lambda c: _sinks_text(c),
           doc="gpt-oss's attention sinks in the layers of kind sinks=True only (MiMo-V2-Flash's sliding layers)"),
    Option("value_width", ("v_head_dim", "kv_lora_rank"), (None, None), "structure", "value_width",
           value=lambda c: c.kv_lora_rank is None and c.v_head_dim is not None, choices=(True,), on=None,
           reference="refused beside GQA (transformers' classes check it); MLA's v_head_dim as LatentAttention's",
           text=lambda c: f"value heads of width {c.v_head_dim}" if c.kv_lora_rank is None and c.v_head_dim else "",
           doc="values of their own head width d_hv beside GQA's queries and keys, scaled by attention_value_scale "
               "(MiMo-V2-Flash's v_head_dim)"),
    Option("k_eq_v", ("layers",), (None,), "kind", "k_eq_v", choices=(True,),
           text=lambda c: _k_eq_v_text(c),
           doc="no wv in the layers of kind k_eq_v=True: the values are wk's output (Gemma 4's attention_k_eq_v)"),
    Option("kv_shared", ("layers",), (None,), "kind", "kv_shared", choices=(True,), text=lambda c: _kv_shared_text(c),
           doc="layers reusing the keys and values an earlier layer of their window made: no wk, wv, k_norm, no KV "
               "cache of their own (Gemma 4's num_kv_shared_layers)"),
    Option("wide_ffn", ("layers",), (None,), "kind", "wide_ffn", choices=(True,),
           doc="a dense feed-forward 2*d_ff wide in the layers of kind wide_ffn=True (Gemma 4's use_double_wide_mlp, "
               "in its KV-shared layers)"),
    Option("shared_topk", ("layers",), (None,), "kind", "shared_topk", choices=(True,), models="latent",
           text=lambda c: _shared_topk_text(c),
           doc="a sparse attention reusing the previous layer's top-k, with no indexer of its own (GLM-5's shared "
               "indexer layers)"),
    Option("whole_rope", ("partial_rotary_factor", "layers"), (None, None), "kind", "rope_part", choices=("whole",),
           doc="RoPE on all of each head in the layers of kind rope_part='whole', beside a partial rotary elsewhere "
               "(Laguna's sliding layers: partial_rotary_factor per layer type; element-wise work only)"),
    Option("sliding", ("sliding_window", "layers"), (None, None), "kind", "window", choices=("sliding",),
           text=lambda c: _window_text(c) if c.sliding_window else "",
           doc="a sliding window of W keys in the layers of kind window='sliding'"),
    Option("chunked", ("attention_chunk", "layers"), (None, None), "kind", "window", choices=("chunked",),
           text=lambda c: f"attention chunks of {c.attention_chunk}" if c.attention_chunk else "",
           doc="chunked attention (Llama 4's RoPE layers)"),
    Option("per_layer_input", ("per_layer_dim", "per_layer_vocab"), (None, None), "structure", "per_layer_input",
           value=lambda c: c.per_layer_dim is not None,
           parts=("per_layer_embedding", "per_layer_model_projection", "per_layer_norm", "per_layer_gate",
                  "per_layer_projection", "post_per_layer_norm"), choices=(True,), on=True,
           reference="refused in one line (transformers' Gemma4ForCausalLM checks it: tests/test_gemma4.py)",
           text=lambda c: (f"per-layer embeddings: a table of {c.per_layer_vocab} x {c.n_layers}*{c.per_layer_dim} "
                           f"and a projection give each layer an input of {c.per_layer_dim}") if c.per_layer_dim
                           else "",
           doc="Gemma 4's per-layer embeddings (hidden_size_per_layer_input, vocab_size_per_layer_input: E2B, E4B)"),
    _on("tied", "lm_head shares the embedding matrix", "output.weight = tok_embeddings.weight",
        config="tie_embeddings", choices=(False, True), on=None, models="both"),
    Option("hidden", ("hidden_dim", "ffn_dim_multiplier"), (None, None), "structure", "hidden",
           value=lambda c: c.hidden_rule, choices=("meta",), on=None,
           reference="FeedForward's hidden size rule (meta_hidden_dim)",
           doc="where d_ff comes from: a stated width, or Meta's rounding with or without a multiplier"),
    _on("fused_lora", "PEFT adapts the fused routed experts (Qwen3-MoE): their LoRA targets are refused", "",
        config="peft_fused_experts"),  # no part and no count: a LoRA refusal
    Option("fused_experts", ("fused_experts",), (None,), "structure", "fused_experts", choices=("in_out", "out_in"),
           names=(("in_out", (("gate_up_proj", ("n_e", "d", "2*d_ff")), ("gate_up_proj_bias", ("n_e", "2*d_ff")),
                              ("down_proj", ("n_e", "d_ff", "d")), ("down_proj_bias", ("n_e", "d")))),
                  ("out_in", (("gate_up_proj", ("n_e", "2*d_ff", "d")), ("down_proj", ("n_e", "d", "d_ff"))))),
           doc="how a checkpoint stores the routed experts: fused, two 3-D tensors a layer under experts. (Llama 4's "
               "and gpt-oss's in_out, [n_e, d, 2*d_ff] and [n_e, d_ff, d], gpt-oss's biases beside them; Gemma 4's "
               "out_in, [n_e, 2*d_ff, d] and [n_e, d, d_ff]); no count depends on it"),
)


def option(name: str) -> Option:
    """The option called ``name``.

    >>> option("norms").choices
    ('post', 'sandwich', 'parallel')
    """
    for o in OPTIONS:
        if o.name == name:
            return o
    choice("option", name, [o.name for o in OPTIONS], see="part_options.OPTIONS")


def structure_options(config) -> dict:
    """The :class:`~symllm.arch.layers.Structure` fields a config sets (the kinds and the variant aside).

    >>> from symllm.arch.config import load
    >>> structure_options(load("gemma-2b"))["tied"], structure_options(load("deepseek-v3"))["shared_experts"]
    (True, True)
    """
    return {o.field: o.read(config) for o in OPTIONS if o.axis == "structure"}


def variant_options(config) -> dict:
    """The :class:`~symllm.arch.layers.Variant` fields a config sets.

    >>> from symllm.arch.config import load
    >>> variant_options(load("olmo-2-7b"))["norms"], variant_options(load("gemma-2-2b"))["attn_softcap"]
    ('post', True)
    """
    return {o.field: o.read(config) for o in OPTIONS if o.axis == "variant"}


def described(config) -> list[str]:
    """The lines ``symllm count`` prints for what a config's options add to LLaMA's block, in :data:`OPTIONS`' order.

    >>> from symllm.arch.config import load
    >>> described(load("olmo-2-7b"))
    ['QK-norm over the whole q and k (rmsnorm of n_h*d_h and n_kv*d_h)', 'norms after attention and feed-forward']
    """
    return [line for o in OPTIONS if o.text is not None for line in (o.text(config),) if line]


def every_part(latent: bool = False) -> dict:
    """The :class:`~symllm.arch.layers.Structure` options with every part switched on (those beside latent
    attention, with ``latent``; its own ``latent`` too), the kinds and the variant aside: each option's
    :attr:`Option.on`.

    >>> every_part()["qk_norm"], "latent" in every_part(), every_part(latent=True)["latent"]
    ('rmsnorm', False, 'q_lora')
    """
    models = ("latent", "both") if latent else ("gqa", "both")
    out = {o.field: o.on for o in OPTIONS if o.axis == "structure" and o.on is not None and o.models in models}
    if latent:
        out.update(latent=LATENT[1], shared_experts=True)
    return out


def _check() -> None:
    """Each axis field an option names exists, and every field of the axes is some option's (or the kinds' and
    the variant's own place in the Structure)."""
    axes = {"structure": Structure, "variant": Variant, "kind": LayerKind}
    for o in OPTIONS:
        if o.axis in axes and o.field not in {f.name for f in fields(axes[o.axis])}:
            raise SymllmError(f"{o.name}: {o.axis} has no field {o.field!r}")
    named = {(o.axis, o.field) for o in OPTIONS}
    for axis, cls in axes.items():
        for f in fields(cls):
            if (axis, f.name) not in named and not (axis == "structure" and f.name in ("kinds", "variant")):
                raise SymllmError(f"{axis}.{f.name}: no option declares it (symllm.arch.part_options)")


_check()
