"""Model configurations: :class:`ModelConfig`, HF ``config.json`` and Meta ``params.json`` loading,
validation, and the presets shipped in ``symllm/presets/``.

>>> cfg = load("llama3.1-8b")
>>> cfg.dim, cfg.n_kv_heads, cfg.hidden_dim is None, cfg.ffn_dim_multiplier
(4096, 8, True, 1.3)
>>> from_hf({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
...          "intermediate_size": 172, "vocab_size": 100}).hidden_dim
172
"""
from __future__ import annotations

import dataclasses
import json
import os
from fractions import Fraction
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from symllm.arch.families.hf import HF_UNMODELLED, read as _read_hf
from symllm.arch.layers import ACTIVATIONS, MAX_GROUPS, NORMS as NORM_PLACES, QK_NORMS, LayerKind, groups as _groups
from symllm.errors import SymllmError
from symllm.validate import boolean, choice, positive_int
from symllm.validate import integer as _integer
from symllm.validate import positive_number as _positive_float
from symllm.validate import short as _short
from symllm.files import read_json

__all__ = ["ModelConfig", "derive_heads", "from_meta", "from_hf", "from_dict", "load", "preset_names", "preset_info",
           "preset_hub", "HF_UNMODELLED", "META_KEYS", "QK_NORMS", "LayerKind", "SWIGLU_RATIO", "swiglu_width",
           "meta_width", "meta_product_ok"]


def _positive_int(field: str, value, *, optional: bool = False):
    """A config's integer field: JSON's ``4096.0`` is read as 4096 (:func:`symllm.validate.integer`)."""
    return positive_int(field, value, optional=optional, floats=True)


