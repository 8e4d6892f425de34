"""The ``mistral`` and ``mixtral`` families: transformers' ``MistralForCausalLM`` and ``MixtralForCausalLM``.

Both have a ``sliding_window`` in every layer when it is not null (Mistral's class defaults it to 4096,
Mixtral's to null) and ``num_key_value_heads`` 8 when the key is absent (transformers refuses null).
Mixtral's feed-forward is ``num_local_experts`` experts (default 8) of width ``intermediate_size``, each
token routed to ``num_experts_per_tok`` (default 2). Neither reads ``attention_bias`` nor ``mlp_bias``.

>>> MISTRAL.defaults["sliding_window"], MIXTRAL.defaults["sliding_window"]
(4096, None)
"""
from symllm.arch.families.hf import integer, register
from symllm.arch.families.llama import LLAMA

__all__ = ["MISTRAL", "MIXTRAL"]

_PRESETS = ("config.json of mistralai/Mistral-7B-v0.1, mistralai/Mistral-7B-Instruct-v0.2, "
            "mistralai/Mixtral-8x7B-v0.1, mistralai/Mixtral-8x22B-v0.1")


def _window(raw: dict, default) -> dict:
    return {"sliding_window": integer(raw, "sliding_window", default, nullable=True)}


def _mistral(raw: dict, n_layers: int) -> dict:
    return {"hidden_dim": integer(raw, "intermediate_size"), **_window(raw, MISTRAL.defaults["sliding_window"])}


def _mixtral(raw: dict, n_layers: int) -> dict:
    return {"hidden_dim": integer(raw, "intermediate_size"), **_window(raw, MIXTRAL.defaults["sliding_window"]),
            "n_experts": integer(raw, "num_local_experts", MIXTRAL.defaults["num_local_experts"]),
            "experts_per_token": integer(raw, "num_experts_per_tok", MIXTRAL.defaults["num_experts_per_tok"])}


#: LLaMA with a sliding window in every layer, 8 KV heads when absent, only head_dim nullable, no bias keys
MISTRAL = register(LLAMA.extend(
    "mistral", fields=_mistral, presets=_PRESETS, nullable=("head_dim",), reads=(), ignored={},
    defaults={"num_key_value_heads": 8, "sliding_window": 4096}))
#: Mistral with a mixture of experts in every layer, and no window by default
MIXTRAL = register(MISTRAL.extend(
    "mixtral", fields=_mixtral,
    defaults={"num_key_value_heads": 8, "sliding_window": None, "num_local_experts": 8, "num_experts_per_tok": 2},
    models=("num_local_experts", "num_experts_per_tok"),
    # MixtralTopKRouter's softmax(router_logits.float()), its top-k weights not cast back (transformers 5.23
    # models/mixtral/modeling_mixtral.py)
    routing_weights="fp32"))
