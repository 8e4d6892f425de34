"""The ``qwen2`` and ``qwen3`` families: transformers' ``Qwen2ForCausalLM`` and ``Qwen3ForCausalLM``.

Qwen2 always has biases on q/k/v and none on o; Qwen3 has an RMSNorm of width ``head_dim`` on every query
and key head, ``head_dim`` 128 when absent, and reads ``attention_bias``. Absent ``num_key_value_heads`` is
their class's 32 (null: ``num_attention_heads``). The sliding window (``sliding_window``, default 4096)
is on only with ``use_sliding_window: true`` (a bool: ``"false"`` is refused, as transformers refuses it),
in the layers ``layer_types`` calls ``sliding_attention`` (given, of ``num_hidden_layers`` known names; or
derived: layer ``max_window_layers`` on).

>>> [(k.window, count) for k, count in _window({"use_sliding_window": True, "max_window_layers": 2}, 4)["layers"]]
[(None, 2), ('sliding', 2)]
"""
from symllm.arch.families.hf import QK_NORM_GRADS, flag, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.mistral import MISTRAL

__all__ = ["QWEN2", "QWEN3"]

_PRESETS = "config.json of Qwen/Qwen2.5-7B, Qwen/Qwen3-8B"


def _window(raw: dict, n_layers: int) -> dict:
    """The window transformers' class applies (Qwen2Config.__post_init__, Qwen2Attention) and which layers have it."""
    on = flag(raw, "use_sliding_window", False)
    window = integer(raw, "sliding_window", 4096, nullable=True)
    top = integer(raw, "max_window_layers", 28, minimum=0)
    types = raw.get("layer_types")  # names and length checked with every family's (hf._check)
    window = window if on else None
    if types is None:
        types = ["sliding_attention" if window is not None and i >= top else "full_attention" for i in range(n_layers)]
    if window is None or "sliding_attention" not in types:
        return {}
    return {"sliding_window": window,
            **groups([LayerKind(window="sliding" if kind == "sliding_attention" else None) for kind in types])}


def _fields(raw: dict, n_layers: int) -> dict:
    return {"hidden_dim": integer(raw, "intermediate_size"), **_window(raw, n_layers)}


#: Mistral with biases on q/k/v, 32 KV heads when absent (null: num_attention_heads), and the window only in
#: the layers use_sliding_window / layer_types / max_window_layers say
QWEN2 = register(MISTRAL.extend("qwen2", fields=_fields, qkv_bias=True, defaults={"num_key_value_heads": 32},
                                presets=_PRESETS, nullable=("num_key_value_heads",),
                                layer_types=("full_attention", "sliding_attention")))
#: Qwen2 with Qwen3's per-head QK-norm, attention_bias read in place of the fixed q/k/v biases, head_dim 128
QWEN3 = register(QWEN2.extend("qwen3", qkv_bias=False, reads=("attention_bias",), qk_norm="rmsnorm",
                              defaults={"num_key_value_heads": 32, "head_dim": 128}, tp_plan=QK_NORM_GRADS))
