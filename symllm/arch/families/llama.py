"""The ``llama`` family: transformers' ``LlamaForCausalLM`` (also a config.json without ``model_type``).

``intermediate_size`` is the SwiGLU width as is (never re-rounded); ``attention_bias`` puts a bias on
q/k/v/o, ``mlp_bias`` on w1/w2/w3; ``num_key_value_heads`` and ``head_dim`` may be absent or null (derived).
Its model has no sliding window: a ``sliding_window`` key is refused as ambiguous.

>>> LLAMA.reads
('attention_bias', 'mlp_bias')
"""
from symllm.arch.families.hf import Family, integer, register

__all__ = ["LLAMA"]


def _fields(raw: dict, n_layers: int) -> dict:
    return {"hidden_dim": integer(raw, "intermediate_size")}


LLAMA = register(Family(
    model_type="llama", fields=_fields, nullable=("num_key_value_heads", "head_dim"),
    reads=("attention_bias", "mlp_bias"), ignored={"sliding_window": None},
    presets="config.json of TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T (the LLaMA presets are "
            "Meta's params.json: symllm.arch.config.from_meta)"))
