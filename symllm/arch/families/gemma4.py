"""The ``gemma4_text`` family: transformers' ``Gemma4ForCausalLM`` (and ``gemma4``, the multimodal wrapper,
whose ``text_config`` is counted: its vision and audio towers are not).

Gemma 3's block (sandwich norms, GeGLU, embeddings times ``√d``, an RMSNorm of width ``head_dim`` on every
query and key head, sliding layers beside full ones, tied embeddings) with what Gemma 4 changes:

- its RMSNorms scale by ``weight`` (``Gemma4RMSNorm``), not ``1 + weight``; the values get a weightless
  RMSNorm (``v_norm``, ``Variant.value_norm``: element-wise work, no parameter), each block's output is
  multiplied by its ``layer_scalar`` buffer (``Variant.layer_scalar``), and the scores are scaled by 1;
- the full-attention layers have their own head shape (``LayerKind.heads`` "own"): width ``global_head_dim``
  (default 512) and, with ``attention_k_eq_v``, ``num_global_key_value_heads`` key/value heads, as
  ``Gemma4TextConfig`` writes them into ``per_layer_config`` (read as it is where a config states it: only
  ``head_dim`` and ``num_key_value_heads`` overrides, one shape for every overridden layer);
- with ``attention_k_eq_v`` the full layers have no ``v_proj``: their values are ``k_proj``'s output
  (``LayerKind.k_eq_v``; the cache still holds keys and values);
- ``layer_types`` (default: every 6th layer full), the last layer always full (transformers forces it);
  the full layers' proportional RoPE changes no count;
- the last ``num_kv_shared_layers`` layers reuse the keys and values of the last earlier layer of their type
  (``LayerKind.kv_shared``): transformers builds no ``k_proj``, ``v_proj``, ``k_norm``, ``v_norm`` in them
  and its cache holds nothing for them (a ``DummyLayer``); with ``use_double_wide_mlp`` their MLP is
  ``2 × intermediate_size`` wide (``LayerKind.wide_ffn``). FLOPs count every position through them, as a
  forward does (``generate``'s prefill runs only the kept positions through them:
  ``Gemma4TextModel._maybe_slice_kv_shared_inputs``, not modelled).

- per-layer embeddings (``hidden_size_per_layer_input``, on by default, 256; 0 or null: none; E2B/E4B):
  ``Structure.per_layer_input``, a table of ``vocab_size_per_layer_input`` rows of ``num_hidden_layers ×
  hidden_size_per_layer_input`` and its projection, norm, and in every layer a gate, a projection and a norm
  (:func:`symllm.arch.components.embeddings.per_layer_embedding`, ``per_layer_input``).

- the MoE block (``enable_moe_block``: 26B-A4B), in every layer beside the dense MLP (which keeps
  ``intermediate_size``, ``d_fd``): Gemma 4's router (``Gemma4TextRouter``: a weightless norm of the residual,
  ``scale`` of ``d``, ``proj`` of ``d × num_experts``, softmax, ``top_k_experts`` renormalised, times
  ``per_expert_scale``), ``num_experts`` GeGLU experts of ``moe_intermediate_size`` (``d_ff``; fused
  ``gate_up_proj`` and ``down_proj``), ``post_feedforward_layernorm_1`` on the MLP's output,
  ``pre_feedforward_layernorm_2`` and ``post_feedforward_layernorm_2`` around the experts, the two outputs
  summed (``Structure.moe_beside_mlp``; :func:`symllm.arch.components.mixture.scaled_router`).

Not modelled, refused in one line naming the key: bidirectional attention over every token
(``use_bidirectional_attention: "all"``; ``"vision"`` leaves text tokens causal).

>>> f = _fields({"hidden_size_per_layer_input": 0, "attention_k_eq_v": True, "num_global_key_value_heads": 1,
...              "global_head_dim": 64}, 7)
>>> [(k.window, k.heads, k.k_eq_v, n) for k, n in f["layers"]], (f["alt_kv_heads"], f["alt_head_dim"])
([('sliding', 'model', False, 5), (None, 'own', True, 2)], (1, 64))
"""
from symllm.arch.families.gemma import GEMMA3_TEXT, softcap
from symllm.arch.families.hf import QK_NORM_GRADS, flag, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["GEMMA4_TEXT"]

