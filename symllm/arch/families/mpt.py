"""The ``mpt`` family: transformers' ``MptForCausalLM`` (MosaicML's MPT-7B, MPT-30B).

Command-R's LayerNorm (the mean subtracted, a weight and no bias: ``MptBlock`` sets ``norm_1.bias``,
``norm_2.bias`` and ``norm_f.bias`` to None) in a pre-norm block, with four changes: no RoPE, and ALiBi
in its place (``build_mpt_alibi_tensor``: each head's slope times the query-key distance added to every score;
no parameter, ``alibi``); ``q``, ``k`` and ``v`` from one bias-free ``Wqkv`` of ``3·d`` outputs (multi-head:
``n_kv = n_h``, ``d_h = d / n_h``; ``fused``); an ungated MLP ``down_proj(GELU(up_proj(x)))`` of ``4·d``, the
exact (erf) GELU (``MptMLP``; ``activation="gelu"``); and the lm_head tied to the embeddings unless
``tie_word_embeddings`` is false.

The config keys are MosaicML's, which ``MptConfig.attribute_map`` gives transformers' names: ``d_model``
(hidden_size), ``n_heads`` (num_attention_heads), ``n_layers`` (num_hidden_layers); ``max_seq_len`` is the
window the model was trained for, ``layer_norm_epsilon`` the norms' epsilon. What transformers' class ignores
is refused unless it states what the class builds: ``expansion_ratio`` other than 4 (``MptMLP`` is
``4 * hidden_size`` whatever it says), ``no_bias`` false (no linear has a bias), ``logit_scale``,
``num_key_value_heads``, ``head_dim``, ``intermediate_size``, a ``norm_type`` that is not a LayerNorm, an
``ffn_config`` other than MosaicML's ``mptmlp``. ``learned_pos_emb`` is read as a flag and builds nothing
(neither transformers' class nor MosaicML's own beside ALiBi has a position embedding). Each key of
``attn_config`` is read or refused in one line naming it (:func:`_attention`).

>>> f = _fields({"hidden_size": 64, "attn_config": {"alibi": True, "attn_impl": "flash"}}, 2)
>>> f["hidden_dim"], f["alibi"], f["layernorm"], f["fused"], [(k.rotary, n) for k, n in f["layers"]]
(256, True, True, True, [(False, 2)])
>>> (_fields({"attn_config": {"clip_qkv": 8.0}}, 2)["clip_qkv"],
...  _fields({"attn_config": {"clip_qkv": 0.0}}, 2)["clip_qkv"])
(8.0, None)
"""
from symllm.arch.families.cohere import COHERE
from symllm.arch.families.hf import flag, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["MPT"]

#: MptAttentionConfig's keys -> its default; a key not here is refused (a later llm-foundry key such as
#: kv_n_heads or rope would say a model transformers' class does not build)
_ATTENTION = {"attn_type": "multihead_attention", "attn_pdrop": 0, "attn_impl": "torch", "clip_qkv": None,
              "softmax_scale": None, "prefix_lm": False, "qk_ln": False, "attn_uses_sequence_id": False,
              "alibi": True, "alibi_bias_max": 8}
#: what transformers 5's save_pretrained writes into attn_config beside them (PreTrainedConfig's own attributes of
#: the sub-config, none of which MptAttention reads): accepted, counting nothing
_SUBCONFIG = {"_name_or_path", "architectures", "chunk_size_feed_forward", "dtype", "torch_dtype", "id2label",
              "label2id", "is_encoder_decoder", "model_type", "output_attentions", "output_hidden_states",
              "problem_type", "return_dict", "transformers_version", "tie_word_embeddings"}
#: the flags MptAttention never acts on -> the value that states what it builds
_IGNORED_FLAGS = {"prefix_lm": (False, "it is always causal"), "qk_ln": (False, "it builds no QK LayerNorm"),
                  "attn_uses_sequence_id": (False, "it masks no sequence ids"),
                  "alibi": (True, "it always adds ALiBi")}


def _number(key: str, value, nullable: bool) -> None:
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SymllmError(f"{key}: expected a non-negative number{' or null' if nullable else ''}, got {short(value)}")


