"""The ``gpt_oss`` family: transformers' ``GptOssForCausalLM`` (gpt-oss-20b, gpt-oss-120b).

Every layer is a mixture of experts: a router with a bias (``d -> num_local_experts``; ``num_experts`` is
the same attribute) picks ``num_experts_per_tok`` experts per token, each a SwiGLU of width
``intermediate_size`` stored fused (``gate_up_proj [E, d, 2·d_ff]`` and its bias ``[E, 2·d_ff]``,
``down_proj [E, d_ff, d]`` and its bias ``[E, d]``) whose gate is clamped (``swiglu_limit``, ``swiglu_alpha``:
no parameters). Attention has biases on q, k, v and o (``attention_bias``, default true), ``head_dim`` 64,
and one learned sink logit per query head; the layers ``layer_types`` calls ``sliding_attention`` (derived:
the even layers) see the last ``sliding_window`` keys (default 128), the others the whole context. RoPE is
YaRN-scaled (``rope_parameters``): no parameters.

>>> f = _fields({"num_hidden_layers": 4}, 4)
>>> f["n_experts"], f["experts_per_token"], f["hidden_dim"], f["sliding_window"]
(128, 4, 2880, 128)
>>> [(k.ffn, k.window, n) for k, n in f["layers"]]  # runs, in model order
[('moe', 'sliding', 1), ('moe', None, 1), ('moe', 'sliding', 1), ('moe', None, 1)]
"""
from symllm.arch.families.hf import groups, integer, local_experts, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.mistral import MIXTRAL
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["GPT_OSS"]


def _fields(raw: dict, n_layers: int) -> dict:
    for key in ("swiglu_limit", "swiglu_alpha"):  # checked only: they change no count
        if key in raw and (type(raw[key]) not in (int, float) or not raw[key] > 0):
            raise SymllmError(f"{key}: expected a positive number, got {short(raw[key])}")
    types = raw.get("layer_types")  # names and length checked with every family's (hf._check)
    if types is None:  # GptOssConfig.__post_init__: sliding in the even layers
        types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)]
    sliding = [kind == "sliding_attention" for kind in types]
    window = integer(raw, "sliding_window", 128, nullable=True)
    if any(sliding) and window is None:
        raise SymllmError("sliding_window: null with sliding_attention layers (ambiguous: refused)")
    out = dict(n_experts=local_experts(raw, 128), experts_per_token=integer(raw, "num_experts_per_tok", 4),
               hidden_dim=integer(raw, "intermediate_size", 2880), moe_bias=True, clamped_swiglu=True,
               fused_experts="in_out",  # GptOssExperts: gate_up_proj [E, d, 2·d_ff] and down_proj, with biases
               attention_sinks=True,
               **groups([LayerKind(ffn="moe", window="sliding" if on else None) for on in sliding]))
    if any(sliding):
        out["sliding_window"] = window
    return out


#: Mixtral's experts in every layer (num_experts its other name; biased, clamped: its fields) with attention
#: biases (default on), sinks, sliding layers beside full ones, gpt-oss-120b's sizes and no nullable size
GPT_OSS = register(MIXTRAL.extend(
    "gpt_oss", fields=_fields, reads=("attention_bias",), nullable=(),
    defaults={"vocab_size": 201088, "hidden_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64,
              "num_key_value_heads": 8, "head_dim": 64, "attention_bias": True},
    layer_types=("full_attention", "sliding_attention"),
    models=("num_local_experts", "num_experts", "num_experts_per_tok"),
    names={"hidden_dim": "intermediate_size", "n_experts": "num_local_experts",
           "experts_per_token": "num_experts_per_tok"},
    # GptOssConfig has no base_model_tp_plan, GptOssForCausalLM's _tp_plan splits the lm_head alone (transformers
    # 5.23 models/gpt_oss/modeling_gpt_oss.py), and init_parallel_plans adds the vocabulary split of embed_tokens
    # only to a plan of the base model's: the embedding and the attention whole on every rank, and the routed
    # experts each whole (--expert-tp whole under --engine hf; its base_model_ep_plan shards them, each whole, over
    # expert-parallel ranks: grouped_gemm)
    tp_plan={"embedding": "replicated", "attention": "whole", "experts": "whole"},
    routing_weights=None,  # GptOssTopKRouter's softmax in the logits' dtype (Mixtral's are fp32)
    presets="config.json of openai/gpt-oss-20b, openai/gpt-oss-120b (without its MXFP4 quantization_config)"))
