"""The ``deepseek_v2`` and ``deepseek_v3`` families: transformers' ``DeepseekV2ForCausalLM`` and
``DeepseekV3ForCausalLM`` (DeepSeek-V2, V2-Lite; DeepSeek-V3, R1, Kimi-K2).

Attention is multi-head latent attention (:func:`symllm.arch.components.latent_attention`): ``kv_lora_rank``,
``q_lora_rank`` (null: one plain ``q_proj``, V2-Lite), ``qk_rope_head_dim``, ``qk_nope_head_dim``,
``v_head_dim``; ``attention_bias`` puts a bias on ``q_a_proj``, ``kv_a_proj_with_mqa`` and ``o_proj``.
transformers sets ``head_dim`` to ``qk_rope_head_dim`` (a stated ``head_dim`` that differs is refused:
transformers overwrites it) and needs ``num_key_value_heads`` equal to ``num_attention_heads``.

Layers ``first_k_dense_replace`` on are mixture-of-experts layers: ``n_routed_experts`` SwiGLU experts of
``moe_intermediate_size``, ``num_experts_per_tok`` per token, and ``n_shared_experts`` shared experts fused
into one SwiGLU of ``n_shared_experts × moe_intermediate_size`` that every token runs; the first ones are a
dense SwiGLU of ``intermediate_size``. transformers ignores ``moe_layer_freq`` (DeepSeek's own code makes
every ``moe_layer_freq``-th of those layers MoE): 1, what every published checkpoint says, is read; another
value is refused as ambiguous. The router is one ``n_routed_experts × hidden_size`` weight; V3's
``e_score_correction_bias`` is a buffer in transformers (not a parameter: not counted; the checkpoint stores
its ``n_routed_experts`` floats a MoE layer), group-limited routing (``n_group``, ``topk_group``,
``topk_method``) has no parameters. V2's ``mlp_bias`` is on the dense and shared SwiGLUs (V3's class has
none). ``num_nextn_predict_layers`` (V3) is read as the multi-token-prediction modules transformers does not
build (:attr:`ModelConfig.n_mtp_layers`, reported apart).

Kimi-K2 (``model_type: kimi_k2``) is DeepSeek-V3: its ``auto_map`` loads DeepSeek's own ``DeepseekV3Config``
and ``DeepseekV3ForCausalLM`` under ``trust_remote_code`` (transformers has no ``kimi_k2`` class; its
Kimi_K25Config rewrites a ``kimi_k2`` text_config to ``deepseek_v3``), so it is read as ``deepseek_v3``.
Kimi-K2.5 (``kimi_k25``) is a multimodal wrapper: transformers' ``Kimi_K25ForConditionalGeneration`` builds
its text_config as DeepSeek-V3 (``deepseek_v3`` or ``kimi_k2``; another model type is refused) under a
vision tower and projector, which are not counted, and ties the lm_head by the wrapper's own
``tie_word_embeddings`` (default true), not the text_config's.

>>> f = mla_fields({"first_k_dense_replace": 1, "n_routed_experts": 4, "num_experts_per_tok": 2}, 3, DEEPSEEK_V3)
>>> [(k.ffn, n) for k, n in f["layers"]], f["hidden_dim"], f["dense_hidden_dim"], f["n_shared_experts"]
([('dense', 1), ('moe', 2)], 2048, 18432, 1)
"""
from symllm.arch.families.hf import Family, flag, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.llama import LLAMA
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["DEEPSEEK_V2", "DEEPSEEK_V3", "moe_fields", "mla_fields"]


def moe_fields(raw: dict, n_layers: int, defaults: dict) -> dict:
    """DeepSeek's mixture of experts as transformers reads it (shared by ``glm4_moe``): layers from
    ``first_k_dense_replace`` on are MoE with shared experts, the first ones dense of ``intermediate_size``."""
    first = integer(raw, "first_k_dense_replace", defaults["first_k_dense_replace"], minimum=0)
    flag(raw, "norm_topk_prob", defaults.get("norm_topk_prob", False))  # checked only: no parameters
    dense = integer(raw, "intermediate_size", defaults["intermediate_size"])
    moe = list(range(first, n_layers))
    if not moe:  # every layer dense
        return {"hidden_dim": dense}
    return {"hidden_dim": integer(raw, "moe_intermediate_size", defaults["moe_intermediate_size"]),
            "n_experts": integer(raw, "n_routed_experts", defaults["n_routed_experts"]),
            "experts_per_token": integer(raw, "num_experts_per_tok", defaults["num_experts_per_tok"]),
            "n_shared_experts": integer(raw, "n_shared_experts", defaults["n_shared_experts"]),
            **groups([LayerKind(ffn="moe" if i >= first else "dense") for i in range(n_layers)]),
            "dense_hidden_dim": dense if first else None,
            # PEFT adapts the fused experts under gate_proj/up_proj/down_proj (and leaves the dense and shared
            # SwiGLUs' linears of those names alone): peft_fused_experts refuses those targets
            "peft_fused_experts": True}


