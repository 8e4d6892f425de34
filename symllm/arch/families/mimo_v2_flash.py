"""The ``mimo_v2_flash`` family: transformers' ``MiMoV2FlashForCausalLM`` (Xiaomi's MiMo-V2-Flash).

GLM-4.5's attention biases (``attention_bias`` on q, k and v; ``o_proj`` has none) and router (one
``n_routed_experts × hidden_size`` weight; ``e_score_correction_bias`` is a buffer, group-limited routing
adds no parameter), with what MiMo-V2-Flash changes:

- values of their own head width ``v_head_dim`` (default 128) beside queries and keys of ``head_dim``
  (default 192): ``v_proj``, ``o_proj``, ``A·V`` and the cache's values (``Structure.value_width``), each new
  value multiplied by ``attention_value_scale`` (one FLOP an element; the class multiplies by 1.0 too);
- sliding layers (``layer_types``; default: the first and every 6th layer full) with twice the key/value heads
  (their own head shape, ``LayerKind.heads``) and gpt-oss's attention sinks (``LayerKind.sinks``), seeing the
  last ``sliding_window`` keys (``sliding_window_size + 1`` where a config states that key, as the class sets it);
- dense layers and MoE layers from ``mlp_layer_types`` (default: the first dense), the experts of
  ``moe_intermediate_size`` and no shared expert, the dense SwiGLU of ``intermediate_size``;
- RoPE on ``int(head_dim × partial_rotary_factor)`` of each head, the factor stated per layer type in
  ``rope_parameters`` (default 0.334 in both; two different factors are refused).

The published config.json (XiaomiMiMo/MiMo-V2-Flash) is written for the checkpoint's own code: it states its
layers as ``hybrid_layer_pattern`` (1: sliding) and ``moe_layer_freq`` (1: MoE), the sliding layers' shapes as
``swa_num_attention_heads``, ``swa_num_key_value_heads``, ``swa_head_dim``, ``swa_v_head_dim`` and their sinks as
``add_swa_attention_sink_bias`` / ``add_full_attention_sink_bias``, keys transformers' class ignores: each is
accepted where it states what transformers builds (its defaults: the published pattern) and refused otherwise.
``attention_chunk_size`` is read by neither (no chunked attention in either model): accepted.

>>> f = _fields({"num_hidden_layers": 7, "num_key_value_heads": 2, "num_attention_heads": 8}, 7)
>>> [(k.window, k.heads, k.sinks, k.ffn, n) for k, n in f["layers"]][:3], f["alt_kv_heads"], f["v_head_dim"]
([(None, 'model', False, 'dense', 1), ('sliding', 'own', True, 'moe', 4), (None, 'model', False, 'moe', 1)], 4, 128)
"""
from symllm.arch.families.glm4_moe import GLM4_MOE
from symllm.arch.families import hf
from symllm.arch.families.hf import flag, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["MIMO_V2_FLASH"]

#: MiMoV2FlashConfig's defaults
_DEFAULTS = {"vocab_size": 152576, "hidden_size": 4096, "num_hidden_layers": 48, "num_attention_heads": 64,
             "num_key_value_heads": 4, "head_dim": 192, "intermediate_size": 16384, "moe_intermediate_size": 2048,
             "num_experts_per_tok": 8, "n_routed_experts": 256, "norm_topk_prob": True}


def _rotary(raw: dict):
    """The partial rotary factor: rope_parameters' per layer type (default 0.334 in both), or the top-level one."""
    rope = raw.get("rope_parameters")
    if isinstance(rope, dict) and any(isinstance(v, dict) for v in rope.values()):
        factors = {v.get("partial_rotary_factor", 1.0) for v in rope.values() if isinstance(v, dict)}
    elif isinstance(rope, dict):
        factors = {rope.get("partial_rotary_factor", 1.0)}
    else:
        factors = {raw.get("partial_rotary_factor", 0.334)}
    if len(factors) > 1:
        raise SymllmError(f"rope_parameters: partial_rotary_factor {sorted(factors)} differs by layer type "
                          "(not modelled)")
    factor, = factors
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise SymllmError(f"partial_rotary_factor: expected a number, got {short(factor)}")
    return None if factor == 1 else factor