#: Gemma4TextConfig's defaults for the sizes every family reads
_DEFAULTS = {"vocab_size": 262144, "hidden_size": 2304, "num_hidden_layers": 30, "num_attention_heads": 8,
             "num_key_value_heads": 4, "head_dim": 256, "tie_word_embeddings": True}
#: the per-layer overrides Gemma4TextAttention reads from per_layer_config (its MLP and q_proj read the
#: model's config)
_OVERRIDES = ("head_dim", "num_key_value_heads")


def _refuse_unmodelled(raw: dict) -> None:
    bidirectional = raw.get("use_bidirectional_attention")
    if bidirectional not in (None, "vision"):
        raise SymllmError(f"use_bidirectional_attention: {short(bidirectional, 20)} (no causal mask) is not "
                          "modelled")
    if raw.get("hidden_act") not in (None, "gelu_pytorch_tanh"):
        raise SymllmError(f"hidden_act: {short(raw['hidden_act'], 20)} is ignored by gemma4_text, which reads "
                          "hidden_activation (remove it)")


def _overrides(raw: dict, types: list, k_eq_v: bool) -> dict:
    """Layer index -> its head_dim / num_key_value_heads overrides: per_layer_config as the config states it,
    else what Gemma4TextConfig derives (every full layer: global_head_dim, and num_global_key_value_heads where
    attention_k_eq_v is set and it is given)."""
    n_layers = len(types)
    given = raw.get("per_layer_config")
    if given is None:
        head = integer(raw, "global_head_dim", 512)
        kv = integer(raw, "num_global_key_value_heads", None, nullable=True)
        shape = {"head_dim": head, **({"num_key_value_heads": kv} if k_eq_v and kv is not None else {})}
        return {i: shape for i, kind in enumerate(types) if kind == "full_attention"}
    if not isinstance(given, dict):
        raise SymllmError(f"per_layer_config: expected an object of layer index -> overrides, got {short(given)}")
    out = {}
    for key, value in given.items():
        index = int(key) if isinstance(key, str) and key.isdigit() else key
        if type(index) is not int or not 0 <= index < n_layers:
            raise SymllmError(f"per_layer_config: {short(key)} is not a layer index (0 to {n_layers - 1})")
        if not isinstance(value, dict) or set(value) - set(_OVERRIDES):
            raise SymllmError(f"per_layer_config: {short(value)} is not modelled (only head overrides)")
        out[index] = {k: integer(value, k) for k in value}
    return out


def _first_shared(raw: dict, types: list) -> int:
    """The index of the first layer that reuses an earlier layer's keys and values (``num_kv_shared_layers``
    from the end; ``len(types)``: none), as ``Gemma4TextConfig.kv_sharing_modes`` reads it: each kind of layer
    among the sharing ones needs one before them that makes its keys and values.

    >>> _first_shared({"num_kv_shared_layers": 2}, ["sliding_attention", "full_attention"] * 2)
    2
    """
    shared = integer(raw, "num_kv_shared_layers", 0, minimum=0)
    first = len(types) - shared
    missing = sorted(set(types) - set(types[:max(first, 0)]))
    if shared and missing:
        raise SymllmError(f"num_kv_shared_layers: {shared} leaves no earlier {missing[0]} layer to share from")
    return first