def _layer_groups(value, n_layers: int) -> tuple:
    """``layers`` as a tuple of ``(LayerKind, count)`` runs in model order, the counts adding up to ``n_layers``."""
    if not isinstance(value, (list, tuple)) or not value:
        raise SymllmError(f"layers: expected groups of (LayerKind, count), got {_short(value)}")
    out = []
    for pair in value:
        if isinstance(pair, dict):  # ModelConfig.to_dict's form: the kind's fields and the count
            kind = {k: v for k, v in pair.items() if k != "count"}
            unknown = sorted(set(kind) - set(LayerKind.__dataclass_fields__))
            if unknown or "count" not in pair:
                raise SymllmError(f"layers: expected a kind's fields and its count, got {_short(pair)}")
            pair = (LayerKind(**kind), pair["count"])
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], LayerKind):
            raise SymllmError(f"layers: expected (LayerKind, count) pairs, got {_short(pair)}")
        out.append((pair[0], positive_int("layers", pair[1])))
    kinds = len({kind for kind, _ in out})
    if kinds > MAX_GROUPS:
        raise SymllmError(f"layers: {kinds} kinds of layer; symllm models at most {MAX_GROUPS}")
    total = sum(count for _, count in out)
    if total != n_layers:
        raise SymllmError(f"layers: the groups hold {total} layers, not n_layers {n_layers} (edit the groups' "
                          "counts too)")
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """A LLaMA-family configuration, in Meta's field names, checked on creation.

    ``n_kv_heads`` and ``head_dim`` are resolved (``n_heads``, ``dim // n_heads``) when not given;
    ``hidden_dim`` stays ``None`` unless a config states it, in which case it is used as is and
    never re-rounded; otherwise Meta's ``multiple_of`` / ``ffn_dim_multiplier`` rounding derives it.

    >>> ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4).head_dim
    16
    >>> ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=5)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: n_heads: 5 does not divide dim 64 (give head_dim explicitly)
    """

    #: vocabulary size V
    vocab_size: int
    #: model width d
    dim: int
    #: number of blocks L
    n_layers: int
    #: query heads n_h
    n_heads: int
    #: key/value heads n_kv (None: n_heads, i.e. MHA)
    n_kv_heads: int | None = None
    #: per-head width d_h (None: dim // n_heads)
    head_dim: int | None = None
    #: SwiGLU width d_ff when the config states it (HF intermediate_size); None: Meta's rounding
    hidden_dim: int | None = None
    #: Meta's rounding granule m
    multiple_of: int = 256
    #: Meta's width multiplier f (None: no multiplier step)
    ffn_dim_multiplier: float | None = None
    #: lm_head shares the embedding matrix
    tie_embeddings: bool = False
    #: q/k/v/o projections have biases (HF attention_bias)
    attention_bias: bool = False
    #: w1/w2/w3 have biases (HF mlp_bias)
    mlp_bias: bool = False
    #: q/k/v projections have biases and wo has none (Qwen2; attention_bias puts one on all four)
    qkv_bias: bool = False
    #: a norm on each query and key head: None, "rmsnorm" (Qwen3: weight of d_h each, before RoPE),
    #: "l2" (Llama 4: no weight, after RoPE, in the layers with RoPE) or "full" (OLMo 2: one RMSNorm over
    #: the whole query width n_heads·head_dim and one over the key width n_kv_heads·head_dim)
    qk_norm: str | None = None
    #: Phi-3's fused projections: q, k and v in one linear (qkv_proj), gate and up in one (gate_up_proj)
    fused: bool = False
    #: where each block's norms sit: "pre" (LLaMA), "post" (OLMo 2: after attention and feed-forward,
    #: before the residual adds), "sandwich" (Gemma 2 and 3: both) or "parallel" (Command-R: one norm,
    #: attention and feed-forward both reading it)
    norms: str = "pre"
    #: the gated feed-forward's activation: "silu" (SwiGLU) or "gelu_tanh" (GeGLU, gelu_pytorch_tanh: Gemma)
    activation: str = "silu"
    #: RMSNorms scale by (1 + weight) (Gemma; the same parameters)
    norm_offset: bool = False
    #: the token embeddings are multiplied by sqrt(dim) (Gemma)
    embed_scale: bool = False
    #: attention scores soft-capped at this value, c·tanh(score / c) (Gemma 2; None: not capped)
    attn_softcap: float | None = None
    #: final logits soft-capped at this value (Gemma 2; None: not capped)
    final_softcap: float | None = None
    #: every norm is Cohere's LayerNorm (mean subtracted, weight only; Command-R)
    layernorm: bool = False
    #: the logits are multiplied by this constant (Command-R; None: not scaled)
    logit_scale: float | None = None
    #: the values pass a weightless RMSNorm (Gemma 4's v_norm; element-wise only)
    value_norm: bool = False
    #: each block's output is multiplied by a one-element buffer (Gemma 4's layer_scalar; element-wise only)
    layer_scalar: bool = False
    #: routed experts in each mixture-of-experts layer (None: a dense model); hidden_dim is their width
    n_experts: int | None = None
    #: experts each token is routed to (top-k)
    experts_per_token: int | None = None
    #: Llama 4's shared expert: a dense SwiGLU of width hidden_dim in every MoE layer, run by every token
    shared_expert: bool = False
    #: Qwen2-MoE's gated shared expert: the shared expert's own width (shared_expert_intermediate_size), its
    #: output scaled by a sigmoid gate (a d -> 1 linear); None: no such gate (Llama 4's, of width hidden_dim)
    shared_hidden_dim: int | None = None
    #: gpt-oss: biases on the router and on every routed expert's projections
    moe_bias: bool = False
    #: gpt-oss: the routed experts' clamped SwiGLU (swiglu_limit; no parameters, its own element-wise work)
    clamped_swiglu: bool = False
    #: gpt-oss: a learned attention sink per query head in every layer
    attention_sinks: bool = False
    #: PEFT adapts the fused routed experts of transformers' class under gate_proj/up_proj/down_proj (Qwen3-MoE,
    #: through transformers' weight-conversion mapping), which symllm does not model: those LoRA targets are refused
    peft_fused_experts: bool = False
    #: SwiGLU width of the dense layers when only some layers are MoE (Llama 4's intermediate_size_mlp)
    dense_hidden_dim: int | None = None
    #: sliding-window attention: a query of a sliding layer sees at most this many keys, the last ones
    sliding_window: int | None = None
    #: chunked attention (Llama 4's RoPE layers): a query sees the keys of its own chunk of this many tokens
    attention_chunk: int | None = None
    #: DeepSeek's shared experts: a SwiGLU of n_shared_experts × hidden_dim in every MoE layer, run by every token
    n_shared_experts: int | None = None
    #: multi-head latent attention (DeepSeek-V2, V3): the key-value latent's rank (None: not latent)
    kv_lora_rank: int | None = None
    #: MLA's query rank (None with kv_lora_rank: one plain query projection, DeepSeek-V2-Lite)
    q_lora_rank: int | None = None
    #: MLA's RoPE part of a query/key head (one RoPE key shared by every head)
    qk_rope_head_dim: int | None = None
    #: MLA's part of a query/key head without RoPE
    qk_nope_head_dim: int | None = None
    #: MLA's value head width
    v_head_dim: int | None = None
    #: the fraction of each head RoPE rotates (GLM-4.5: 0.5; None: all of it); int(head_dim × it) are rotated
    partial_rotary_factor: float | None = None
    #: DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5) on a latent attention with a query latent: the indexer's
    #: query heads (index_n_heads), their width and its one cached key's a token (index_head_dim), and the keys
    #: each query attends (index_topk); None: no indexer (symllm.arch.components.latent.indexer)
    index_heads: int | None = None
    index_head_dim: int | None = None
    index_topk: int | None = None
    #: multi-token-prediction modules the checkpoint stores after the last layer (DeepSeek-V3, GLM-4.5);
    #: transformers does not build them: reported apart, never in the model's total
    n_mtp_layers: int = 0
    #: the attention output gated by a sigmoid of a second half of q_proj (Qwen3-Next, Qwen3.5)
    output_gate: bool = False
    #: Laguna's output gate o_proj(attn · softplus(g_proj(x))): g_proj a d -> n_h ("head": one gate a head) or a
    #: d -> n_h·d_h ("element") linear without a bias; None: none
    gate_proj: str | None = None
    #: Laguna's router: e_score_correction_bias is a parameter (n_e numbers a MoE layer), not a buffer; the routed
    #: sum is multiplied by moe_routed_scaling_factor (element-wise only)
    router_score_bias: bool = False
    #: Gated DeltaNet layers (the layers whose kind's mixer is "linear_attention"; Qwen3-Next, Qwen3.5): query/key
    #: heads, value heads, their widths and the short convolution's kernel (None: no such layer)
    linear_key_heads: int | None = None
    linear_value_heads: int | None = None
    linear_key_dim: int | None = None
    linear_value_dim: int | None = None
    conv_kernel: int | None = None
    #: Mamba-2 layers (the layers whose kind's mixer is "mamba"; Nemotron-H): heads, head width, SSM state size,
    #: groups of B and C, the SSD scan's chunk (conv_kernel is their convolution's kernel; None: no such layer)
    mamba_heads: int | None = None
    mamba_head_dim: int | None = None
    ssm_state: int | None = None
    mamba_groups: int | None = None
    ssm_chunk: int | None = None
    #: the Mamba-2 convolution's bias (use_conv_bias), the in_proj and out_proj biases (use_bias)
    conv_bias: bool = False
    mamba_bias: bool = False
    #: Qwen3.5's four input projections of the Gated DeltaNet (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a);
    #: False: Qwen3-Next's two (in_proj_qkvz, in_proj_ba)
    delta_split: bool = False
    #: the second head shape of the layers whose kind's heads is "own" (Gemma 4's full-attention layers):
    #: query heads, key/value heads and head width (None: no such layer)
    alt_heads: int | None = None
    alt_kv_heads: int | None = None
    alt_head_dim: int | None = None
    #: the layers as runs of consecutive identical ones, ``((LayerKind, count), ...)`` in model order (a family
    #: states each layer's kind: symllm.arch.families.hf.groups; :attr:`groups` collapses them by kind); None:
    #: every layer alike, MoE when n_experts is given, with the sliding window or the attention chunk when given
    layers: tuple | None = None
    #: what a reader should know about what was counted (e.g. a vision encoder that is not)
    note: str | None = None
    #: the weight format the config.json's ``quantization_config`` states (:mod:`symllm.arch.quantization`; a name
    #: of :data:`symllm.costs.formats.FORMATS`): β_w unless a workload's weight_format overrides it; None: none
    weight_format: str | None = None
    #: what was read to set weight_format (the line the outputs show)
    weight_format_source: str | None = None
    #: the modules ``quantization_config`` keeps unquantized that weight_format would quantize, as patterns for
    #: ``re.match`` on a module's full name (:func:`symllm.arch.quantization.kept_patterns`): two bytes a weight
    weight_format_kept: tuple | None = None
    #: the KV cache dtype the config.json states (compressed-tensors' ``kv_cache_scheme``:
    #: :func:`symllm.arch.quantization.kv_dtype`): the workload's unless it gives one; None: none stated
    kv_dtype: str | None = None
    #: what was read to set kv_dtype (the line the outputs show)
    kv_dtype_source: str | None = None
    #: RMSNorm epsilon (no effect on counts)
    norm_eps: float = 1e-5
    #: RoPE base (no effect on counts)
    rope_theta: float = 10000.0
    #: the positions the model was trained for (HF ``max_position_embeddings``; a Meta preset's published
    #: window; None: not stated). No effect on counts: a context past it is flagged, never refused (RoPE
    #: scaling, YaRN and the like, runs a model past it)
    max_positions: int | None = None
    #: a name for reports
    name: str = "custom"
    #: which of n_kv_heads / head_dim were derived rather than given (replace() derives them again)
    derived: frozenset = dataclasses.field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self):
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen)
        put("derived", frozenset(k for k in ("n_kv_heads", "head_dim", "layers") if getattr(self, k) is None))
        for field in ("vocab_size", "dim", "n_layers", "n_heads", "multiple_of"):
            put(field, _positive_int(field, getattr(self, field)))
        for field in ("n_kv_heads", "head_dim", "hidden_dim"):
            put(field, _positive_int(field, getattr(self, field), optional=True))
        heads, failed = derive_heads(self.dim, self.n_heads, self.n_kv_heads, self.head_dim)
        for field, ok, message in failed:
            if not ok:
                raise SymllmError(message())
        put("n_kv_heads", heads["n_kv_heads"])
        put("head_dim", heads["head_dim"])
        f = self.ffn_dim_multiplier
        if f is not None:
            put("ffn_dim_multiplier", _positive_float("ffn_dim_multiplier", f))
            if not meta_product_ok(self.dim, f):
                raise SymllmError(f"ffn_dim_multiplier: {_short(f)} makes hidden_dim larger than 2**53")
        for field in ("norm_eps", "rope_theta"):
            put(field, _positive_float(field, getattr(self, field)))
        put("max_positions", _positive_int("max_positions", self.max_positions, optional=True))
        for field in ("tie_embeddings", "attention_bias", "mlp_bias", "qkv_bias", "fused", "norm_offset",
                      "embed_scale", "attention_sinks", "layernorm", "value_norm", "layer_scalar"):
            boolean(field, getattr(self, field))
        choice("qk_norm", self.qk_norm, QK_NORMS)
        if self.kv_dtype is not None:
            from symllm.arch.dtypes import DTYPES
            choice("kv_dtype", self.kv_dtype, DTYPES)
        choice("norms", self.norms, NORM_PLACES)
        if self.norms == "parallel" and self.n_experts is not None:  # no family has one; saved is a dense block's
            raise SymllmError("norms: a parallel block with a mixture of experts is not modelled")
        choice("activation", self.activation, ACTIVATIONS)
        for field in ("attn_softcap", "final_softcap", "logit_scale"):
            if getattr(self, field) is not None:
                put(field, _positive_float(field, getattr(self, field)))
        self._check_moe(put)
        for field in ("sliding_window", "attention_chunk"):
            put(field, _positive_int(field, getattr(self, field), optional=True))
        if self.sliding_window is not None and self.attention_chunk is not None:
            raise SymllmError(f"attention_chunk: {self.attention_chunk} with sliding_window "
                              f"{self.sliding_window}; a layer has one or the other")
        self._check_layers(put)
        self._check_latent(put)
        self._check_indexer(put)
        self._check_linear(put)
        self._check_alt_heads(put)

    def _check_alt_heads(self, put) -> None:
        """The second head shape: all three sizes with a layer whose kind's heads is "own", none without; its
        query heads a whole multiple of its key/value heads (transformers' repeat_kv)."""
        sizes = ("alt_heads", "alt_kv_heads", "alt_head_dim")
        for field in sizes:
            put(field, _positive_int(field, getattr(self, field), optional=True))
        own = any(kind.heads == "own" for kind, _ in self.layers)
        for field in sizes:
            if own and getattr(self, field) is None:
                raise SymllmError(f"{field}: missing (a layer has its own head shape)")
            if not own and getattr(self, field) is not None:
                raise SymllmError(f"{field}: {getattr(self, field)} given but no layer has its own head shape")
        if own and self.alt_heads % self.alt_kv_heads:
            raise SymllmError(f"alt_kv_heads: {self.alt_kv_heads} does not divide the {self.alt_heads} query heads")

    def _check_indexer(self, put) -> None:
        """DSA's indexer: all three sizes or none; it reads the query latent (``q_lora_rank``) and rotates the
        first ``qk_rope_head_dim`` of its ``index_head_dim`` (transformers' DeepseekV32Indexer splits them)."""
        sizes = ("index_heads", "index_head_dim", "index_topk")
        for field in sizes:
            put(field, _positive_int(field, getattr(self, field), optional=True))
        given = [field for field in sizes if getattr(self, field) is not None]
        if not given:
            return
        for field in sizes:
            if getattr(self, field) is None:
                raise SymllmError(f"{field}: missing (a sparse-attention indexer has {given[0]})")
        if self.latent != "q_lora":
            raise SymllmError(f"index_topk: {self.index_topk} without a latent attention with q_lora_rank (the "
                              "indexer reads the query latent)")
        if self.index_head_dim < self.qk_rope_head_dim:
            raise SymllmError(f"index_head_dim: {self.index_head_dim} is less than qk_rope_head_dim "
                              f"{self.qk_rope_head_dim}, the part the indexer rotates")

    def _check_linear(self, put) -> None:
        """The Gated DeltaNet's sizes: all five with a linear-attention layer, none without; its value heads a
        whole multiple of its key heads (transformers' grouped value attention repeats each key head)."""
        sizes = ("linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim", "conv_kernel")
        for field in sizes:
            put(field, _positive_int(field, getattr(self, field), optional=True))
        for field in ("output_gate", "delta_split", "conv_bias", "mamba_bias"):
            boolean(field, getattr(self, field))
        linear = any(kind.mixer == "linear_attention" for kind, _ in self.layers)
        mamba = any(kind.mixer == "mamba" for kind, _ in self.layers)
        for field in sizes[:-1]:
            if linear and getattr(self, field) is None:
                raise SymllmError(f"{field}: missing (a layer is a Gated DeltaNet)")
            if not linear and getattr(self, field) is not None:
                raise SymllmError(f"{field}: {getattr(self, field)} given but no layer is a Gated DeltaNet")
        if (linear or mamba) and self.conv_kernel is None:
            raise SymllmError("conv_kernel: missing (a layer is a Gated DeltaNet or a Mamba-2 mixer)")
        if not (linear or mamba) and self.conv_kernel is not None:
            raise SymllmError(f"conv_kernel: {self.conv_kernel} given but no layer has a short convolution")
        self._check_mamba(put, mamba)
        if linear and self.linear_value_heads % self.linear_key_heads:
            raise SymllmError(f"linear_value_heads: {self.linear_value_heads} is not a multiple of the "
                              f"{self.linear_key_heads} key heads")
        if linear and self.latent is not None:
            raise SymllmError("layers: Gated DeltaNet layers are not modelled with a latent attention")

    def _check_mamba(self, put, mamba: bool) -> None:
        """The Mamba-2 mixer's sizes: all five with a Mamba layer, none without (its biases off); its heads a
        whole multiple of its groups (transformers repeats each group's B and C over its heads)."""
        sizes = ("mamba_heads", "mamba_head_dim", "ssm_state", "mamba_groups", "ssm_chunk")
        for field in sizes:
            put(field, _positive_int(field, getattr(self, field), optional=True))
            if mamba and getattr(self, field) is None:
                raise SymllmError(f"{field}: missing (a layer is a Mamba-2 mixer)")
            if not mamba and getattr(self, field) is not None:
                raise SymllmError(f"{field}: {getattr(self, field)} given but no layer is a Mamba-2 mixer")
        for field in ("conv_bias", "mamba_bias"):
            if not mamba and getattr(self, field):
                raise SymllmError(f"{field}: true but no layer is a Mamba-2 mixer")
        if mamba and self.mamba_heads % self.mamba_groups:
            raise SymllmError(f"mamba_heads: {self.mamba_heads} is not a multiple of the {self.mamba_groups} groups")
        if mamba and self.latent is not None:
            raise SymllmError("layers: Mamba-2 layers are not modelled with a latent attention")

    def _check_latent(self, put) -> None:
        """MLA's sizes: all four with kv_lora_rank (q_lora_rank optional), none without; its keys and values
        have n_h heads (transformers' MLA fails otherwise) and no q/k/v biases, QK-norm, window or
        layers without RoPE; a partial rotary rotates a whole, even, positive part of each head."""
        mla = ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        for field in ("kv_lora_rank", "q_lora_rank") + mla:
            put(field, _positive_int(field, getattr(self, field), optional=True))
        put("n_mtp_layers", _integer("n_mtp_layers", self.n_mtp_layers, low=0, floats=True))
        if self.kv_lora_rank is None:  # v_head_dim alone: GQA values of their own width (MiMo-V2-Flash)
            for field in ("q_lora_rank",) + mla[:2]:
                if getattr(self, field) is not None:
                    raise SymllmError(f"{field}: {_short(getattr(self, field))} given without kv_lora_rank")
        else:
            for field in mla:
                if getattr(self, field) is None:
                    raise SymllmError(f"{field}: missing (a latent attention has kv_lora_rank)")
            if self.qk_rope_head_dim % 2:
                raise SymllmError(f"qk_rope_head_dim: {self.qk_rope_head_dim} is odd; RoPE rotates pairs of elements")
            if self.n_kv_heads != self.n_heads:
                raise SymllmError(f"num_key_value_heads: {self.n_kv_heads}, not num_attention_heads "
                                  f"{self.n_heads}: latent attention has every head")
            for field, off in (("qkv_bias", False), ("qk_norm", None), ("sliding_window", None),
                               ("attention_chunk", None), ("partial_rotary_factor", None)):
                if getattr(self, field) != off:
                    raise SymllmError(f"{field}: {_short(getattr(self, field))} is not modelled with a latent attention")
            if self.n_nope_layers:
                raise SymllmError("layers: layers without RoPE are not modelled with a latent attention")
        if self.n_shared_experts is not None:
            put("n_shared_experts", _positive_int("n_shared_experts", self.n_shared_experts))
            if self.n_experts is None:
                raise SymllmError(f"n_shared_experts: {self.n_shared_experts} given without n_experts")
            if self.shared_expert:
                raise SymllmError("n_shared_experts: given with Llama 4's shared_expert; a layer has one kind")
        f = self.partial_rotary_factor
        if f is not None:
            put("partial_rotary_factor", _positive_float("partial_rotary_factor", f))
            rotated = int(self.head_dim * float(f)) if float(f) <= 1 else None
            if rotated is None or rotated < 2 or rotated % 2:
                what = "is more than 1" if rotated is None else f"rotates {rotated} of head_dim {self.head_dim}"
                raise SymllmError(f"partial_rotary_factor: {_short(f, 20)} {what}; RoPE needs an even part")
            if float(f) == 1:
                put("partial_rotary_factor", None)

    @property
    def latent(self) -> str | None:
        """None (not a latent attention), "q_lora" or "q_proj" (see symllm.arch.components.LATENT)."""
        if self.kv_lora_rank is None:
            return None
        return "q_proj" if self.q_lora_rank is None else "q_lora"

    @property
    def rope_dim(self) -> int | None:
        """The rotated width of a query/key head where it is not head_dim: MLA's qk_rope_head_dim, or
        int(head_dim × partial_rotary_factor) (as transformers' rotary embedding takes it); else None."""
        if self.kv_lora_rank is not None:
            return self.qk_rope_head_dim
        if self.partial_rotary_factor is not None:
            return int(self.head_dim * self.partial_rotary_factor)
        return None

    @property
    def shared_width(self) -> int | None:
        """The shared expert's width as the components take it (a spec's ``shared_hidden_dim``): DeepSeek's
        ``n_shared_experts`` experts of width hidden_dim side by side, or Qwen2-MoE's own
        ``shared_hidden_dim``; else None."""
        if self.n_shared_experts is not None:
            return self.n_shared_experts * self.hidden_dim
        return self.shared_hidden_dim

    def _check_moe(self, put) -> None:
        for field in ("n_experts", "experts_per_token", "dense_hidden_dim", "shared_hidden_dim"):
            put(field, _positive_int(field, getattr(self, field), optional=True))
        for field in ("shared_expert", "moe_bias", "clamped_swiglu", "peft_fused_experts", "router_score_bias"):
            boolean(field, getattr(self, field))
        if self.gate_proj not in (None, "head", "element"):
            raise SymllmError(f"gate_proj: expected head or element, got {_short(self.gate_proj)}")
        if self.gate_proj is not None and self.output_gate:
            raise SymllmError("gate_proj: given with output_gate; an attention output has one gate")
        if self.shared_hidden_dim is not None and not self.shared_expert:
            raise SymllmError(f"shared_hidden_dim: {self.shared_hidden_dim} given without shared_expert")
        if self.n_experts is None:
            for field in ("experts_per_token", "dense_hidden_dim"):
                if getattr(self, field) is not None:
                    raise SymllmError(f"{field}: {_short(getattr(self, field))} given without n_experts")
            for field in ("shared_expert", "moe_bias", "clamped_swiglu", "peft_fused_experts", "router_score_bias"):
                if getattr(self, field):
                    raise SymllmError(f"{field}: true given without n_experts")
            return
        if self.experts_per_token is None:
            raise SymllmError("experts_per_token: missing (how many of the n_experts each token uses)")
        if self.experts_per_token > self.n_experts:
            raise SymllmError(f"experts_per_token: {self.experts_per_token} is more than n_experts {self.n_experts}")

    def _check_layers(self, put) -> None:
        """The groups of layers: each kind's feed-forward and window backed by the sizes they need (a window
        size no layer uses changes no count: Llama 4 without RoPE layers still states its chunk)."""
        if self.layers is None:
            kind = LayerKind(ffn="dense" if self.n_experts is None else "moe", window=self.window_kind)
            put("layers", ((kind, self.n_layers),))
        else:
            put("layers", _layer_groups(self.layers, self.n_layers))
        moe = self.n_moe_layers or 0
        if self.n_experts is not None and not moe:
            raise SymllmError(f"n_experts: {self.n_experts} given but no layer is a mixture of experts")
        if self.n_experts is None and any(kind.ffn == "moe" for kind, _ in self.layers):
            raise SymllmError("n_experts: missing; some layers are a mixture of experts")
        if moe and moe < self.n_layers and self.dense_hidden_dim is None:
            raise SymllmError("dense_hidden_dim: missing; the layers outside the MoE ones are dense")
        if moe == self.n_layers and self.dense_hidden_dim is not None:
            raise SymllmError(f"dense_hidden_dim: {self.dense_hidden_dim} given but every layer is MoE")
        windows = {kind.window for kind, _ in self.layers} - {None}
        for window, size, field in (("sliding", self.sliding_window, "sliding_window"),
                                    ("chunked", self.attention_chunk, "attention_chunk")):
            if window in windows and size is None:
                raise SymllmError(f"{field}: missing; some layers have a {window} window")

    def _count(self, test) -> int | None:
        return sum(count for kind, count in self.layers if test(kind)) or None

    @property
    def n_moe_layers(self) -> int | None:
        """How many layers are MoE (None: a dense model)."""
        return self._count(lambda kind: kind.ffn == "moe")

    @property
    def n_nope_layers(self) -> int | None:
        """How many layers have no RoPE (None: none)."""
        return self._count(lambda kind: not kind.rotary)

    @property
    def groups(self) -> tuple:
        """The layers collapsed into groups of identical ones ``(kind, count)``, in the order each kind first
        appears (:func:`symllm.arch.layers.groups`: one group of blocks each in the component tree)."""
        return _groups(self.layers)

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        """One kind per layer, in model order.

        >>> [k.ffn for k in ModelConfig(vocab_size=9, dim=8, n_layers=2, n_heads=2).layer_kinds()]
        ['dense', 'dense']
        """
        return tuple(kind for kind, count in self.layers for _ in range(count))

    @property
    def window(self) -> int | None:
        """The most keys a query may see (sliding window or chunk), or None (full attention)."""
        return self.sliding_window if self.attention_chunk is None else self.attention_chunk

    @property
    def window_kind(self) -> str | None:
        """None (full attention), "sliding" or "chunked" (see :data:`symllm.arch.components.WINDOWS`)."""
        if self.window is None:
            return None
        return "sliding" if self.attention_chunk is None else "chunked"

    @property
    def hidden_rule(self) -> str:
        """Where d_ff comes from: "explicit", "meta" (with f) or "meta_plain" (without)."""
        if self.hidden_dim is not None:
            return "explicit"
        return "meta" if self.ffn_dim_multiplier is not None else "meta_plain"

    @property
    def attention_kind(self) -> str:
        """"MHA", "MQA" or "GQA", from n_kv_heads; "MLA" for a multi-head latent attention."""
        if self.kv_lora_rank is not None:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    def replace(self, **changes) -> ModelConfig:
        """A copy with some fields changed, validated again; what was derived is derived again.

        >>> cfg = ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4)
        >>> cfg.replace(dim=256, n_heads=8).head_dim, cfg.replace(dim=256, n_heads=8).n_kv_heads
        (32, 8)
        """
        again = {k: None for k in self.derived if k not in changes}
        return dataclasses.replace(self, **again, **changes)

    def to_dict(self) -> dict:
        """The fields as a plain dict (JSON-ready: ``layers`` as one ``{"ffn", "rotary", "window", "count"}``
        per run, and ``"temperature": true`` where it has one, which ``ModelConfig(**...)`` reads back). Where every layer is the kind the other fields
        make (``layers`` None derives it: MoE when ``n_experts`` is given, the window when one is), ``layers``
        is None, so that the dict still reads with an edited ``n_layers``; the runs are written only where
        they say what no other field does (layers of several kinds).

        >>> ModelConfig(vocab_size=9, dim=8, n_layers=2, n_heads=2).to_dict()["layers"] is None
        True
        >>> from symllm.arch.layers import LayerKind
        >>> ModelConfig(vocab_size=9, dim=8, n_layers=2, n_heads=2, sliding_window=4,
        ...             layers=((LayerKind(window="sliding"), 1), (LayerKind(), 1))).to_dict()["layers"][1]
        {'ffn': 'dense', 'rotary': True, 'window': None, 'count': 1}
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        alike = LayerKind(ffn="dense" if self.n_experts is None else "moe", window=self.window_kind)
        out["layers"] = None if self.layers == ((alike, self.n_layers),) else [
            {**{k: v for k, v in dataclasses.asdict(kind).items()
                if (k not in ("temperature", "k_eq_v", "sinks") or v) and (k != "mixer" or v != "attention")
                and (k != "heads" or v != "model")}, "count": count}
            for kind, count in self.layers]  # the temperature and the mixer only where a layer has them
        for key in ("weight_format", "weight_format_source", "weight_format_kept", "kv_dtype",
                    "kv_dtype_source"):  # only a quantized config says them
            if out[key] is None:
                del out[key]
        return out


#: the spec's fields (:class:`symllm.arch.specs.Spec`) whose value a config gives under another name, a derived
#: property: what :func:`symllm.arch.specs.spec_of` reads, and what :mod:`symllm.studies.quick` binds a stored
#: kernel's argument to (a symbol binds the spec's field, :attr:`symllm.arch.symbols.SymbolInfo.binds`)
SPEC_FIELDS = {"shared_hidden_dim": "shared_width", "qk_rope_head_dim": "rope_dim",
               **{f: f for f in ("linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim",
                                 "conv_kernel", "alt_heads", "alt_kv_heads", "alt_head_dim", "mamba_heads",
                                 "mamba_head_dim", "ssm_state", "mamba_groups", "ssm_chunk", "index_heads",
                                 "index_head_dim", "index_topk")}}


#: SwiGLU's width before Meta's multiplier and rounding, as a fraction of ``dim``: three matrices with the
#: parameters of a ``4·dim`` two-matrix MLP (llama/model.py: ``hidden_dim = int(2 * (4 * dim) / 3)``)
SWIGLU_RATIO = Fraction(8, 3)


def swiglu_width(dim):
    """``⌊8·dim/3⌋`` (:data:`SWIGLU_RATIO`), the one statement of the rule: on an int, a numpy integer
    array (a sweep) or a SymPy symbol (Meta's ``d_ff`` formula, :func:`symllm.arch.components.meta_hidden_dim`).

    >>> swiglu_width(4096)
    10922
    """
    return SWIGLU_RATIO.numerator * dim // SWIGLU_RATIO.denominator


def meta_width(dim: int, multiple_of: int, multiplier: float | None = None) -> int:
    """Meta's ``d_ff`` of one config in plain Python, as ``FeedForward.__init__`` in llama/model.py computes
    it (``int`` truncates the IEEE double product, as Meta's code does; :func:`meta_product_ok` keeps it
    exact): what :func:`from_symllm` compares an edited ``hidden_dim`` with. The closed form is
    :func:`symllm.arch.components.meta_hidden_dim`; tests/test_config.py checks the two agree.

    >>> meta_width(4096, 1024, 1.3), meta_width(34, 1, 0.7)
    (14336, 62)
    """
    hidden = swiglu_width(dim)
    if multiplier is not None:
        hidden = int(float(multiplier) * hidden)
    return multiple_of * -(-hidden // multiple_of)


def meta_product_ok(dim, multiplier):
    """Whether Meta's IEEE double product ``f·⌊8d/3⌋`` stays below 2**53, past which it is no longer exact:
    :class:`ModelConfig` refuses a config where it does not, a sweep drops such points (element-wise on
    numpy arrays).

    >>> meta_product_ok(4096, 1.3), meta_product_ok(10**17, 1.3)
    (True, False)
    """
    def ok(d, f) -> bool:
        try:
            return float(f) * swiglu_width(int(d)) < 2**53
        except OverflowError:  # dim beyond a double's range
            return False

    if not hasattr(dim, "shape") and not hasattr(multiplier, "shape"):
        return ok(dim, multiplier)
    import numpy as np  # a sweep's arrays (numpy is loaded already)

    dim, mult = np.asarray(dim), np.asarray(multiplier, dtype=np.float64)
    if dim.dtype != object and (not dim.size or dim.max() < 2**59):
        return mult * swiglu_width(dim.astype(np.int64)).astype(np.float64) < 2.0 ** 53
    return np.frompyfunc(ok, 2, 1)(dim, mult).astype(bool)


def derive_heads(dim, n_heads, n_kv_heads=None, head_dim=None):
    """``n_kv_heads`` and ``head_dim`` as a config derives them (``None``: not stated), and the checks
    they must pass as ``(field, ok, message)`` (``message()`` is the error line). The one statement of the rule: :class:`ModelConfig`
    raises on the first failed check, a sweep drops the points that fail. Works element-wise on numpy
    integer arrays too.

    * ``n_kv_heads`` defaults to ``n_heads`` (MHA) and must divide it;
    * ``head_dim`` defaults to ``dim // n_heads``, which must then divide exactly;
    * ``head_dim`` must be even (RoPE rotates pairs of elements).

    >>> heads, checks = derive_heads(4096, 32, 8)
    >>> heads, [ok for _, ok, _ in checks]
    ({'n_kv_heads': 8, 'head_dim': 128}, [True, True, True])
    >>> [m() for _, ok, m in derive_heads(64, 5)[1] if not ok][0]
    'n_heads: 5 does not divide dim 64 (give head_dim explicitly)'
    """
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    hd = dim // n_heads if head_dim is None else head_dim
    checks = [
        ("n_kv_heads", n_heads % n_kv == 0, lambda: f"n_kv_heads: {n_kv} does not divide n_heads {n_heads}"),
        ("n_heads", dim % n_heads == 0 if head_dim is None else True,
         lambda: f"n_heads: {n_heads} does not divide dim {dim} (give head_dim explicitly)"),
        ("head_dim", hd % 2 == 0, lambda: f"head_dim: {hd} is odd; RoPE rotates pairs of elements"),
    ]
    return {"n_kv_heads": n_kv, "head_dim": hd}, checks


def _require(raw: dict, key: str, kind: str):
    if key not in raw:
        raise SymllmError(f"{key}: missing from the {kind} config")
    return raw[key]


#: the keys a Meta ``params.json`` may hold: ``ModelArgs``' fields (``head_dim`` and ``hidden_dim`` used
#: as stated), ``tie_word_embeddings`` (symllm's addition), and those that change no count
#: (``use_scaled_rope``, ``max_seq_len``, …). Any other key is refused, naming the close match.
META_KEYS = ("dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "multiple_of", "ffn_dim_multiplier",
             "norm_eps", "rope_theta", "head_dim", "hidden_dim", "tie_word_embeddings", "use_scaled_rope",
             "rope_scaling_factor", "max_batch_size", "max_seq_len")


def from_meta(raw: dict, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from Meta's ``params.json`` fields (``dim``, ``n_layers``, ``multiple_of``, …).

    LLaMA 1 and 2 ``params.json`` say ``"vocab_size": -1`` (the tokenizer sets it): pass the real
    size as ``vocab_size``. ``head_dim`` and ``hidden_dim`` are used as stated; a key outside
    :data:`META_KEYS` is refused, naming the close match.

    >>> from_meta({"dim": 64, "n_layers": 2, "n_heads": 4, "n_kv_head": 2, "vocab_size": 100})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: n_kv_head: unknown key in a Meta params.json; did you mean 'n_kv_heads'?

    >>> from_meta({"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": -1})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: vocab_size: -1 in params.json (Meta's tokenizer sets it); give --vocab-size
    >>> from_meta({"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": -1}, vocab_size=100).vocab_size
    100
    """
    for key in raw:
        if key not in META_KEYS:
            close = _close(str(key), META_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else " (symllm does not model it)"
            shown = key if isinstance(key, str) and key.isidentifier() and len(key) <= 60 else _short(key)
            raise SymllmError(f"{shown}: unknown key in a Meta params.json{hint}")
    V = vocab_size if vocab_size is not None else _require(raw, "vocab_size", "Meta")
    if V == -1:
        raise SymllmError("vocab_size: -1 in params.json (Meta's tokenizer sets it); give --vocab-size")
    for key in ("head_dim", "hidden_dim"):
        if key in raw and raw[key] is None:
            positive_int(key, None)  # refused: the one message
    return ModelConfig(
        vocab_size=V,
        dim=_require(raw, "dim", "Meta"),
        n_layers=_require(raw, "n_layers", "Meta"),
        n_heads=_require(raw, "n_heads", "Meta"),
        n_kv_heads=raw.get("n_kv_heads"),
        head_dim=raw.get("head_dim"),
        hidden_dim=raw.get("hidden_dim"),
        multiple_of=raw.get("multiple_of", 256),
        ffn_dim_multiplier=raw.get("ffn_dim_multiplier"),
        tie_embeddings=raw.get("tie_word_embeddings", False),
        norm_eps=raw.get("norm_eps", 1e-5),
        rope_theta=raw.get("rope_theta", 10000.0),
        name=name,
    )


def from_hf(raw: dict, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from a HuggingFace ``config.json``, read as transformers' class for its ``model_type`` reads
    it (none: ``llama``). Each model type is read by its family, one module of :mod:`symllm.arch.families`
    (the keys it reads, their defaults, what it refuses); another model type, a key that changes the
    architecture in a way symllm does not model (:data:`HF_UNMODELLED`), or a value transformers would
    refuse (``4.0`` layers, ``"false"`` for a flag) is refused in one line naming it. ``intermediate_size``
    is the SwiGLU width as is: it is never re-rounded.

    >>> from_hf({"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100,
    ...          "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 172}).sliding_window
    4096
    >>> from_hf({"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100,
    ...          "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 172}).n_moe_layers
    2

    >>> from_hf({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    ...          "num_key_value_heads": 2, "intermediate_size": 172, "vocab_size": 100,
    ...          "tie_word_embeddings": True}).attention_kind
    'GQA'
    """
    if not isinstance(raw, dict):
        raise SymllmError(f"config: expected a JSON object, got {type(raw).__name__}")

    def build(**fields):
        if vocab_size is not None:
            fields["vocab_size"] = vocab_size
        return ModelConfig(**fields, name=name)

    return _read_hf(raw, build)


#: the keys of symllm's own config (``symllm count --json``'s ``config``: :meth:`ModelConfig.to_dict` and what
#: :func:`symllm.arch.resolved.resolved_config` adds) that no Meta or HF file has; one of them tells it apart
SYMLLM_KEYS = ("tie_embeddings", "hidden_dim_rule")
#: what :func:`symllm.arch.resolved.resolved_config` adds to the fields: read back as checks, not as fields
_RESOLVED_EXTRAS = ("hidden_dim_rule", "attention")


def from_symllm(raw: dict, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from symllm's own fields: ``symllm count --json``'s ``config`` read back gives the same
    numbers. Its ``hidden_dim`` is the resolved width; where ``hidden_dim_rule`` says Meta's rounding
    derived it, it is derived again from the same fields, so the config keeps its rule. A ``hidden_dim``
    that is not what Meta's rounding gives (an edited width, or an edited ``dim``, ``multiple_of`` or
    ``ffn_dim_multiplier``) is refused in one line naming it: without ``hidden_dim_rule`` the width is
    used as stated, without ``hidden_dim`` it is derived. ``attention`` must be what the heads make. A
    key that is not a field is refused, naming the close match.

    >>> raw = {"vocab_size": 100, "dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 256,
    ...        "multiple_of": 256, "hidden_dim_rule": "meta_plain", "tie_embeddings": True}
    >>> cfg = from_symllm(raw)
    >>> cfg.hidden_dim, cfg.tie_embeddings
    (None, True)
    >>> from_symllm({**raw, "hidden_dim": 512})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: hidden_dim: 512 is not Meta's rounding (256); drop hidden_dim_rule to use it
    >>> from_symllm({k: v for k, v in {**raw, "hidden_dim": 512}.items() if k != "hidden_dim_rule"}).hidden_dim
    512
    >>> from_symllm({"vocab_size": 100, "dim": 64, "n_layers": 2, "n_heads": 4, "tie_embedding": True})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tie_embedding: unknown key in a symllm config; did you mean 'tie_embeddings'?
    """
    known = [f.name for f in dataclasses.fields(ModelConfig) if f.init]
    for key in raw:
        if key not in known and key not in _RESOLVED_EXTRAS:
            close = _close(str(key), known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            shown = key if isinstance(key, str) and key.isidentifier() and len(key) <= 60 else _short(key)
            raise SymllmError(f"{shown}: unknown key in a symllm config{hint}")
    fields = {k: v for k, v in raw.items() if k in known}
    for key in ("vocab_size", "dim", "n_layers", "n_heads"):
        if key not in fields and not (key == "vocab_size" and vocab_size is not None):
            raise SymllmError(f"{key}: missing in a symllm config")
    if isinstance(fields.get("weight_format_kept"), list):
        fields["weight_format_kept"] = tuple(fields["weight_format_kept"])
    kept = fields.get("weight_format_kept")
    if kept is not None and not (isinstance(kept, tuple) and all(isinstance(k, str) for k in kept)):
        raise SymllmError(f"weight_format_kept: expected a list of patterns, got {_short(kept)}")
    for key in ("name", "note", "weight_format", "weight_format_source", "kv_dtype", "kv_dtype_source"):
        if key in fields and not isinstance(fields[key], str) and not (key != "name" and fields[key] is None):
            raise SymllmError(f"{key}: expected a string, got {_short(fields[key])}")
    for key in ("moe_layers", "nope_layers", "window_layers"):
        if isinstance(fields.get(key), list):
            fields[key] = tuple(fields[key])
    fields.setdefault("name", name)
    if vocab_size is not None:
        fields["vocab_size"] = vocab_size
    rule = raw.get("hidden_dim_rule")
    stated = fields.pop("hidden_dim", None) if rule in ("meta", "meta_plain") else None
    cfg = ModelConfig(**fields)  # Meta's rounding made hidden_dim: derived again from the same fields
    if stated is not None and cfg.hidden_rule == rule:
        stated = positive_int("hidden_dim", stated)
        derived = meta_width(cfg.dim, cfg.multiple_of, cfg.ffn_dim_multiplier if rule == "meta" else None)
        if stated != derived:
            raise SymllmError(f"hidden_dim: {stated} is not Meta's rounding ({derived}); drop hidden_dim_rule "
                              "to use it")
    if rule is not None and cfg.hidden_rule != rule:
        raise SymllmError(f"hidden_dim_rule: {rule!r} does not match the fields (they give {cfg.hidden_rule!r})")
    if "attention" in raw and raw["attention"] != cfg.attention_kind:
        raise SymllmError(f"attention: {raw['attention']!r} does not match the heads (they give {cfg.attention_kind!r})")
    return cfg


def from_dict(raw, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from any of the three formats, told apart by their keys (``hidden_size``… HF, ``dim``… Meta,
    ``tie_embeddings`` or ``hidden_dim_rule``: symllm's own, :func:`from_symllm`)."""
    if not isinstance(raw, dict):
        raise SymllmError(f"config: expected a JSON object, got {type(raw).__name__}")
    if raw.keys() & set(SYMLLM_KEYS) and not raw.keys() & {"hidden_size", "model_type"}:
        return from_symllm(raw, vocab_size=vocab_size, name=name)
    if raw.keys() & {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "model_type"}:
        return from_hf(raw, vocab_size=vocab_size, name=name)
    if raw.keys() & {"dim", "n_layers", "n_heads"}:
        return from_meta(raw, vocab_size=vocab_size, name=name)
    raise SymllmError("config: neither a HF config.json (hidden_size) nor a Meta params.json (dim)")


#: the shipped presets, one file each, named for the preset (``llama3.1-8b.json``)
_PRESETS = Path(__file__).resolve().parent.parent / "presets"


@lru_cache(maxsize=None)
def _presets() -> dict[str, dict]:
    out = {}
    # the presets ship as files inside the package (importlib.resources' reader cost a warm count 6 ms)
    for entry in _PRESETS.iterdir():
        if entry.name.endswith(".json"):
            data = json.loads(entry.read_text(encoding="utf-8"))
            out[data["name"]] = data
    return dict(sorted(out.items()))


def preset_names() -> list[str]:
    """The names of the shipped presets.

    >>> "llama3.1-405b" in preset_names()
    True
    """
    return list(_presets())


def _hub_ids(source: str) -> list[str]:
    """The Hub repository ids (``org/name``) a preset's ``source`` names, e.g. ``meta-llama/Llama-3.1-8B
    original/params.json`` -> ``["meta-llama/Llama-3.1-8B"]`` (a file path inside one is not an id)."""
    from symllm.arch import hub
    words = (w.strip(",;:()") for w in source.split())
    return [w for w in words if hub.is_repo_id(w) and not w.endswith(".json") and w.split("/")[0] != "original"
            and w[:1].isalpha()]


def preset_hub(name: str) -> str | None:
    """The Hub repository a preset was read from, as its ``source`` names it first (None: not from the Hub).

    >>> preset_hub("llama3.1-8b"), preset_hub("llama1-7b")
    ('meta-llama/Llama-3.1-8B', None)
    """
    ids = _hub_ids(preset_info(name).get("source", ""))
    return ids[0] if ids else None


def preset_for_hub(repo_id: str) -> str | None:
    """The shipped preset whose ``source`` names the Hub repository ``repo_id`` (in any case), or None.

    >>> preset_for_hub("meta-llama/Llama-3.1-8B"), preset_for_hub("codellama/CodeLlama-7b-hf"), preset_for_hub("a/b")
    ('llama3.1-8b', 'codellama-7b', None)
    """
    wanted = repo_id.casefold()
    return next((name for name, data in _presets().items()
                 if any(i.casefold() == wanted for i in _hub_ids(data.get("source", "")))), None)


def _close(word: str, among, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The known words closest to a misspelt one (difflib loads only when something is misspelt)."""
    import difflib
    return difflib.get_close_matches(word, among, n=n, cutoff=cutoff)


def preset_info(name: str) -> dict:
    """The preset's data file: ``name``, ``description``, ``source``, ``format``, ``config``.

    >>> preset_info("llama3.1-8b")["config"]["dim"]
    4096
    """
    # one preset's own file when the name is one (a warm count reads one file, not all 58)
    if name and name.strip(".-_").replace(".", "").replace("-", "").replace("_", "").isalnum():
        try:
            data = json.loads((_PRESETS / f"{name}.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            data = None
        if data is not None and data.get("name") == name:
            return data
    presets = _presets()
    if name not in presets:
        close = _close(name, presets, n=3, cutoff=0.5)
        while len(", ".join(close)) > 40:  # whole names only, as many as fit the line
            close.pop()
        hint = f"; did you mean {' or '.join(close)}?" if close else " (symllm presets lists them)"
        raise SymllmError(f"model: unknown preset {_short(name, 30)}{hint}")
    return presets[name]


def load(model: str | Path, *, vocab_size: int | None = None) -> ModelConfig:
    """A preset name, the path of a ``config.json`` / ``params.json``, a folder holding one (a checkpoint,
    a snapshot), or a Hub id ``org/name`` found in the local Hugging Face cache (:mod:`symllm.arch.hub`).

    >>> load("no-such-model")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: model: unknown preset 'no-such-model' (symllm presets lists them)
    """
    path = Path(model)
    from symllm.arch import hub  # a folder, or a Hub id in the local cache (no network, no huggingface_hub)
    if path.suffix != ".json" and hub.is_repo_id(str(model)) and not path.exists() and not hub.in_cache(str(model)):
        raise SymllmError(hub.not_cached(str(model), preset_for_hub(str(model))))
    folder = hub.model_folder(model) if path.suffix != ".json" else None
    if folder is not None:
        name = hub.repo_root(folder).name.split("--")[-1] if hub.repo_root(folder) != folder else folder.name
        config = "config.json" if os.path.lexists(folder / "config.json") or not os.path.lexists(
            folder / "params.json") else "params.json"
        return from_dict(read_json(hub.member(folder, config, "config"), "config"), vocab_size=vocab_size,
                         name=name)
    if path.suffix == ".json" or path.exists():
        return from_dict(read_json(path, "config"), vocab_size=vocab_size, name=path.stem)
    info = preset_info(str(model))
    config = from_dict(info["config"], vocab_size=vocab_size, name=info["name"])
    if "max_positions" in info and config.max_positions is None:  # a Meta params.json does not say it
        config = config.replace(max_positions=info["max_positions"])
    return config
