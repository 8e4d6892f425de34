"""Nemotron-H (``nemotron_h``: transformers' ``NemotronHForCausalLM``): a hybrid whose every layer is ONE
sublayer under one RMSNorm, ``x + mixer(norm(x))``, the mixer one of a Mamba-2 mixer (``M``,
``linear_attention``: :mod:`symllm.arch.components.mamba`), an attention without RoPE and without biases
(``*``, ``full_attention``), a squared-ReLU MLP (``-``, ``mlp``: ``up_proj``, ``relu(x)²``, ``down_proj``), or
a mixture of experts (``E``, ``moe``), as ``layers_block_type`` says or, absent, ``hybrid_override_pattern``
(the config class converts the pattern; without either it defaults to ``["linear_attention", "moe",
"full_attention", "mlp"]``). The number of layers is the pattern's length (transformers ignores
``num_hidden_layers``, warning where it differs). The lm_head is never tied (the class declares no tied
weights: ``tie_word_embeddings`` changes nothing). Mamba-2's inner width is ``mamba_num_heads ×
mamba_head_dim`` (``expand`` is not read).

An ``E`` layer is ``NemotronHMoE``: a router of ``n_e × d`` weights (sigmoid scores, grouped top-k; its
``e_score_correction_bias`` is a buffer, no parameter), ``n_routed_experts`` ungated relu2 experts of
``moe_intermediate_size`` (``k`` = ``num_experts_per_tok`` a token) and one shared relu2 MLP of
``moe_shared_expert_intermediate_size``; the dense ``-`` layers keep ``intermediate_size`` (``d_fd`` beside
them).

``moe_latent_size`` (Nemotron-3 Super) makes the routed experts run in that width: ``fc1_latent_proj``
(``d -> moe_latent_size``) before them and ``fc2_latent_proj`` back after them, each with a bias under
``mlp_bias``; the router and the shared expert read ``d`` (:func:`symllm.arch.components.mixture.moe`).

``num_nextn_predict_layers`` multi-token-prediction modules (Nemotron-3 Super's one), which transformers does
not build, are reported apart from the total (``mtp``): each is the layers of ``mtp_layers_block_type`` (or the
pattern ``mtp_hybrid_override_pattern``; the config class's default ``["full_attention", "moe"]``), blocks like
the model's of those types, between ``enorm``, ``hnorm`` and ``eh_proj`` (``2d -> d``) and a
``final_layernorm``, the embedding and head the model's (vLLM's ``NemotronHMultiTokenPredictor``, which
builds attention and MoE layers only: any other type there is refused, as one the model has none of).

>>> f = _fields({"hybrid_override_pattern": "M-M*"}, 4)
>>> runs = [(k.mixer, k.ffn, k.rotary, n) for k, n in f["layers"]]
>>> runs, f["mamba_heads"], f["conv_bias"]  # doctest: +NORMALIZE_WHITESPACE
([('mamba', 'none', True, 1), ('none', 'dense', True, 1), ('mamba', 'none', True, 1),
  ('attention', 'none', False, 1)], 128, True)
"""
from symllm.arch.families.hf import Family, flag, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.recurrent_sizes import stated_state_dtype
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["NEMOTRON_H"]

#: the pattern's letters -> layers_block_type's names (NemotronHConfig._pattern_to_list)
_PATTERN = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
#: each layer type -> its kind (the attention has no RoPE: NemotronHAttention rotates nothing)
_KINDS = {"linear_attention": LayerKind(mixer="mamba", ffn="none"),
          "full_attention": LayerKind(rotary=False, ffn="none"),
          "mlp": LayerKind(mixer="none"), "moe": LayerKind(mixer="none", ffn="moe")}
#: the Mamba-2 keys (and their older names, which the config class renames) -> (field, default)
_MAMBA = {"mamba_num_heads": ("mamba_heads", 128), "mamba_head_dim": ("mamba_head_dim", 64),
          "ssm_state_size": ("ssm_state", 128), "n_groups": ("mamba_groups", 8),
          "conv_kernel": ("conv_kernel", 4), "chunk_size": ("ssm_chunk", 128)}