def _fields(raw: dict, n_layers: int) -> dict:
    _refuse_unmodelled(raw)
    k_eq_v = flag(raw, "attention_k_eq_v", False)
    types = raw.get("layer_types")  # names and length checked with every family's (hf._check)
    types = list(types) if types is not None else [
        "sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n_layers)]
    types[-1] = "full_attention"  # Gemma4TextConfig forces the last layer full
    first_shared = _first_shared(raw, types)
    wide = flag(raw, "use_double_wide_mlp", False)  # Gemma4TextMLP: only in the layers sharing keys and values
    heads, kv_heads = (integer(raw, key, _DEFAULTS[key]) for key in ("num_attention_heads", "num_key_value_heads"))
    head_dim = integer(raw, "head_dim", _DEFAULTS["head_dim"])
    model_shape = (kv_heads, head_dim)
    shapes = {i: (o.get("num_key_value_heads", kv_heads), o.get("head_dim", head_dim))
              for i, o in _overrides(raw, types, k_eq_v).items()}
    own = {shape for shape in shapes.values() if shape != model_shape}
    if len(own) > 1:
        raise SymllmError(f"per_layer_config: {len(own)} head shapes besides the model's; symllm models one")
    # a layer sharing keys and values has no k_proj nor v_proj: k_eq_v changes nothing there
    moe = flag(raw, "enable_moe_block", False)  # Gemma4TextDecoderLayer: router and experts in every layer
    kinds = [LayerKind(ffn="moe" if moe else "dense", window="sliding" if kind == "sliding_attention" else None,
                       heads="own" if shapes.get(i, model_shape) != model_shape else "model",
                       k_eq_v=k_eq_v and kind != "sliding_attention" and i < first_shared,
                       kv_shared=i >= first_shared, wide_ffn=wide and i >= first_shared)
             for i, kind in enumerate(types)]
    out = {"hidden_dim": integer(raw, "intermediate_size", 9216), "norms": "sandwich", "embed_scale": True,
           "norm_offset": False, "qk_norm": "rmsnorm", "attn_softcap": None, "value_norm": True, "layer_scalar": True,
           "final_softcap": softcap(raw, "final_logit_softcapping", None), **groups(kinds)}
    if moe:  # the dense MLP keeps intermediate_size; the experts are moe_intermediate_size wide
        out.update(n_experts=integer(raw, "num_experts"), experts_per_token=integer(raw, "top_k_experts"),
                   hidden_dim=integer(raw, "moe_intermediate_size"), dense_hidden_dim=out["hidden_dim"],
                   moe_beside_mlp=True, fused_experts="out_in")  # Gemma4TextExperts: [E, 2·d_ff, d], [E, d, d_ff]
    per_layer = integer(raw, "hidden_size_per_layer_input", 256, nullable=True, minimum=0)
    if per_layer:  # 0 or null: none (Gemma4TextModel builds them where it is truthy)
        out.update(per_layer_dim=per_layer, per_layer_vocab=integer(raw, "vocab_size_per_layer_input", 262144))
    window = integer(raw, "sliding_window", 512)
    if "sliding_attention" in types:
        out["sliding_window"] = window
    if own:
        (alt_kv, alt_dim), = own
        out.update(alt_heads=heads, alt_kv_heads=alt_kv, alt_head_dim=alt_dim)
    return out


#: Gemma 3's block with Gemma 4's norms, its full layers' own head shape and keys as values
GEMMA4_TEXT = register(GEMMA3_TEXT.extend(
    "gemma4_text", fields=_fields, wrappers=("gemma4",), defaults=_DEFAULTS,
    models=(*GEMMA3_TEXT.models, "num_experts", "moe_intermediate_size"),
    names={**GEMMA3_TEXT.names, "n_experts": "num_experts", "experts_per_token": "top_k_experts"},
    # Gemma4TextRouter's softmax(..., dtype=torch.float32), its top-k weights times per_expert_scale: fp32
    routing_weights="fp32", tp_plan=QK_NORM_GRADS,
    presets="the text_config of google/gemma-4-26B-A4B-it's config.json, and of nvidia/Gemma-4-31B-IT-NVFP4's "
            "(NVIDIA's quantized google/gemma-4-31B-it, whose own config.json was not found whole)"))