def _own_keys(raw: dict, types: list, mlps: list, heads: int, kv: int, head_dim: int) -> None:
    """The checkpoint's own keys (module docstring), each refused unless it states what transformers builds."""
    stated = {"hybrid_layer_pattern": [int(t == "sliding_attention") for t in types],
              "moe_layer_freq": [int(m == "sparse") for m in mlps],
              "swa_num_attention_heads": heads, "swa_num_key_value_heads": 2 * kv, "swa_head_dim": head_dim,
              "swa_v_head_dim": integer(raw, "v_head_dim", 128),
              "add_swa_attention_sink_bias": True, "add_full_attention_sink_bias": False}
    for key, built in stated.items():
        value = raw.get(key)
        if value is not None and (value != built or type(value) is not type(built)):
            said, is_ = (str(v).lower() if isinstance(v, bool) else short(v, 30) for v in (value, built))
            raise SymllmError(f"{key}: {said} is not what transformers' MiMoV2FlashForCausalLM builds "
                              f"({is_}; it ignores the key: not modelled)")


def _fields(raw: dict, n_layers: int) -> dict:
    types = hf.type_list(raw, "layer_types", n_layers, ["full_attention" if i == 0 or not (i + 1) % 6 else
                                                  "sliding_attention" for i in range(n_layers)],
                   ("full_attention", "sliding_attention"))
    mlps = hf.type_list(raw, "mlp_layer_types", n_layers, ["dense"] + ["sparse"] * (n_layers - 1), ("dense", "sparse"))
    window = integer(raw, "sliding_window", 129)
    if raw.get("sliding_window_size") is not None:  # MiMoV2FlashConfig: sliding_window = sliding_window_size + 1
        window = integer(raw, "sliding_window_size", minimum=0) + 1
    heads, kv = (integer(raw, k, _DEFAULTS[k]) for k in ("num_attention_heads", "num_key_value_heads"))
    head_dim = integer(raw, "head_dim", _DEFAULTS["head_dim"])
    flag(raw, "norm_topk_prob", True)  # no parameters
    for key in ("n_group", "topk_group"):
        integer(raw, key, 1)  # group-limited routing: no parameters
    _own_keys(raw, types, mlps, heads, kv, head_dim)
    moe = "sparse" in mlps
    kinds = [LayerKind(ffn="moe" if mlp == "sparse" else "dense",
                       **({"window": "sliding", "heads": "own", "sinks": True} if kind == "sliding_attention" else {}))
             for kind, mlp in zip(types, mlps)]
    out = {"attention_bias": False, "qkv_bias": flag(raw, "attention_bias", False),
           "partial_rotary_factor": _rotary(raw), "v_head_dim": integer(raw, "v_head_dim", 128), **groups(kinds)}
    if "sliding_attention" in types:
        if heads % (2 * kv):  # MiMoV2FlashAttention's num_key_value_groups would not be whole
            raise SymllmError(f"num_key_value_heads: {kv}, doubled in the sliding layers, does not divide the "
                              f"{heads} query heads")
        out.update(sliding_window=window, alt_heads=heads, alt_kv_heads=2 * kv, alt_head_dim=head_dim)
    if moe:
        out.update(n_experts=integer(raw, "n_routed_experts", _DEFAULTS["n_routed_experts"]),
                   experts_per_token=integer(raw, "num_experts_per_tok", 8),
                   hidden_dim=integer(raw, "moe_intermediate_size", 2048),
                   dense_hidden_dim=integer(raw, "intermediate_size", 16384) if "dense" in mlps else None)
    else:
        out["hidden_dim"] = integer(raw, "intermediate_size", 16384)
    return out


#: GLM-4.5's biases and router with its own sizes, layers, value width and sinks; no shared experts, no MTP
MIMO_V2_FLASH = register(GLM4_MOE.extend(
    "mimo_v2_flash", fields=_fields, defaults=_DEFAULTS, layer_types=("full_attention", "sliding_attention"),
    models=("n_routed_experts", "moe_intermediate_size", "num_experts_per_tok", "partial_rotary_factor",
            "num_local_experts", "attention_chunk_size"),
    ignored={},
    names={**GLM4_MOE.names, "n_experts": "n_routed_experts"},
    presets="config.json of XiaomiMiMo/MiMo-V2-Flash (its FP8 quantization_config left out)"))