_OLD = {"mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel", "mamba_chunk_size": "chunk_size",
        "mamba_conv_bias": "use_conv_bias"}


def _types(raw: dict) -> list[str]:
    """Each layer's type, as the config class reads it."""
    for key in ("layers_block_type", "layer_types"):  # layer_types is layers_block_type (attribute_map)
        if raw.get(key) is not None:
            types = raw[key]
            if not isinstance(types, list) or not types:
                raise SymllmError(f"{key}: expected a list of layer types, got {short(types)}")
            for name in types:
                if name not in _PATTERN.values():
                    raise SymllmError(f"{key}: unknown {short(name, 20)} (known: {', '.join(_PATTERN.values())})")
            return types
    pattern = raw.get("hybrid_override_pattern")
    if pattern is None:
        return ["linear_attention", "moe", "full_attention", "mlp"]
    if not isinstance(pattern, str) or not pattern:
        raise SymllmError(f"hybrid_override_pattern: expected a string of M, E, * and -, got {short(pattern)}")
    for char in pattern:
        if char not in _PATTERN:
            raise SymllmError(f"hybrid_override_pattern: unknown layer {short(char)} (known: M, E, *, -)")
    return [_PATTERN[char] for char in pattern]


def _fields(raw: dict, n_layers: int) -> dict:
    raw = {_OLD.get(key, key): value for key, value in raw.items()}
    types = _types(raw)
    mtp = integer(raw, "num_nextn_predict_layers", 0, minimum=0)
    for key, want in (("mamba_hidden_act", "silu"), ("mlp_hidden_act", "relu2")):
        if raw.get(key, want) != want:
            raise SymllmError(f"{key}: {short(raw[key])} is not modelled (symllm models {want})")
    if raw.get("sliding_window") is not None:
        raise SymllmError(f"sliding_window: {short(raw['sliding_window'])} is not modelled for nemotron_h")
    out = dict(n_layers=len(types), tie_embeddings=False, activation="relu2",
               hidden_dim=integer(raw, "intermediate_size", 21504),
               **groups([_KINDS[name] for name in types]))
    if mtp:
        out.update(n_mtp_layers=mtp, mtp_kinds=_mtp_kinds(raw, types))
    if "moe" in types:
        out.update(_moe(raw, out.pop("hidden_dim") if "mlp" in types else None))
    if "linear_attention" in types:
        out.update({f: integer(raw, key, default) for key, (f, default) in _MAMBA.items()})
        out.update(conv_bias=flag(raw, "use_conv_bias", True), mamba_bias=flag(raw, "use_bias", False),
                   # the SSM state's dtype: NemotronHConfig's mamba_ssm_cache_dtype, float32 by default, as vLLM's
                   # hook reads it (recurrent_sizes.SSM_STATE_DTYPES)
                   ssm_dtype=stated_state_dtype(raw, "mamba_ssm_cache_dtype", "float32"))
    else:
        flag(raw, "use_conv_bias", True), flag(raw, "use_bias", False)  # checked only: no Mamba layer
    return out


def _mtp_kinds(raw: dict, types: list[str]) -> tuple:
    """The kinds of the blocks of one multi-token-prediction module: ``mtp_layers_block_type`` (its legacy names
    ``attention`` and ``mamba`` as the config class renames them) or ``mtp_hybrid_override_pattern``, default
    ``["full_attention", "moe"]``; vLLM builds attention and MoE layers only, each here a type the model has."""
    key = "mtp_layers_block_type"
    given = raw.get(key)
    if given is None and raw.get("mtp_hybrid_override_pattern") is not None:
        key, pattern = "mtp_hybrid_override_pattern", raw["mtp_hybrid_override_pattern"]
        if not isinstance(pattern, str) or not pattern or any(char not in _PATTERN for char in pattern):
            raise SymllmError(f"{key}: expected a string of M, E, * and -, got {short(pattern)}")
        given = [_PATTERN[char] for char in pattern]
    given = ["full_attention", "moe"] if given is None else given
    if not isinstance(given, list) or not given:
        raise SymllmError(f"{key}: expected a list of layer types, got {short(given)}")
    mtp = [{"attention": "full_attention", "mamba": "linear_attention"}.get(name, name) for name in given]
    for name in mtp:
        if name not in ("full_attention", "moe") or name not in types:
            raise SymllmError(f"{key}: a {short(name, 20)} layer is not modelled there (vLLM builds attention and "
                              "MoE layers of the model's)")
    return tuple(_KINDS[name] for name in mtp)


