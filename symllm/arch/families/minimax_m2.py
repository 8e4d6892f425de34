"""The ``minimax_m2`` family: transformers' ``MiniMaxM2ForCausalLM`` (MiniMax-M2, M2.1, M2.5).

Parts symllm already has, put together: GQA without biases; OLMo 2's QK-norm over the whole query and key
width (``q_norm`` an RMSNorm of ``n_h·d_h``, ``k_norm`` of ``n_kv·d_h``, on the projections' outputs before
RoPE: ``qk_norm="full"``); RoPE on ``int(head_dim × partial_rotary_factor)`` of each head, the factor
``rotary_dim / head_dim`` when only the released checkpoints' ``rotary_dim`` states it (as the class's
``convert_rope_params_to_dict`` reads it; a stated factor that disagrees is refused); and a mixture of
experts in every layer: a router ``n_e × d`` without a bias and ``num_local_experts`` (``num_experts``)
SwiGLU experts of width ``intermediate_size``, ``num_experts_per_tok`` per token, no shared expert.
The router scores with a sigmoid and picks the top-k by score plus ``e_score_correction_bias``, a buffer
(not a parameter: not counted; the checkpoint stores its ``n_e`` floats a layer): no matmul beyond the
router's.

The released config.json files carry keys of MiniMax's own code that the class never reads; each is
accepted at what the class builds and refused otherwise: ``use_qk_norm`` true, ``qk_norm_type``
``"per_layer"`` (the whole width, not per head), ``scoring_func`` ``"sigmoid"``, ``use_routing_bias`` true,
``shared_intermediate_size`` 0, and ``attn_type_list`` all 1 (full attention; a 0, MiniMax-Text-01's
lightning attention, is refused). ``use_mtp``, ``num_mtp_modules`` and ``mtp_transformer_layers`` name
multi-token-prediction modules that neither the class builds nor the published checkpoints store
(MiniMax-M2.5's safetensors hold transformers' parameters, the routing-bias buffers and FP8 block scales,
nothing more: ``tests/test_real_configs.py``): nothing is counted for them.

>>> f = _fields({"head_dim": 128, "rotary_dim": 64, "num_local_experts": 8, "attn_type_list": [1, 1]}, 2)
>>> f["partial_rotary_factor"], f["n_experts"], f["experts_per_token"], f["qk_norm"]
(0.5, 8, 8, 'full')
>>> _fields({"attn_type_list": [1, 0]}, 2)  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
symllm.errors.SymllmError: attn_type_list: [1, 0] has lightning-attention layers (0), which transformers' minimax_m2
does not build
"""
from symllm.arch.families.hf import integer, local_experts, register, rotary_factor
from symllm.arch.families.mistral import MIXTRAL
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["MINIMAX_M2"]


def _fields(raw: dict, n_layers: int) -> dict:
    types = raw.get("attn_type_list")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers or any(type(t) is not int for t in types):
            raise SymllmError(f"attn_type_list: expected {n_layers} integers (1: full attention), got "
                              f"{short(types, 30)}")
        if any(t != 1 for t in types):
            raise SymllmError(f"attn_type_list: {short(types, 30)} has lightning-attention layers (0), which "
                              "transformers' minimax_m2 does not build")
    head_dim = integer(raw, "head_dim", MINIMAX_M2.defaults["head_dim"])
    default = 1.0
    if raw.get("rotary_dim") is not None:
        default = integer(raw, "rotary_dim") / head_dim
    factor = rotary_factor(raw, default)
    if raw.get("rotary_dim") is not None and factor != default:
        raise SymllmError(f"partial_rotary_factor: {short(factor)} disagrees with rotary_dim {raw['rotary_dim']} "
                          f"of head_dim {head_dim}")
    E = local_experts(raw, MINIMAX_M2.defaults["num_local_experts"])
    return {"hidden_dim": integer(raw, "intermediate_size", MINIMAX_M2.defaults["intermediate_size"]),
            "n_experts": E, "qk_norm": "full", "partial_rotary_factor": factor,
            "experts_per_token": integer(raw, "num_experts_per_tok", MINIMAX_M2.defaults["num_experts_per_tok"]),
            # MiniMaxM2Experts holds fused gate_up_proj/down_proj tensors: PEFT finds no gate_proj/up_proj/down_proj
            # module to adapt (it raises), so those LoRA targets are refused in one line, not counted
            "peft_fused_experts": True}


#: Mixtral's experts in every layer (num_experts its other name) with OLMo 2's whole-width QK-norm and a partial
#: rotary (its fields), MiniMax-M2's sizes, no nullable size, and MiniMax's own keys accepted at what the class builds
MINIMAX_M2 = register(MIXTRAL.extend(
    "minimax_m2", fields=_fields, nullable=(),
    defaults={"vocab_size": 200064, "hidden_size": 3072, "intermediate_size": 1536, "num_hidden_layers": 62,
              "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 256,
              "num_experts_per_tok": 8},
    models=("num_local_experts", "num_experts", "num_experts_per_tok", "use_qk_norm", "partial_rotary_factor"),
    ignored={"use_qk_norm": True, "qk_norm_type": "per_layer", "scoring_func": "sigmoid", "use_routing_bias": True,
             "shared_intermediate_size": 0},
    names={"hidden_dim": "intermediate_size", "n_experts": "num_local_experts",
           "experts_per_token": "num_experts_per_tok"},
    presets="config.json of MiniMaxAI/MiniMax-M2.5"))
