"""The ``llama4_text`` family (and ``llama4``, whose ``text_config`` transformers always builds as Llama 4
text, whatever ``model_type`` it states): transformers' ``Llama4ForCausalLM``, read as ``Llama4TextConfig``
derives it.

Every absent key takes the class's default (``vocab_size`` 202048, ``intermediate_size`` 8192,
``intermediate_size_mlp`` 16384, 16 experts, 1 per token, ``head_dim`` 128, 8 KV heads); a null where the
class wants an int is refused, as transformers refuses it. MoE layers are ``moe_layers`` or every
``interleave_moe_layer_step``-th (a positive int: 0 is refused), each with a shared expert; the layers
without RoPE are the zeros of ``no_rope_layers`` (or every ``no_rope_layer_interval``-th); the others have
the L2 QK-norm (``use_qk_norm``) and chunked attention (``attention_chunk_size``; null: none); the layers
without RoPE scale their queries by a temperature (``attn_temperature_tuning``, default true).

>>> f = _fields({"interleave_moe_layer_step": 2}, 4)
>>> [(k.ffn, k.rotary, k.window, n) for k, n in f["layers"]], f["dense_hidden_dim"]  # doctest: +NORMALIZE_WHITESPACE
([('dense', True, 'chunked', 1), ('moe', True, 'chunked', 1), ('dense', True, 'chunked', 1),
  ('moe', False, None, 1)], 16384)
"""
from symllm.arch.families.hf import flag, groups, indices, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.llama import LLAMA
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["LLAMA4"]


def _fields(raw: dict, n_layers: int) -> dict:
    L = n_layers
    step = integer(raw, "interleave_moe_layer_step", 1)
    moe = indices(raw, "moe_layers", L, default=None)
    moe = list(range(step - 1, L, step)) if moe is None else moe
    ropes = raw.get("no_rope_layers")  # one 0/1 per layer: 1 = the layer uses RoPE (transformers' naming)
    if not ropes:  # null or empty: the interval's
        every = integer(raw, "no_rope_layer_interval", 4)
        ropes = [int((i + 1) % every != 0) for i in range(L)]
    if not isinstance(ropes, list) or len(ropes) != L or any(type(r) is not int or r not in (0, 1) for r in ropes):
        raise SymllmError(f"no_rope_layers: expected {L} flags of 0 or 1 (1: RoPE), got {short(ropes, 30)}")
    types = raw.get("layer_types")
    derived = ["chunked_attention" if r else "full_attention" for r in ropes]
    if types is not None and types != derived:
        raise SymllmError(f"layer_types: {short(types, 16)} is not what no_rope_layers implies (chunked "
                          "where RoPE)")
    all_moe = len(set(moe)) == L
    chunk = integer(raw, "attention_chunk_size", 8192, nullable=True)
    moe = set(moe)
    tuning = flag(raw, "attn_temperature_tuning", True)  # Llama4TextAttention: in the layers without RoPE
    kinds = [LayerKind(ffn="moe" if i in moe else "dense", rotary=bool(rope),
                       window="chunked" if rope and chunk is not None else None, temperature=tuning and not rope)
             for i, rope in enumerate(ropes)]
    return dict(n_experts=integer(raw, "num_local_experts", 16),
                experts_per_token=integer(raw, "num_experts_per_tok", 1),
                shared_expert=True, fused_experts="in_out", **groups(kinds),
                dense_hidden_dim=None if all_moe else integer(raw, "intermediate_size_mlp", 16384),
                qk_norm="l2" if flag(raw, "use_qk_norm", True) else None,
                attention_chunk=chunk, hidden_dim=integer(raw, "intermediate_size", 8192))


#: LLaMA with experts, chunked layers and layers without RoPE (its fields), read inside the llama4 wrapper too;
#: only attention_bias read, no nullable size, no sliding_window refusal
LLAMA4 = register(LLAMA.extend(
    "llama4_text", fields=_fields, wrappers=("llama4",), reads=("attention_bias",), nullable=(), ignored={},
    defaults={"vocab_size": 202048, "num_key_value_heads": 8, "head_dim": 128},
    layer_types=("full_attention", "chunked_attention"),
    models=("num_local_experts", "num_experts_per_tok", "interleave_moe_layer_step", "moe_layers",
            "attention_chunk_size", "use_qk_norm", "no_rope_layers", "no_rope_layer_interval"),
    # Llama4TextMoe scales the experts' input by the router's scores; Llama4TextExperts.forward(hidden_states) takes
    # no routing weights (transformers 5.23 models/llama4/modeling_llama4.py)
    routing_weights="none",
    presets="the text_config of meta-llama/Llama-4-Scout-17B-16E and meta-llama/Llama-4-Maverick-17B-128E config.json"))
