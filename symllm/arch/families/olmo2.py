"""The ``olmo2`` family: transformers' ``Olmo2ForCausalLM`` (OLMo-2-1124-7B and 13B, OLMo-2-0325-32B).

LLaMA's sizes with two changes: a QK-norm over the whole width of q and k (``q_norm``: an RMSNorm of
``n_h·d_h``, ``k_norm`` of ``n_kv·d_h``, on the projections' outputs before RoPE; ``qk_norm="full"``), and
norms after the attention and the feed-forward, on each branch before its residual add
(``post_attention_layernorm``, ``post_feedforward_layernorm``), in place of LLaMA's pre-norms: the same
parameters per block. ``attention_bias`` puts a bias on q, k, v and o; absent or null
``num_key_value_heads`` is ``num_attention_heads``; no sliding window.

>>> _fields({"intermediate_size": 11008}, 32)
{'hidden_dim': 11008, 'norms': 'post'}
"""
from symllm.arch.families.hf import integer, register
from symllm.arch.families.llama import LLAMA

__all__ = ["OLMO2"]


def _fields(raw: dict, n_layers: int) -> dict:
    return {"hidden_dim": integer(raw, "intermediate_size", 11008), "norms": "post"}


#: LLaMA with OLMo 2's whole-width QK-norm and post-norms; only attention_bias read; head_dim never null
OLMO2 = register(LLAMA.extend(
    "olmo2", fields=_fields, nullable=("num_key_value_heads",), reads=("attention_bias",), qk_norm="full",
    presets="config.json of allenai/OLMo-2-1124-7B, allenai/OLMo-2-1124-13B, allenai/OLMo-2-0325-32B"))
