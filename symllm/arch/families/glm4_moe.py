"""The ``glm4_moe`` family: transformers' ``Glm4MoeForCausalLM`` (GLM-4.5, GLM-4.5-Air).

GQA attention whose ``attention_bias`` puts a bias on q, k and v (``o_proj`` has none), an optional
QK-norm of width ``head_dim`` on every query and key head (``use_qk_norm``, default false), RoPE on
``int(head_dim × partial_rotary_factor)`` of each head (default 0.5; in ``rope_parameters`` or at the top
level), and DeepSeek's mixture of experts (:func:`symllm.arch.families.deepseek.moe_fields`): layers
``first_k_dense_replace`` on (default 1) route each token to ``num_experts_per_tok`` of ``n_routed_experts``
SwiGLU experts of ``moe_intermediate_size`` and run ``n_shared_experts`` shared ones; the router's
``e_score_correction_bias`` is a buffer (not counted), ``n_group``/``topk_group`` add no parameters.
``num_nextn_predict_layers`` is read as the multi-token-prediction modules transformers does not build.
``decoder_sparse_step`` is never read by the class: 1 (GLM-4.5-Air's, what it builds) is accepted, another
value refused.

>>> f = _fields({"num_attention_heads": 4, "hidden_size": 64, "attention_bias": True}, 2)
>>> f["qkv_bias"], f["partial_rotary_factor"], [(k.ffn, n) for k, n in f["layers"]], f["n_shared_experts"]
(True, 0.5, [('dense', 1), ('moe', 1)], 1)
"""
from symllm.arch.families.deepseek import DEEPSEEK_V3, moe_fields
from symllm.arch.families.hf import flag, integer, register, rotary_factor

__all__ = ["GLM4_MOE"]


def _fields(raw: dict, n_layers: int) -> dict:
    out = {"attention_bias": False, "qkv_bias": flag(raw, "attention_bias", False),
           "qk_norm": "rmsnorm" if flag(raw, "use_qk_norm", False) else None,
           "partial_rotary_factor": rotary_factor(raw, 0.5),
           "n_mtp_layers": integer(raw, "num_nextn_predict_layers", 1, minimum=0)}
    out.update(moe_fields(raw, n_layers, GLM4_MOE.defaults))
    return out


#: DeepSeek-V3's experts and multi-token prediction with GQA in place of latent attention (q/k/v biases, an
#: optional per-head QK-norm, a partial rotary), GLM-4.5's sizes, no nullable size, decoder_sparse_step ignored at 1
GLM4_MOE = register(DEEPSEEK_V3.extend(
    "glm4_moe", fields=_fields, nullable=(),
    defaults={"vocab_size": 151552, "hidden_size": 4096, "num_hidden_layers": 46, "num_attention_heads": 96,
              "num_key_value_heads": 8, "intermediate_size": 10944, "moe_intermediate_size": 1408,
              "num_experts_per_tok": 8, "n_shared_experts": 1, "n_routed_experts": 128, "first_k_dense_replace": 1,
              "norm_topk_prob": True},
    models=("n_routed_experts", "n_shared_experts", "moe_intermediate_size", "num_experts_per_tok",
            "first_k_dense_replace", "use_qk_norm", "partial_rotary_factor", "num_nextn_predict_layers",
            "decoder_sparse_step"),
    # GLM-4.5-Air's config.json states decoder_sparse_step 1 (every layer from first_k_dense_replace on is
    # MoE, as the class builds it); Glm4MoeConfig keeps it and the model never reads it
    ignored={"decoder_sparse_step": 1},
    names={**DEEPSEEK_V3.names, "qkv_bias": "attention_bias", "qk_norm": "use_qk_norm"},
    presets="config.json of zai-org/GLM-4.5, zai-org/GLM-4.5-Air"))