def mla_fields(raw: dict, n_layers: int, family: Family) -> dict:
    """The fields of a DeepSeek-V2/V3-style ``family`` (latent attention, then :func:`moe_fields`) as transformers
    reads ``raw`` (shared by ``deepseek_v32``); its doctest is the module's."""
    defaults = family.defaults
    rope = integer(raw, "qk_rope_head_dim", defaults["qk_rope_head_dim"])
    stated = raw.get("head_dim")
    if stated is not None and stated != rope:
        raise SymllmError(f"head_dim: {short(stated, 12)} is not qk_rope_head_dim {rope}, which transformers "
                          "uses (remove it)")
    q_rank = integer(raw, "q_lora_rank", defaults["q_lora_rank"], nullable=True)
    out = {"kv_lora_rank": integer(raw, "kv_lora_rank", defaults["kv_lora_rank"]), "q_lora_rank": q_rank,
           "qk_rope_head_dim": rope, "qk_nope_head_dim": integer(raw, "qk_nope_head_dim", defaults["qk_nope_head_dim"]),
           "v_head_dim": integer(raw, "v_head_dim", defaults["v_head_dim"]), "head_dim": rope,
           "n_mtp_layers": integer(raw, "num_nextn_predict_layers", defaults.get("num_nextn_predict_layers", 0),
                                   minimum=0)}
    out.update(moe_fields(raw, n_layers, defaults))
    return out


def _v2(raw: dict, n_layers: int) -> dict:
    return mla_fields(raw, n_layers, DEEPSEEK_V2)


def _v3(raw: dict, n_layers: int) -> dict:
    return mla_fields(raw, n_layers, DEEPSEEK_V3)


_MODELS = ("kv_lora_rank", "q_lora_rank", "n_routed_experts", "n_shared_experts", "moe_intermediate_size",
           "num_experts_per_tok", "first_k_dense_replace")
_NAMES = {"hidden_dim": "moe_intermediate_size", "dense_hidden_dim": "intermediate_size",
          "n_experts": "n_routed_experts",
          "experts_per_token": "num_experts_per_tok", "n_mtp_layers": "num_nextn_predict_layers"}
_MLA = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}

#: LLaMA's bias keys with latent attention and DeepSeek's experts (its fields), head_dim never null, the MoE and MLA
#: keys modelled, moe_layer_freq ignored at 1, and DeepSeek-V2's sizes when absent
DEEPSEEK_V2 = register(LLAMA.extend(
    "deepseek_v2", fields=_v2, nullable=("num_key_value_heads",),
    defaults={"vocab_size": 102400, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "intermediate_size": 11008, "q_lora_rank": 1536, **_MLA, "first_k_dense_replace": 0,
              "n_routed_experts": 64, "n_shared_experts": 2, "moe_intermediate_size": 1407,
              "num_experts_per_tok": None},
    models=_MODELS, ignored={"moe_layer_freq": 1}, names=_NAMES,
    # DeepseekV2TopkRouter scores F.linear(hidden_states.type(torch.float32), ...) in fp32 (transformers 5.23
    # models/deepseek_v2/modeling_deepseek_v2.py; V3's DeepseekV3TopkRouter alike, its sigmoid of fp32 logits)
    routing_weights="fp32",
    presets="config.json of deepseek-ai/DeepSeek-V2, deepseek-ai/DeepSeek-V2-Lite"))
#: DeepSeek-V2 without mlp_bias, with multi-token-prediction layers, V3's sizes, Kimi-K2 read as it and Kimi-K2.5's
#: text_config inside its wrapper
DEEPSEEK_V3 = register(DEEPSEEK_V2.extend(
    "deepseek_v3", fields=_v3, reads=("attention_bias",),
    defaults={"vocab_size": 129280, "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
              "num_key_value_heads": 128, "intermediate_size": 18432, "q_lora_rank": 1536, **_MLA,
              "first_k_dense_replace": 3, "n_routed_experts": 256, "n_shared_experts": 1,
              "moe_intermediate_size": 2048, "num_experts_per_tok": 8, "norm_topk_prob": True,
              "num_nextn_predict_layers": 1},
    models=_MODELS + ("num_nextn_predict_layers",),
    aliases=("kimi_k2",), wrappers=("kimi_k25",), typed=("kimi_k25",),
    outer={"kimi_k25": {"tie_word_embeddings": True}},
    # DeepseekV3Config.base_model_tp_plan names the MLPs, shared experts and routed experts only (transformers 5.23
    # models/deepseek_v3/configuration_deepseek_v3.py): the latent attention is whole on every rank
    tp_plan={"attention": "whole"},
    presets="config.json of deepseek-ai/DeepSeek-V3, deepseek-ai/DeepSeek-R1, moonshotai/Kimi-K2-Instruct, "
            "and the text_config of moonshotai/Kimi-K2.5"))
