"""The ``gemma``, ``gemma2`` and ``gemma3_text`` families: transformers' ``GemmaForCausalLM``,
``Gemma2ForCausalLM`` and ``Gemma3ForCausalLM`` (and ``gemma3``, the multimodal wrapper, whose
``text_config`` is counted: its vision tower and projector are not).

What every Gemma changes of LLaMA's block, none of it a parameter: GeGLU (``gelu_pytorch_tanh`` in place of
SiLU; Gemma 1's legacy ``"gelu"`` is read as it, as transformers converts it), RMSNorms scaling by
``1 + weight``, embeddings multiplied by ``√d``, ``head_dim`` its own size (not ``d / n_h``), and tied
embeddings by default. Gemma 2 and 3 add sandwich norms (before and after the attention and the
feed-forward: four a block), ``query_pre_attn_scalar`` in place of ``head_dim`` in the score scale (no
count), soft-capping of the attention scores and the final logits when set (``attn_logit_softcapping``,
``final_logit_softcapping``; Gemma 2's class sets 50 and 30, Gemma 3's none; transformers' Gemma 3 never
caps its scores, whatever ``attn_logit_softcapping`` says, so a value there is refused as ignored), and local
layers with a sliding window among global ones: ``layer_types``, or Gemma 2's alternation (even layers slide) and Gemma
3's ``sliding_window_pattern`` (every 6th layer global). The two RoPE bases of Gemma 3 (``rope_theta``,
``rope_local_base_freq``) change no count. Gemma 3 has an RMSNorm of width ``head_dim`` (``1 + weight``) on
every query and key head. Every absent key takes the class's default; a true ``use_bidirectional_attention``
(no causal mask) is refused.

>>> f = _gemma3({"sliding_window": 512, "num_hidden_layers": 7}, 7)
>>> f["sliding_window"], [(kind.window, count) for kind, count in f["layers"]], f["qk_norm"]
(512, [('sliding', 5), (None, 1), ('sliding', 1)], 'rmsnorm')
"""
from symllm.arch.families.hf import QK_NORM_GRADS, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.llama import LLAMA
from symllm.errors import SymllmError
from symllm.validate import positive_number, short

__all__ = ["GEMMA", "GEMMA2", "GEMMA3_TEXT", "softcap"]

_TANH = {"gelu_pytorch_tanh": "gelu_tanh"}
#: what every Gemma is, whatever its config says
_GEMMA = {"norm_offset": True, "embed_scale": True}


def _check_common(raw: dict, kind: str, read: str, ignored: str) -> None:
    """A true use_bidirectional_attention is refused; the activation key the class ignores may only say
    gelu_pytorch_tanh (what it reads)."""
    if raw.get("use_bidirectional_attention") not in (None, False):
        raise SymllmError(f"use_bidirectional_attention: {short(raw['use_bidirectional_attention'], 20)} "
                          "(no causal mask) is not modelled")
    if ignored in raw and raw[ignored] is not None and raw[ignored] != "gelu_pytorch_tanh":
        raise SymllmError(f"{ignored}: {short(raw[ignored], 20)} is ignored by {kind}, which reads {read} "
                          "(remove it)")


def softcap(raw: dict, key: str, default):
    """A soft-capping value read from ``raw[key]`` (else ``default``): None (no cap) or a positive number
    (shared by ``gemma4``).

    >>> softcap({"final_logit_softcapping": 30.0}, "final_logit_softcapping", None), softcap({}, "x", None)
    (30.0, None)
    """
    value = raw.get(key, default)
    return None if value is None else positive_number(key, value)


def _gemma(raw: dict, n_layers: int) -> dict:
    _check_common(raw, "gemma", "hidden_act", "hidden_activation")
    return {"hidden_dim": integer(raw, "intermediate_size", 24576), **_GEMMA}