def _attention(raw: dict) -> None:
    """``attn_config`` read as MptAttentionConfig reads it, each key checked: ``attn_impl`` (torch, flash or
    triton: a kernel, which transformers' eager attention does not act on and symllm's workload chooses),
    ``attn_pdrop``, ``softmax_scale`` and ``alibi_bias_max`` (no count depends on them) accepted; ``clip_qkv``
    (``MptAttention``: ``mixed_qkv.clamp(min=-clip_qkv, max=clip_qkv)`` when it is truthy: no parameter, no matmul,
    two compares an element of Wqkv's output) read; ``attn_type`` other than multi-head and the flags
    MptAttention ignores (``prefix_lm``, ``qk_ln``, ``attn_uses_sequence_id``; ``alibi`` false) refused."""
    attn = raw.get("attn_config")
    if attn is None:
        return
    if not isinstance(attn, dict):
        raise SymllmError(f"attn_config: expected an object of MptAttentionConfig's keys, got {short(attn)}")
    for key, value in attn.items():
        name = f"attn_config.{key}"
        if key in _SUBCONFIG:
            continue
        if key not in _ATTENTION:
            raise SymllmError(f"{name}: not a key of transformers' MptAttentionConfig (not modelled by symllm)")
        if key == "attn_type" and value != "multihead_attention":
            raise SymllmError(f"{name}: {short(value, 24)} is ignored by transformers' mpt (its MptAttention is "
                              "multi-head; remove it)")
        if key == "attn_impl" and value not in ("torch", "flash", "triton"):
            raise SymllmError(f"{name}: {short(value, 24)} is not one of torch, flash, triton")
        if key in ("attn_pdrop", "softmax_scale"):
            _number(name, value, nullable=key == "softmax_scale")
        if key == "alibi_bias_max":
            integer(attn, key, minimum=1)
        if key == "clip_qkv":  # MptAttentionConfig's field is a float: an int is refused there, as here
            if value is not None and type(value) is not float:
                raise SymllmError(f"{name}: {short(value)} is not a float (MptAttentionConfig refuses it)")
            _number(name, value, nullable=True)
        if key in _IGNORED_FLAGS:
            want, why = _IGNORED_FLAGS[key]
            if flag(attn, key, want) != want:
                raise SymllmError(f"{name}: {short(value)} is ignored by transformers' mpt ({why}; remove it)")


def _fields(raw: dict, n_layers: int) -> dict:
    _attention(raw)
    d = integer(raw, "hidden_size", 2048)  # d_model, through the attribute map
    flag(raw, "learned_pos_emb", True)  # builds nothing beside ALiBi (module docstring)
    if raw.get("norm_type", "low_precision_layernorm") not in ("low_precision_layernorm", "layernorm"):
        raise SymllmError(f"norm_type: {short(raw['norm_type'], 24)} is ignored by transformers' mpt (its norms are "
                          "LayerNorms without a bias; remove it)")
    ffn = raw.get("ffn_config")
    if ffn is not None and ffn != {"ffn_type": "mptmlp"}:
        raise SymllmError(f"ffn_config: {short(ffn)} is ignored by transformers' mpt (its MLP is up_proj of 4 x "
                          "d_model, GELU, down_proj; remove it)")
    clip = (raw.get("attn_config") or {}).get("clip_qkv") or None  # 0: MptAttention clamps nothing
    eps = raw.get("layer_norm_epsilon", 1e-5)
    _number("layer_norm_epsilon", eps, nullable=False)
    return {"hidden_dim": 4 * d, "norms": "pre", "layernorm": True, "logit_scale": None, "qk_norm": None,
            "fused": True, "activation": "gelu", "alibi": True, "norm_eps": eps, "clip_qkv": clip,
            "max_positions": integer(raw, "max_seq_len", 2048),
            **groups([LayerKind(rotary=False)] * n_layers)}


#: Command-R's weight-only LayerNorm in LLaMA's pre-norm block; MosaicML's key names (transformers' attribute_map)
MPT = register(COHERE.extend(
    "mpt", fields=_fields, reads=(), nullable=("num_key_value_heads", "head_dim"), models=(),
    attribute_map={"hidden_size": "d_model", "num_attention_heads": "n_heads", "num_hidden_layers": "n_layers"},
    defaults={"vocab_size": 50368, "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
              "tie_word_embeddings": True},
    ignored={"expansion_ratio": 4, "no_bias": True, "logit_scale": None, "num_key_value_heads": None,
             "head_dim": None, "intermediate_size": None},
    activation=("hidden_act", {"gelu": "gelu"}),
    names={"max_positions": "max_seq_len", "norm_eps": "layer_norm_epsilon"},
    # MptConfig has no base_model_tp_plan and MptForCausalLM no _tp_plan (transformers 5.23): a tp_size above 1
    # is refused there ("has no `tp_plan`", distributed/mixin.py)
    tp_plan=None,
    presets="config.json of mosaicml/mpt-7b"))
