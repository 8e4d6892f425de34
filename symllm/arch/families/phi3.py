"""The ``phi3`` family: transformers' ``Phi3ForCausalLM`` (Phi-3-mini/medium, Phi-3.5-mini, Phi-4).

LLaMA's block with two fused projections: ``qkv_proj`` (q, k and v in one linear of ``(n_h + 2·n_kv)·d_h``
outputs, sliced after) and ``gate_up_proj`` (gate and up in one of ``2·intermediate_size``, chunked after):
the same parameters and FLOPs as LLaMA's, other names as LoRA targets, and transformers' tensor-parallel plan
splits them column-wise with the output gathered (``colwise_gather_output``; ``o_proj`` and ``down_proj``
row-wise). No biases (``attention_bias`` and ``mlp_bias`` are not read: refused when true). Absent or null
``num_key_value_heads`` is ``num_attention_heads``; ``sliding_window`` (null by default) is in every layer
when set, as Mistral's. ``rope_scaling`` (``longrope``, ``su``, ``yarn``) rescales RoPE's frequencies: no
parameter, no FLOP symllm counts; ``partial_rotary_factor`` (Phi-4-mini: 0.75; at the top level or in
``rope_parameters``) rotates ``int(head_dim × partial_rotary_factor)`` of each head: element-wise work only.

>>> _fields({"intermediate_size": 8192, "sliding_window": 2047}, 32)
{'hidden_dim': 8192, 'sliding_window': 2047, 'fused': True, 'partial_rotary_factor': 1.0}
"""
from symllm.arch.families.hf import integer, register, rotary_factor
from symllm.arch.families.mistral import MISTRAL

__all__ = ["PHI3"]


def _fields(raw: dict, n_layers: int) -> dict:
    return {"hidden_dim": integer(raw, "intermediate_size", 8192),
            "sliding_window": integer(raw, "sliding_window", None, nullable=True), "fused": True,
            "partial_rotary_factor": rotary_factor(raw, 1.0)}


#: Mistral's window in every layer (null by default) with fused projections and a partial rotary; the class's
#: defaults for absent heads (num_key_value_heads: num_attention_heads, nullable)
PHI3 = register(MISTRAL.extend(
    "phi3", fields=_fields, defaults={}, nullable=("num_key_value_heads",), models=("partial_rotary_factor",),
    names={"hidden_dim": "intermediate_size"},
    presets="config.json of microsoft/Phi-3-mini-4k-instruct, microsoft/Phi-3-medium-4k-instruct, "
            "microsoft/Phi-3.5-mini-instruct, microsoft/phi-4, microsoft/Phi-4-mini-instruct"))
