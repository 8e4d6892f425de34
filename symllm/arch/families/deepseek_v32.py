"""The ``deepseek_v32`` and ``glm_moe_dsa`` families: transformers' ``DeepseekV32ForCausalLM`` (DeepSeek-V3.2-Exp,
DeepSeek-V3.2) and ``GlmMoeDsaForCausalLM`` (GLM-5), DeepSeek-V3 with DeepSeek Sparse Attention.

Each layer's latent attention (always with a query latent: ``q_lora_rank`` is an integer in both classes) has a
lightning indexer (:func:`symllm.arch.components.latent.indexer`) of ``index_n_heads`` heads of
``index_head_dim``, whose top ``index_topk`` keys each query attends; everything else is DeepSeek-V3's
(:mod:`symllm.arch.families.deepseek`: MLA, the first ``first_k_dense_replace`` layers dense, routed and shared
experts). ``layer_types`` may only say ``indexed_attention`` (what the classes derive); ``mlp_layer_types``,
when given, must be the pattern ``first_k_dense_replace`` derives (another is refused). GLM-5's
``indexer_types`` (or ``index_topk_pattern``, ``index_topk_freq`` with ``index_skip_topk_offset``, read as
``GlmMoeDsaConfig`` derives them) say which layers run their own indexer (``full``) and which reuse the
previous layer's top-k (``shared``: ``GlmMoeDsaAttention.skip_topk``, no indexer of its own, so no indexer
parameters and no cached indexer keys: ``LayerKind.shared_topk``); the first layer must be ``full``
(transformers raises without a previous top-k).

>>> f = _fields({"first_k_dense_replace": 1, "index_topk": 4}, 2, DEEPSEEK_V32)
>>> f["index_heads"], f["index_head_dim"], f["index_topk"], f["q_lora_rank"]
(64, 128, 4, 1536)
>>> _indexer_types({"index_topk_freq": 4}, 6)
['full', 'full', 'shared', 'shared', 'shared', 'full']
"""
from symllm.arch.families.deepseek import DEEPSEEK_V3, mla_fields
from symllm.arch.families.hf import Family, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["DEEPSEEK_V32", "GLM_MOE_DSA"]


def _indexer_types(raw: dict, n_layers: int) -> list:
    """GLM-5's per-layer indexer modes, as ``GlmMoeDsaConfig.__post_init__`` derives them."""
    types = raw.get("indexer_types")
    if types is not None:
        return types
    pattern = raw.get("index_topk_pattern")
    if pattern is not None:
        if isinstance(pattern, str) and set(pattern) <= {"F", "S"}:
            return [{"F": "full", "S": "shared"}[c] for c in pattern]
        return pattern if isinstance(pattern, list) else [pattern]
    freq = max(integer(raw, "index_topk_freq", 1, minimum=0), 1)
    offset = integer(raw, "index_skip_topk_offset", 2, minimum=0)
    return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n_layers)]


def _fields(raw: dict, n_layers: int, family: Family) -> dict:
    out = mla_fields(raw, n_layers, family)
    if out["q_lora_rank"] is None:
        raise SymllmError(f"q_lora_rank: null ({family.model_type}'s is an integer: the indexer reads the query "
                          "latent)")
    mlp = raw.get("mlp_layer_types")
    if mlp is not None:
        first = integer(raw, "first_k_dense_replace", family.defaults["first_k_dense_replace"], minimum=0)
        derived = ["dense"] * min(first, n_layers) + ["sparse"] * max(n_layers - first, 0)
        if mlp != derived:
            raise SymllmError(f"mlp_layer_types: {short(mlp, 30)} is not the pattern first_k_dense_replace {first} "
                              "makes (another is not modelled)")
    if family.model_type == "glm_moe_dsa":
        types = _indexer_types(raw, n_layers)
        if not isinstance(types, list) or len(types) != n_layers or any(x not in ("full", "shared") for x in types):
            raise SymllmError(f"indexer_types: {short(types, 30)} is not one of full/shared per layer")
        if types[0] == "shared":
            raise SymllmError("indexer_types: the first layer is 'shared' (transformers needs a previous layer's "
                              "top-k to reuse)")
        if "shared" in types:  # GlmMoeDsaAttention: self.indexer = None if skip_topk
            kinds = [kind for kind, count in out.get("layers", ((LayerKind(), n_layers),)) for _ in range(count)]
            out.update(groups([LayerKind(**{**kind.__dict__, "shared_topk": t == "shared"})
                               for kind, t in zip(kinds, types)]))
        if out.get("n_mtp_layers"):
            out["mtp_kinds"] = _glm_mtp_kinds(out, n_layers)
    defaults = family.defaults
    return {**out, "index_heads": integer(raw, "index_n_heads", defaults["index_n_heads"]),
            "index_head_dim": integer(raw, "index_head_dim", defaults["index_head_dim"]),
            "index_topk": integer(raw, "index_topk", defaults["index_topk"])}


def _glm_mtp_kinds(out: dict, n_layers: int) -> tuple:
    """GLM-5's multi-token-prediction layer: the kind of the model's last layer, with its own indexer (SGLang's
    nextn layer never reuses a top-k), its embedding and output head the model's: the published checkpoint stores
    model.layers.{L}'s enorm, hnorm, eh_proj, decoder layer and shared_head.norm, not DeepSeek-V3's copies of
    the embedding and head (vllm-ascend's GLM-5 guide writes them into the BF16 checkpoint for its loader:
    model.layers.78.embed_tokens.weight and shared_head.head.weight from model.embed_tokens and lm_head)."""
    layers = out.get("layers", ((LayerKind(), n_layers),))
    kind = layers[-1][0]
    kind = LayerKind(**{**kind.__dict__, "shared_topk": False})
    if kind not in {k for k, _ in layers}:
        raise SymllmError("num_nextn_predict_layers: the MTP layer (the last layer's kind, with its own indexer) "
                          "is of a kind no layer of the model has (not modelled)")
    return (kind,)


def _v32(raw: dict, n_layers: int) -> dict:
    return _fields(raw, n_layers, DEEPSEEK_V32)


def _glm(raw: dict, n_layers: int) -> dict:
    return _fields(raw, n_layers, GLM_MOE_DSA)


#: DeepseekV32Config's defaults: DeepSeek-V3's sizes, no multi-token-prediction key (the class has none), the indexer's
_V32 = {**DEEPSEEK_V3.defaults, "num_nextn_predict_layers": 0, "index_n_heads": 64, "index_head_dim": 128,
        "index_topk": 2048}

DEEPSEEK_V32 = register(DEEPSEEK_V3.extend(
    "deepseek_v32", fields=_v32, defaults=_V32, layer_types=("indexed_attention",), aliases=(), typed=(), outer={},
    presets="config.json of deepseek-ai/DeepSeek-V3.2 (its FP8 quantization_config left out)"))
GLM_MOE_DSA = register(DEEPSEEK_V32.extend(
    "glm_moe_dsa", fields=_glm,
    defaults={**_V32, "vocab_size": 154880, "hidden_size": 6144, "intermediate_size": 12288,
              "num_hidden_layers": 78, "num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 2048,
              "v_head_dim": 256, "qk_nope_head_dim": 192, "index_n_heads": 32},
    presets="config.json of zai-org/GLM-5"))
