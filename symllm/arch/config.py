"""Model configurations: :class:`ModelConfig` and its validation, and the width rules it derives
(Meta's SwiGLU rounding, heads). Reading a file is :mod:`symllm.arch.readers` (``from_hf``, ``from_meta``,
``from_dict``), the presets and :func:`load` are :mod:`symllm.arch.catalogue`; their names are offered here
too, loaded on first use.

>>> ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4, n_kv_heads=2).attention_kind
'GQA'
>>> from symllm.arch.config import load
>>> load("llama3.1-8b").ffn_dim_multiplier
1.3
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from symllm.arch.compressed_sizes import check_compressed, is_compressed
from symllm.arch.recurrent_sizes import check_recurrent
from symllm.arch.layers import (ACTIVATIONS, NORMS as NORM_PLACES, QK_NORMS, LayerKind, groups as _groups, kind_fields,
                                read_groups, read_mtp_kinds)
from symllm.arch.widths import derive_heads, meta_product_ok
from symllm.errors import SymllmError
from symllm.validate import booleans, choice, positive_int, stated_with, integer as _integer, short as _short
from symllm.validate import positive_number as _positive_float

__all__ = ["ModelConfig", "from_meta", "from_hf", "from_dict", "load", "preset_names", "preset_info",
           "preset_hub", "META_KEYS"]


def _positive_int(field: str, value, *, optional: bool = False):
    """A config's integer field: JSON's ``4096.0`` is read as 4096 (:func:`symllm.validate.integer`)."""
    return positive_int(field, value, optional=optional, floats=True)


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
    #: a norm on each query and key head (symllm.arch.layers.QK_NORMS: Qwen3's, Llama 4's, OLMo 2's, Command-R+'s)
    qk_norm: str | None = None
    #: Phi-3's fused projections: q, k and v in one linear (qkv_proj), gate and up in one (gate_up_proj)
    fused: bool = False
    #: where each block's norms sit (symllm.arch.layers.NORMS: pre, post, sandwich, parallel)
    norms: str = "pre"
    #: the feed-forward's activation: gated "silu" (SwiGLU), "gelu_tanh" (GeGLU); ungated "relu2", "gelu" (MPT)
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
    #: ALiBi: each head's slope times the query-key distance added to every score (MPT; element-wise only)
    alibi: bool = False
    #: q, k and v clamped to [-clip_qkv, clip_qkv] (MPT's attn_config.clip_qkv; element-wise only); None: not
    clip_qkv: float | None = None
    #: routed experts in each mixture-of-experts layer (None: a dense model); hidden_dim is their width
    n_experts: int | None = None
    #: experts each token is routed to (top-k)
    experts_per_token: int | None = None
    #: Llama 4's shared expert: a dense SwiGLU of width hidden_dim in every MoE layer, run by every token
    shared_expert: bool = False
    #: Qwen2-MoE's gated shared expert: the shared expert's own width (shared_expert_intermediate_size), its
    #: output scaled by a sigmoid gate (a d -> 1 linear); None: no such gate (Llama 4's, of width hidden_dim)
    shared_hidden_dim: int | None = None
    #: Nemotron-3 Super: the routed experts' width between fc1_latent_proj and fc2_latent_proj (None: d)
    moe_latent_size: int | None = None
    #: gpt-oss: biases on the router and on every routed expert's projections
    moe_bias: bool = False
    #: gpt-oss: the routed experts' clamped SwiGLU (swiglu_limit; no parameters, its own element-wise work)
    clamped_swiglu: bool = False
    #: gpt-oss: a learned attention sink per query head in every layer
    attention_sinks: bool = False
    #: PEFT adapts the fused routed experts of transformers' class under gate_proj/up_proj/down_proj (Qwen3-MoE,
    #: through transformers' weight-conversion mapping), which symllm does not model: those LoRA targets are refused
    peft_fused_experts: bool = False
    #: how save_pretrained stores the routed experts (symllm.arch.layers.FUSED_EXPERTS); no count depends on it
    fused_experts: str | None = None
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
    #: the block kinds of an MTP module sharing the model's embedding and head (components.mtp); None: DeepSeek-V3's
    mtp_kinds: tuple | None = None
    #: the attention output gated by a sigmoid of a second half of q_proj (Qwen3-Next, Qwen3.5)
    output_gate: bool = False
    #: Laguna's output gate o_proj(attn · softplus(g_proj(x))): g_proj a d -> n_h ("head": one gate a head) or a
    #: d -> n_h·d_h ("element") linear without a bias; None: none
    gate_proj: str | None = None
    #: Laguna's router: e_score_correction_bias is a parameter (n_e numbers a MoE layer), not a buffer; the routed
    #: sum is multiplied by moe_routed_scaling_factor (element-wise only)
    router_score_bias: bool = False
    #: Gemma 4's enable_moe_block: the MoE layers keep their dense MLP (dense_hidden_dim) beside the experts
    moe_beside_mlp: bool = False
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
    #: per-layer embeddings (Gemma 4 E2B/E4B): each layer's input width d_p and the table's rows V_p (None: none)
    per_layer_dim: int | None = None
    per_layer_vocab: int | None = None
    #: DeepSeek-V4 (symllm.arch.components.compressed): hyper-connection streams (hc_mult), the grouped output
    #: projection's groups and width (o_groups, o_lora_rank), the CSA and HCA rates, hc_sinkhorn_iters; None: none
    hc_mult: int | None = None
    o_groups: int | None = None
    o_lora_rank: int | None = None
    compress_csa: int | None = None
    compress_hca: int | None = None
    hc_sinkhorn_iters: int | None = None
    #: the layers as runs of consecutive identical ones, ``((LayerKind, count), ...)`` in model order (a family
    #: states each layer's kind: symllm.arch.families.hf.groups; :attr:`groups` collapses them by kind); None:
    #: every layer alike, MoE when n_experts is given, with the sliding window or the attention chunk when given
    layers: tuple | None = None
    #: the transformers family (its ``model_type``) whose own tensor-parallel plan differs from the parts' declared
    #: splits, as that family declares it (:attr:`symllm.arch.families.hf.Family.tp_plan`): what ``--engine hf``
    #: lays the model out by; None: transformers' plan is every part's own split (Llama's, and a config not read
    #: through a family)
    tp_plan: str | None = None
    #: what a reader should know about what was counted (e.g. a vision encoder that is not)
    note: str | None = None
    #: the ``model_type`` of the multimodal config.json whose ``text_config`` this language model is (a wrapper
    #: beside a vision encoder: ``gemma3``, ``llama4``; a preset of the text_config alone states it as ``wrapper``):
    #: what an engine reading that file sees (TGI's launcher: :func:`symllm.costs.engine_memory.warmup_tokens`);
    #: None: the config.json is the language model's own
    wrapper: str | None = None
    #: the language model's config.json values of the keys an engine reads by name whatever the family
    #: (:data:`symllm.arch.families.hf.STATED`), as ``((key, value), ...)``: a family may read a width under
    #: another key (Qwen3-MoE's experts: ``moe_intermediate_size``); None: not read from a config.json. Where the
    #: values came from, not the model: two configs of one model compare equal whatever their files stated
    stated: tuple | None = dataclasses.field(default=None, compare=False)
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
    #: the dtype the config states for a hybrid's recurrent (SSM) state (Nemotron-H's ``mamba_ssm_cache_dtype``,
    #: Qwen3.5's ``mamba_ssm_dtype``): what vLLM keeps it in (symllm.arch.recurrent_sizes.SSM_STATE_DTYPES);
    #: None: none stated
    ssm_dtype: str | None = None
    #: RMSNorm epsilon (no effect on counts)
    norm_eps: float = 1e-5
    #: RoPE base (no effect on counts)
    rope_theta: float = 10000.0
    #: the positions the model was trained for (HF ``max_position_embeddings``; a Meta preset's published window;
    #: None: not stated). No effect on counts: a context past it is flagged, never refused (RoPE scaling runs past it)
    max_positions: int | None = None
    #: the RoPE scaling the config states (its rope_type: llama3, yarn, longrope, linear, ...; a Meta params.json's
    #: use_scaled_rope is llama3; None: none) and the positions it reaches where more than max_positions (yarn's
    #: original_max_position_embeddings x factor). No effect on counts: a context past them is flagged
    #: (symllm.costs.checks.past_window) as past what the config already scales to
    rope_scaling: str | None = None
    scaled_positions: int | None = None
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
        put("scaled_positions", _positive_int("scaled_positions", self.scaled_positions, optional=True))
        if self.rope_scaling is not None and not isinstance(self.rope_scaling, str):
            raise SymllmError(f"rope_scaling: expected a RoPE type name, got {_short(self.rope_scaling)}")
        booleans(self)  # every field declared bool (the MoE's, the recurrent layers' too): no list to extend
        choice("qk_norm", self.qk_norm, QK_NORMS)
        if self.kv_dtype is not None:
            from symllm.arch.dtypes import named
            put("kv_dtype", named("kv_dtype", self.kv_dtype))  # any spelling: float8_e4m3fn is fp8
        choice("norms", self.norms, NORM_PLACES)
        if self.norms == "parallel" and self.n_experts is not None:  # no family has one; saved is a dense block's
            raise SymllmError("norms: a parallel block with a mixture of experts is not modelled")
        choice("activation", self.activation, ACTIVATIONS)
        for field in ("attn_softcap", "final_softcap", "logit_scale", "clip_qkv"):
            if getattr(self, field) is not None:
                put(field, _positive_float(field, getattr(self, field)))
        self._check_moe(put)
        for field in ("sliding_window", "attention_chunk", "per_layer_dim", "per_layer_vocab"):
            put(field, _positive_int(field, getattr(self, field), optional=True))
        if (self.per_layer_dim is None) != (self.per_layer_vocab is None):
            raise SymllmError("per_layer_vocab: per-layer embeddings need both per_layer_dim and per_layer_vocab")
        if self.sliding_window is not None and self.attention_chunk is not None:
            raise SymllmError(f"attention_chunk: {self.attention_chunk} with sliding_window "
                              f"{self.sliding_window}; a layer has one or the other")
        self._check_layers(put)
        self._check_latent(put)
        self._check_indexer(put)
        check_recurrent(self, put)
        self._check_alt_heads(put)
        check_compressed(self, put)

    def _check_alt_heads(self, put) -> None:
        """The second head shape: all three sizes with a layer whose kind's heads is "own", none without; its
        query heads a whole multiple of its key/value heads (transformers' repeat_kv)."""
        sizes = ("alt_heads", "alt_kv_heads", "alt_head_dim")
        for field in sizes:
            put(field, _positive_int(field, getattr(self, field), optional=True))
        own = any(kind.heads == "own" for kind, _ in self.layers)
        stated_with(self, sizes, own, "has its own head shape")
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
        if self.latent != "q_lora" and not is_compressed(self):  # DeepSeek-V4's: symllm.arch.compressed_sizes
            raise SymllmError(f"index_topk: {self.index_topk} without a latent attention with q_lora_rank (the "
                              "indexer reads the query latent)")
        if self.qk_rope_head_dim is not None and self.index_head_dim < self.qk_rope_head_dim:
            raise SymllmError(f"index_head_dim: {self.index_head_dim} is less than qk_rope_head_dim "
                              f"{self.qk_rope_head_dim}, the part the indexer rotates")

    def _check_latent(self, put) -> None:
        """MLA's sizes: all four with kv_lora_rank (q_lora_rank optional), none without; its keys and values
        have n_h heads (transformers' MLA fails otherwise) and no q/k/v biases, QK-norm, window or
        layers without RoPE; a partial rotary rotates a whole, even, positive part of each head."""
        mla = ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        for field in ("kv_lora_rank", "q_lora_rank") + mla:
            put(field, _positive_int(field, getattr(self, field), optional=True))
        put("n_mtp_layers", _integer("n_mtp_layers", self.n_mtp_layers, low=0, floats=True))
        put("mtp_kinds", read_mtp_kinds(self.mtp_kinds, self.n_mtp_layers, {k for k, _ in self.layers}))
        if self.kv_lora_rank is None:  # v_head_dim alone: GQA values of their own width (MiMo-V2-Flash)
            for field in (() if is_compressed(self) else ("q_lora_rank",)) + mla[:2]:  # DeepSeek-V4's q_lora
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
                    raise SymllmError(f"{field}: {_short(getattr(self, field))} is not modelled with a latent "
                                      "attention")
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
        if self.partial_rotary_factor is None and any(kind.rope_part != "model" for kind, _ in self.layers):
            raise SymllmError("layers: a layer rotates its whole head (rope_part) in a model without partial rotary")

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
        ``shared_hidden_dim`` (Nemotron-H's shared experts of their own width: both given); else None."""
        if self.n_shared_experts is not None and self.shared_hidden_dim is None:
            return self.n_shared_experts * self.hidden_dim
        return self.shared_hidden_dim

    def _check_moe(self, put) -> None:
        for field in ("n_experts", "experts_per_token", "dense_hidden_dim", "shared_hidden_dim", "moe_latent_size"):
            put(field, _positive_int(field, getattr(self, field), optional=True))
        if self.gate_proj not in (None, "head", "element"):
            raise SymllmError(f"gate_proj: expected head or element, got {_short(self.gate_proj)}")
        if self.gate_proj is not None and self.output_gate:
            raise SymllmError("gate_proj: given with output_gate; an attention output has one gate")
        if self.shared_hidden_dim is not None and not self.shared_expert and self.n_shared_experts is None:
            raise SymllmError(f"shared_hidden_dim: {self.shared_hidden_dim} given without shared_expert")
        if self.n_experts is None:
            for field in ("experts_per_token", "dense_hidden_dim", "moe_latent_size"):
                if getattr(self, field) is not None:
                    raise SymllmError(f"{field}: {_short(getattr(self, field))} given without n_experts")
            for field in ("shared_expert", "moe_bias", "clamped_swiglu", "peft_fused_experts", "router_score_bias",
                      "moe_beside_mlp"):
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
            put("layers", read_groups(self.layers, self.n_layers))
        moe = self.n_moe_layers or 0
        if self.n_experts is not None and not moe:
            raise SymllmError(f"n_experts: {self.n_experts} given but no layer is a mixture of experts")
        if self.n_experts is None and any(kind.ffn == "moe" for kind, _ in self.layers):
            raise SymllmError("n_experts: missing; some layers are a mixture of experts")
        dense = sum(n for kind, n in self.layers if kind.ffn == "dense")  # Nemotron-H's other layers have none
        if (moe and dense or self.moe_beside_mlp) and self.dense_hidden_dim is None:
            raise SymllmError("dense_hidden_dim: missing; the layers outside the MoE ones are dense")
        if moe and not dense and self.dense_hidden_dim is not None and not self.moe_beside_mlp:
            raise SymllmError(f"dense_hidden_dim: {self.dense_hidden_dim} given but every layer is MoE")
        windows = {kind.window for kind, _ in self.layers} - {None}
        for window, size, field in (("sliding", self.sliding_window, "sliding_window"),
                                    ("chunked", self.attention_chunk, "attention_chunk")):
            if window in windows and size is None:
                raise SymllmError(f"{field}: missing; some layers have a {window} window")

    def count_layers(self, test) -> int:
        """How many layers ``test(kind)`` holds for (0: none; ``count`` states the options by it)."""
        return sum(count for kind, count in self.layers if test(kind))

    @property
    def n_moe_layers(self) -> int | None:
        """How many layers are MoE (None: a dense model)."""
        return self.count_layers(lambda kind: kind.ffn == "moe") or None

    @property
    def n_nope_layers(self) -> int | None:
        """How many layers have no RoPE (None: none)."""
        return self.count_layers(lambda kind: not kind.rotary) or None

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
        per run, and ``"temperature": true`` where it has one, which ``ModelConfig(**...)`` reads back). Where every
        layer is the kind the other fields make (``layers`` None derives it: MoE when ``n_experts`` is given, the window
        when one is), ``layers`` is None, so that the dict still reads with an edited ``n_layers``; the runs are written
        only where they say what no other field does (layers of several kinds).

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
            {**kind_fields(kind), "count": count} for kind, count in self.layers]  # fields off their default said
        out.update(mtp_kinds=[kind_fields(k) for k in self.mtp_kinds]) if self.mtp_kinds else out.pop("mtp_kinds")
        for key in ("weight_format", "weight_format_source", "weight_format_kept", "kv_dtype",
                    "kv_dtype_source", "ssm_dtype", "tp_plan", "wrapper"):  # only a quantized (...) config says them
            if out[key] is None:
                del out[key]
        del out["stated"]  # what a config.json said, not a field of symllm's own config
        return out


