"""The ``exaone4`` family: transformers' ``Exaone4ForCausalLM`` (EXAONE 4.0 32B and 1.2B, LG AI Research).

Qwen3's block (an RMSNorm of width ``head_dim`` on every query and key head, before RoPE) with OLMo 2's
norms after the attention and the feed-forward (``post_attention_layernorm``, ``post_feedforward_layernorm``,
no pre-norms), and local layers beside global ones: with a ``sliding_window``, the layers ``layer_types``
calls ``sliding_attention`` (absent: every layer but each ``sliding_window_pattern``-th, an integer, as
``Exaone4Config`` derives them) see the last ``sliding_window`` keys and rotate q and k; the others attend to
every key without RoPE (``Exaone4Attention``: RoPE only ``if self.sliding_window is None or self.is_sliding``).
Without a window every layer is LLaMA's, with RoPE. No bias keys are read; the class's defaults fill absent
keys; a string pattern or a null window without ``layer_types`` is refused, as the class refuses them.

>>> [(k.rotary, k.window, n) for k, n in _fields({"sliding_window": 8}, 5)["layers"]]
[(True, 'sliding', 3), (False, None, 1), (True, 'sliding', 1)]
"""
from symllm.arch.families.hf import QK_NORM_GRADS, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.qwen import QWEN3
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["EXAONE4"]


def _fields(raw: dict, n_layers: int) -> dict:
    window = integer(raw, "sliding_window", 4096, nullable=True)
    types = raw.get("layer_types")  # names and length checked with every family's (hf._check)
    if types is None:
        pattern = raw.get("sliding_window_pattern", 4)
        if window is None or type(pattern) is not int:
            what = "a null sliding_window" if window is None else f"sliding_window_pattern {short(pattern, 12)}"
            raise SymllmError(f"layer_types: missing; Exaone4Config derives the layers from an integer pattern "
                              f"and a window, not from {what}")
        pattern = integer(raw, "sliding_window_pattern", 4)
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    out = {"hidden_dim": integer(raw, "intermediate_size", 16384), "norms": "post"}
    if window is None:  # every layer rotates and sees every key
        return out
    kinds = [LayerKind(window="sliding") if kind == "sliding_attention" else LayerKind(rotary=False) for kind in types]
    return {**out, "sliding_window": window, **groups(kinds)}


#: Qwen3's per-head QK-norm; its own sizes, post-norms and layers; no bias keys, no nullable sizes
EXAONE4 = register(QWEN3.extend(
    "exaone4", fields=_fields, reads=(), nullable=(),
    defaults={"vocab_size": 102400, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 32},
    tp_plan=QK_NORM_GRADS,
    presets="config.json of LGAI-EXAONE/EXAONE-4.0-32B (as NVIDIA/TensorRT-LLM's "
            "tests/unittest/_torch/modeling/test_modeling_exaone4.py vendors it)"))