def _local(raw: dict, n_layers: int, default_types: list) -> dict:
    """The sliding window and the layers that have it (``layer_types``, else the class's default pattern)."""
    window = integer(raw, "sliding_window", 4096, nullable=True)
    types = raw.get("layer_types")  # names and length checked with every family's (hf._check)
    types = default_types if types is None else types
    if window is None or "sliding_attention" not in types:
        return {}
    return {"sliding_window": window,
            **groups([LayerKind(window="sliding" if kind == "sliding_attention" else None) for kind in types])}


def _sandwich(raw: dict, kind: str, caps: tuple) -> dict:
    _check_common(raw, kind, "hidden_activation", "hidden_act")
    integer(raw, "query_pre_attn_scalar", 256)  # the score scale: checked only, it changes no count
    return {"norms": "sandwich", **_GEMMA,
            "attn_softcap": softcap(raw, "attn_logit_softcapping", caps[0]),
            "final_softcap": softcap(raw, "final_logit_softcapping", caps[1])}


def _gemma2(raw: dict, n_layers: int) -> dict:
    types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)]
    return {"hidden_dim": integer(raw, "intermediate_size", 9216), **_sandwich(raw, "gemma2", (50.0, 30.0)),
            **_local(raw, n_layers, types)}


def _gemma3(raw: dict, n_layers: int) -> dict:
    every = integer(raw, "sliding_window_pattern", 6)
    types = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(n_layers)]
    if raw.get("layer_types") is not None and "sliding_window_pattern" in raw and raw["layer_types"] != types:
        raise SymllmError(f"layer_types: {short(raw['layer_types'], 24)} is not what sliding_window_pattern "
                          f"{every} implies")
    return {"hidden_dim": integer(raw, "intermediate_size", 9216), **_sandwich(raw, "gemma3_text", (None, None)),
            **_local(raw, n_layers, types), "qk_norm": "rmsnorm"}


_LAYERS = ("full_attention", "sliding_attention")
_SOFTCAPS = ("attn_logit_softcapping", "final_logit_softcapping")

#: LLaMA with GeGLU (Gemma's "gelu" read as gelu_pytorch_tanh), only attention_bias read, no nullable size, and
#: Gemma 7B's sizes and tied embeddings when absent (its norms, embedding scale and d_ff: _gemma)
GEMMA = register(LLAMA.extend(
    "gemma", fields=_gemma, reads=("attention_bias",), nullable=(),
    defaults={"vocab_size": 256000, "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
              "num_key_value_heads": 16, "head_dim": 256, "tie_word_embeddings": True},
    activation=("hidden_act", {"gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu_tanh"}),
    presets="config.json of google/gemma-2b, google/gemma-7b"))
#: Gemma with sandwich norms, score and logit caps, sliding layers beside full ones, read its activation from
#: hidden_activation, and Gemma 2 2B's sizes
GEMMA2 = register(GEMMA.extend(
    "gemma2", fields=_gemma2, layer_types=_LAYERS, models=_SOFTCAPS, ignored={},
    defaults={**GEMMA.defaults, "hidden_size": 2304, "num_hidden_layers": 26, "num_attention_heads": 8,
              "num_key_value_heads": 4},
    activation=("hidden_activation", _TANH),
    presets="config.json of google/gemma-2-2b, google/gemma-2-9b, google/gemma-2-27b"))
#: Gemma 2 with Gemma 3's per-head QK-norm (1 + weight), its vocabulary and its layer pattern; its
#: attention score cap is known but Gemma3Attention never caps, so a value is refused as ignored
GEMMA3_TEXT = register(GEMMA2.extend(
    "gemma3_text", fields=_gemma3, wrappers=("gemma3",), qk_norm="rmsnorm",
    ignored={"attn_logit_softcapping": None},
    defaults={**GEMMA2.defaults, "vocab_size": 262208}, tp_plan=QK_NORM_GRADS,
    presets="config.json of google/gemma-3-1b-pt, and the text_config of google/gemma-3-4b-pt, "
            "google/gemma-3-12b-pt, google/gemma-3-27b-pt"))
