"""The ``laguna`` family: transformers' ``LagunaForCausalLM`` (Poolside's Laguna).

Qwen3-MoE's attention (a per-head QK-norm of width ``head_dim``, ``attention_bias`` on q, k, v and o) and fused
experts, with what Laguna changes:

- query heads per layer (``num_attention_heads_per_layer``; default ``num_attention_heads`` everywhere): the
  layers whose count differs from ``num_attention_heads`` have their own head shape (``LayerKind.heads`` "own",
  the same key/value heads and width); at most one such count is modelled, more are refused in one line;
- a softplus output gate ``o_proj(attn · softplus(g_proj(x)))`` from its own ``g_proj`` without a bias
  (``gate_proj``): one gate a head (``gating`` true or ``"per-head"``) or a query element (``"per-element"``);
- sliding layers beside full ones (``layer_types``), seeing the last ``sliding_window`` keys;
- dense and MoE layers from ``mlp_layer_types`` (default: the first dense), the dense SwiGLU of
  ``intermediate_size``, ``num_experts`` experts of ``moe_intermediate_size`` and one ungated shared SwiGLU of
  ``shared_expert_intermediate_size`` (read as DeepSeek's ``n_shared_experts`` experts of the routed width: a
  width that is not a whole multiple of it is refused);
- a sigmoid router whose ``e_score_correction_bias`` is an ``nn.Parameter`` (``router_score_bias``: counted),
  and the routed sum multiplied by ``moe_routed_scaling_factor`` (one multiply an element, 1.0 too);
- RoPE on ``int(head_dim × partial_rotary_factor)`` of each head, stated per layer type in ``rope_parameters``
  (class default, and the published configs': 0.5 full, 1.0 sliding): the layers of a type whose factor is 1.0
  rotate all of each head (``LayerKind.rope_part`` "whole") beside the others' partial factor; two factors
  below 1 are refused in one line. The RoPE type and its scaling (the full layers' YaRN) change no count.

>>> f = _fields({"num_hidden_layers": 3, "num_attention_heads_per_layer": [48, 64, 48],
...              "layer_types": ["full_attention"] * 3}, 3)
>>> [(k.heads, k.ffn, n) for k, n in f["layers"]], f["alt_heads"], f["gate_proj"], f["partial_rotary_factor"]
([('model', 'dense', 1), ('own', 'moe', 1), ('model', 'moe', 1)], 64, 'head', 0.5)
"""
from symllm.arch.families import hf
from symllm.arch.families.hf import QK_NORM_GRADS, flag, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.qwen3_moe import QWEN3_MOE
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["LAGUNA"]

#: LagunaConfig's defaults
_DEFAULTS = {"vocab_size": 100352, "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 48,
             "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192, "moe_intermediate_size": 512,
             "shared_expert_intermediate_size": 512, "num_experts": 256, "num_experts_per_tok": 8}
#: LagunaConfig's default partial rotary factor per layer type
_ROTARY = {"full_attention": 0.5, "sliding_attention": 1.0}


def _rotary(raw: dict, types: list) -> tuple:
    """The partial rotary factor of the layer types present (rope_parameters per type, LagunaConfig's default
    where absent: 0.5 full, 1.0 sliding) and the layer types rotating all of each head beside it (factor 1.0);
    two factors below 1 are refused in one line."""
    rope = raw.get("rope_parameters")
    if rope is None:
        rope = {kind: {"partial_rotary_factor": f} for kind, f in _ROTARY.items()}
    if not isinstance(rope, dict) or any(not isinstance(rope.get(kind, {}), dict) for kind in set(types)):
        raise SymllmError(f"rope_parameters: expected an object per layer type, got {short(rope)}")
    factors = {kind: rope.get(kind, {}).get("partial_rotary_factor", 1.0) for kind in sorted(set(types))}
    for factor in factors.values():
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
            raise SymllmError(f"partial_rotary_factor: expected a number in (0, 1], got {short(factor)}")
    partial = sorted({f for f in factors.values() if f != 1})
    if len(partial) > 1:
        raise SymllmError(f"rope_parameters: partial_rotary_factor {partial} in two layer types (not modelled)")
    if not partial:
        return None, set()
    return partial[0], {kind for kind, f in factors.items() if f == 1}