def _moe(raw: dict, dense: int | None) -> dict:
    """The E layers' fields (NemotronHMoE): routed experts of ``moe_intermediate_size``, one shared relu2 MLP of
    ``moe_shared_expert_intermediate_size`` (``n_shared_experts`` is not read: it builds one), the dense layers'
    ``intermediate_size`` beside them; the router's grouping, scaling and score-correction buffer add no
    parameter. ``moe_latent_size``: the routed experts' latent width (Nemotron-3 Super)."""
    experts = integer(raw, "n_routed_experts", 8)
    k = integer(raw, "num_experts_per_tok", 2)
    if k > experts:
        raise SymllmError(f"num_experts_per_tok: {k} is more than the {experts} experts (n_routed_experts)")
    group = integer(raw, "n_group", 1)
    if experts % group:
        raise SymllmError(f"n_group: {group} does not divide the {experts} experts (n_routed_experts)")
    out = dict(n_experts=experts, experts_per_token=k, hidden_dim=integer(raw, "moe_intermediate_size", 7688),
               n_shared_experts=1, shared_hidden_dim=integer(raw, "moe_shared_expert_intermediate_size", 7688),
               moe_latent_size=None if raw.get("moe_latent_size") is None else integer(raw, "moe_latent_size", 0))
    if dense is not None:
        out.update(dense_hidden_dim=dense)
    return out


NEMOTRON_H = register(Family(
    model_type="nemotron_h", fields=_fields, reads=("mlp_bias",),
    defaults={"vocab_size": 131072, "hidden_size": 4096, "num_hidden_layers": 4, "num_attention_heads": 32,
              "num_key_value_heads": 8, "head_dim": 128},
    # the MoE keys the config class always has (defaults 8, 2, 7688, ...) build nothing without an E layer
    models=("n_routed_experts", "n_shared_experts", "moe_intermediate_size", "num_experts_per_tok",
            "num_nextn_predict_layers", "moe_shared_expert_intermediate_size", "moe_latent_size", "n_group",
            "topk_group", "routed_scaling_factor", "norm_topk_prob", "moe_shared_expert_overlap"),
    # NemotronHAttention's projections have no bias whatever attention_bias says; the lm_head is never tied
    ignored={"attention_bias": False},
    layer_types=("full_attention", "linear_attention", "moe"),
    activation=("mlp_hidden_act", {"relu2": "relu2"}),
    names={"mamba_heads": "mamba_num_heads", "mamba_head_dim": "mamba_head_dim", "ssm_state": "ssm_state_size",
           "mamba_groups": "n_groups", "conv_kernel": "conv_kernel", "ssm_chunk": "chunk_size",
           "conv_bias": "use_conv_bias", "mamba_bias": "use_bias", "moe_latent_size": "moe_latent_size"},
    # NemotronHConfig.base_model_tp_plan splits ``embeddings`` over the vocabulary (embedding_rowwise) and the routed
    # experts alone, and NemotronHForCausalLM declares no _tp_plan (transformers 5.23 models/nemotron_h/): the Mamba-2
    # mixers, the attention, the MLPs, the shared expert and the lm_head are whole on every rank
    tp_plan={"lm_head": "replicated", "mamba": "whole", "attention": "whole", "feed_forward": "whole",
             "shared_experts": "whole"},
    # NemotronHTopkRouter's sigmoid of fp32 logits (router_logits.type(torch.float32)): fp32 routing weights
    routing_weights="fp32",
    presets="config.json of nvidia/Nemotron-H-8B-Base-8K (as TensorRT-LLM's tests copy it), "
            "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, nvidia/Nemotron-H-56B-Base-8K and "
            "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 (the FP8 checkpoint's; the others: no citable copy of "
            "their config.json was found)"))