#: the spec's fields (:class:`symllm.arch.specs.Spec`) whose value a config gives under another name, a derived
#: property: what :func:`symllm.arch.specs.spec_of` reads, and what :mod:`symllm.studies.quick` binds a stored
#: kernel's argument to (a symbol binds the spec's field, :attr:`symllm.arch.symbols.SymbolInfo.binds`)
SPEC_FIELDS = {"shared_hidden_dim": "shared_width", "qk_rope_head_dim": "rope_dim",
               **{f: f for f in ("linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim",
                                 "conv_kernel", "alt_heads", "alt_kv_heads", "alt_head_dim", "mamba_heads",
                                 "mamba_head_dim", "ssm_state", "mamba_groups", "ssm_chunk", "index_heads",
                                 "index_head_dim", "index_topk", "per_layer_dim", "per_layer_vocab", "moe_latent_size",
                                 "hc_mult", "o_groups", "o_lora_rank", "compress_csa", "compress_hca",
                                 "hc_sinkhorn_iters")}}


#: names of the readers and the catalogue offered here too, loaded on first use (PEP 562): old imports keep working
_ELSEWHERE = {**{name: "symllm.arch.readers" for name in ("META_KEYS", "SYMLLM_KEYS", "from_meta", "from_hf",
                                                           "from_symllm", "from_dict")},
              **{name: "symllm.arch.catalogue" for name in ("preset_names", "preset_info", "preset_hub",
                                                             "preset_for_hub", "load", "_presets")}}


def __getattr__(name: str):
    if name in _ELSEWHERE:
        import importlib
        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