def _heads(raw: dict, n_layers: int, heads: int, kv: int) -> list:
    given = raw.get("num_attention_heads_per_layer")
    if given is None:
        return [heads] * n_layers
    if (not isinstance(given, list) or len(given) != n_layers
            or any(type(h) is not int or h < 1 or h % kv for h in given)):
        raise SymllmError(f"num_attention_heads_per_layer: expected {n_layers} multiples of num_key_value_heads "
                          f"{kv}, got {short(given)}")
    return given


def _fields(raw: dict, n_layers: int) -> dict:
    if flag(raw, "moe_apply_router_weight_on_input", False):
        raise SymllmError("moe_apply_router_weight_on_input: true is not built by transformers (not modelled)")
    gating = raw.get("gating", True)
    if gating not in (True, "per-head", "per-element"):
        raise SymllmError(f"gating: expected true, per-head or per-element, got {short(gating)}")
    types = hf.type_list(raw, "layer_types", n_layers, ["full_attention"] * n_layers,
                   ("full_attention", "sliding_attention"))
    mlps = hf.type_list(raw, "mlp_layer_types", n_layers, ["dense"] + ["sparse"] * (n_layers - 1), ("dense", "sparse"))
    heads, kv = (integer(raw, k, _DEFAULTS[k]) for k in ("num_attention_heads", "num_key_value_heads"))
    head_dim = integer(raw, "head_dim", _DEFAULTS["head_dim"])
    per_layer = _heads(raw, n_layers, heads, kv)
    model_heads = heads if heads in per_layer else per_layer[0]
    own = sorted({h for h in per_layer if h != model_heads})
    if len(own) > 1:
        raise SymllmError(f"num_attention_heads_per_layer: {len(own) + 1} query head counts "
                          f"{[model_heads, *own]}; symllm models two")
    factor, whole = _rotary(raw, types)
    kinds = [LayerKind(ffn="moe" if mlp == "sparse" else "dense",
                       window="sliding" if kind == "sliding_attention" else None,
                       heads="own" if h != model_heads else "model", rope_part="whole" if kind in whole else "model")
             for kind, mlp, h in zip(types, mlps, per_layer)]
    out = {"n_heads": model_heads, "qk_norm": "rmsnorm",
           "gate_proj": "element" if gating == "per-element" else "head",
           "partial_rotary_factor": factor, **groups(kinds)}
    if own:
        out.update(alt_heads=own[0], alt_kv_heads=kv, alt_head_dim=head_dim)
    if "sliding_attention" in types:
        out["sliding_window"] = integer(raw, "sliding_window", 512)
    if "sparse" not in mlps:
        return {**out, "hidden_dim": integer(raw, "intermediate_size", _DEFAULTS["intermediate_size"])}
    E = integer(raw, "num_experts", _DEFAULTS["num_experts"])
    width = integer(raw, "moe_intermediate_size", _DEFAULTS["moe_intermediate_size"])
    shared = integer(raw, "shared_expert_intermediate_size", _DEFAULTS["shared_expert_intermediate_size"])
    if shared % width:
        raise SymllmError(f"shared_expert_intermediate_size: {shared} is not a whole multiple of "
                          f"moe_intermediate_size {width} (not modelled)")
    out.update(n_experts=E, experts_per_token=integer(raw, "num_experts_per_tok", 8), hidden_dim=width,
               n_shared_experts=shared // width, router_score_bias=True, peft_fused_experts=True)
    if "dense" in mlps:
        out["dense_hidden_dim"] = integer(raw, "intermediate_size", _DEFAULTS["intermediate_size"])
    return out


#: Qwen3-MoE's attention and experts with per-layer query heads, a softplus output gate, sliding layers, dense
#: and MoE layers from mlp_layer_types, an ungated shared expert and a counted router score bias
LAGUNA = register(QWEN3_MOE.extend(
    "laguna", fields=_fields, defaults=_DEFAULTS, layer_types=("full_attention", "sliding_attention"),
    ignored={},
    models=("num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
            "mlp_layer_types", "num_attention_heads_per_layer", "gating", "partial_rotary_factor",
            "moe_apply_router_weight_on_input"),
    names={**QWEN3_MOE.names, "alt_heads": "num_attention_heads_per_layer", "gate_proj": "gating"},
    tp_plan=QK_NORM_GRADS,
    presets="config.json of poolside/Laguna-XS.2-FP8 (its quantization_config left out; the BF16 "
            "poolside/Laguna-XS.2's was not found whole)"))
