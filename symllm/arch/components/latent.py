"""DeepSeek's multi-head latent attention (:func:`latent_attention`), its decompressed cache, and DeepSeek
Sparse Attention's lightning indexer (:func:`indexer`: DeepSeek-V3.2, GLM-5)."""
from __future__ import annotations

import dataclasses

import sympy as sp

from symllm.arch.components.base import (ELEMENTWISE, STAT_BYTES, T, Component, Rules, check_switches, linear, matmul,
                                         named)
from symllm.arch.components.gqa import SlidingPairs, query_key_pairs, rope
from symllm.arch.components.norms import rmsnorm
from symllm.arch.layers import LATENT
from symllm.arch.symbols import K_I, b, beta_a, beta_kv, d, d_I, d_hn, d_hr, d_hv, n, n_I, n_h, r_kv, r_q, s, t
from symllm.errors import SymllmError
from symllm.validate import choice


#: the stacks of LlamaForCausalLM keep a GQA cache: a latent attention is none of theirs
_MLA = dict(stacks=(), label="multi-head latent attention (DeepSeek)")
#: its attention core (no stack models it: the latent attention holding it is refused first)
_MLA_CORE = Rules("replicated", lora=(), **_MLA)


def _mla_rules(split: str, ours: str, hf: str, gguf: str, engines: tuple = ()) -> Rules:
    """An MLA projection: its split, DeepSeek's name (``inference/model.py``) and HF's (LoRA targets), its GGUF name
    (gguf-py's DEEPSEEK2 names; ``attn_kv_b``, which llama.cpp's converter stores split in ``attn_k_b`` and
    ``attn_v_b``: :func:`symllm.costs.formats.gguf_tensors`), and the engines that split it otherwise
    (:attr:`Rules.engines`)."""
    return Rules(split, lora=(ours, hf), weight="linear", engines=engines, gguf=gguf, **_MLA)


#: the down-projections (``wq_a``, ``wkv_a``) under Megatron-Core, replicated in DeepSeek's and transformers' models:
#: core_v0.13.0 (c550cf6) models/gpt/gpt_layer_specs.py 144, 146 (Transformer Engine spec) and 260, 262 (local spec)
#: build ``linear_q_down_proj`` and ``linear_kv_down_proj`` as ``column_parallel_linear()``, with ``gather_output=
#: False`` (transformer/multi_latent_attention.py 285-296, 311-322); their outputs, each rank's share of the latent,
#: are all-gathered after them (``gather_from_tensor_model_parallel_region``, 422-423 and 434-436): split "gathered"
DOWN_PROJECTIONS = (("megatron", "gathered"),)


#: the indexer: in no stack's tensors, in no tensor-parallel plan of transformers (replicated)
_DSA = dict(stacks=(), label="DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5)")

#: the indexer's linears' LoRA names, (symllm, HF): PEFT matches ``target_modules`` against the end of every module's
#: name, so ``wq_b``, ``wk`` and ``weights_proj`` adapt transformers' ``DeepseekV32Indexer`` linears (called so in
#: deepseek_v32 and glm_moe_dsa) although transformers runs the indexer under ``torch.no_grad`` (PEFT adds their
#: adapters and counts them trainable, but a backward leaves their gradients None and saves nothing for them:
#: the indexer's ``Rules.no_grad``). ``wq_b`` and ``wk`` are symllm's names of the
#: latent attention's ``q_b_proj`` and of GQA's ``k_proj``, which keep them: symllm spells the indexer's
#: ``index_wq_b`` and ``index_wk`` (``weights_proj`` as DeepSeek-V4's indexer's)
INDEXER_LORA = {"wq_b": ("index_wq_b", "wq_b"), "wk": ("index_wk", "wk"),
                "weights_proj": ("weights_proj", "weights_proj")}


def _dsa_rules(hf: str, weight: str = "linear") -> Rules:
    return Rules("replicated", lora=INDEXER_LORA.get(hf, ()) if weight == "linear" else (), weight=weight, hf=hf,
                 **_DSA)


def sparse_pairs(causal: bool) -> sp.Expr:
    """Query-key pairs per sequence and head that a sparse attention's core computes: each of the ``s`` queries
    attends the top ``K_I`` keys its indexer selects, ``min(K_I, t + s)`` (transformers' ``topk =
    min(index_topk, T)`` over the ``T = t + s`` keys of the pass; DeepSeek's sparse kernels gather those), or,
    ``causal``, ``min(K_I, j)`` for the query at position ``j``: ``P(t + s) - P(t)`` with ``P`` the sliding
    window's pairs at width ``K_I`` (:class:`~symllm.arch.components.gqa.SlidingPairs`).

    >>> sparse_pairs(False).subs({t: 100, s: 1, K_I: 8}), sparse_pairs(True).subs({t: 0, s: 10, K_I: 4})
    (8, 34)
    """
    if causal:
        return SlidingPairs(t + s, K_I) - SlidingPairs(t, K_I)
    return s * sp.Min(t + s, K_I)


def indexer(*, causal: bool = False) -> Component:
    """DeepSeek Sparse Attention's lightning indexer, as transformers' ``DeepseekV32Indexer`` builds it.

    ``wq_b: r_q -> n_I·d_I`` reads the attention's normed query latent; ``wk: d -> d_I`` one key a token,
    through a LayerNorm of ``d_I`` with weight and bias (``k_norm``); ``weights_proj: d -> n_I`` a weight per
    head. RoPE rotates the first ``d_hr`` of each query head and of the key. Each query scores every cached
    key, ``relu(q·k)`` per head, summed with the head weights: ``2·n_I·d_I`` and ``2·n_I`` FLOPs a query-key
    pair over the ``t + s`` keys it holds (transformers' eager scores, a dense rectangle; ``causal``: the pairs
    the mask keeps); the top ``K_I`` become the attention's keys (:func:`sparse_pairs`). The keys are cached,
    ``d_I`` a token and layer (``DynamicIndexedLayer.indexer_keys``, in the cache's dtype ``β_kv``): the
    state cache, in bytes, growing with the context. The top-k selection itself is comparisons, no FLOPs.
    transformers runs it under ``torch.no_grad`` (``@torch.no_grad()`` on ``DeepseekV32Indexer.forward`` and
    ``GlmMoeDsaIndexer.forward``, transformers 5.23), declared once on its rules (:attr:`Rules.no_grad`): a
    training step runs its forward (again under full recomputation) and no backward, and saves nothing for it,
    its LoRA adapters' intermediates neither (PEFT adds the adapters; they get no gradient).

    >>> i = indexer()
    >>> sp.expand(i.total("params"))
    d*d_I + d*n_I + d_I*n_I*r_q + 2*d_I
    >>> i.total("state_cache")
    b*beta_kv*d_I*(s + t)
    >>> i.rules.no_grad, i.gradless() == i.total("flops")
    (True, True)
    """
    check_switches(causal=causal)
    pairs = query_key_pairs(causal)
    rows = b * s  # the tokens of the pass
    return Component(
        "indexer",
        state_cache=beta_kv * b * (t + s) * d_I,
        rules=dataclasses.replace(_dsa_rules("indexer", "none"), no_grad=True),
        children=(
            linear("index_wq_b", r_q, n_I * d_I, doc="self.wq_b = nn.Linear(self.q_lora_rank, self.n_heads * "
                   "self.head_dim, bias=False)", rules=_dsa_rules("wq_b")),
            linear("index_wk", d, d_I, doc="self.wk = nn.Linear(self.hidden_size, self.head_dim, bias=False)",
                   rules=_dsa_rules("wk")),
            Component("index_k_norm", params=2 * d_I,
                      elementwise=(ELEMENTWISE["layernorm"] + ELEMENTWISE["bias"]) * rows * d_I,
                      doc="self.k_norm = nn.LayerNorm(self.head_dim, eps=1e-6)  # weight and bias",
                      rules=_dsa_rules("k_norm", "biased_norm")),
            linear("index_weights", d, n_I, doc="self.weights_proj = nn.Linear(self.hidden_size, self.n_heads, "
                   "bias=False)", rules=_dsa_rules("weights_proj")),
            rope(n_I + 1, d_hr).replace(name="index_rope", rules=Rules("replicated", lora=(), **_DSA)),
            Component("index_scores", flops=(matmul(b * n_I, d_I, 1) + matmul(b, n_I, 1)) * pairs,
                      # per head and pair: the scale and the relu; per pair the mask; the head weights' scale
                      elementwise=(2 * b * n_I + b) * pairs + ELEMENTWISE["scale"] * rows * n_I,
                      doc="index_scores = weights @ relu(q @ k.T * softmax_scale); index_scores.topk(topk)",
                      rules=Rules("replicated", lora=(), **_DSA)),
        ),
        doc="DeepseekV32Indexer (transformers; DeepSeek-V3.2-Exp inference/model.py Indexer)",
    )


def latent_attention(*, queries: str = "q_lora", bias: bool = False, causal: bool = False,
                     sparse: bool = False, shared_topk: bool = False) -> Component:
    """Multi-head latent attention (DeepSeek-V2, V3), as transformers' ``DeepseekV3Attention`` computes it.

    Queries: ``wq_a: d -> r_q``, an RMSNorm of ``r_q``, ``wq_b: r_q -> n_h·(d_hn + d_hr)`` (``queries=
    "q_proj"``: one ``wq: d -> n_h·(d_hn + d_hr)``). Keys and values: ``wkv_a: d -> r_kv + d_hr`` (the latent
    and one RoPE key shared by every head), an RMSNorm of ``r_kv``, ``wkv_b: r_kv -> n_h·(d_hn + d_hv)``
    (the decompression), ``wo: n_h·d_hv -> d``. ``bias`` (HF ``attention_bias``) is on ``wq_a``, ``wkv_a``
    and ``wo``. The cache holds the latent, ``b·(t + s)·(r_kv + d_hr)`` elements a layer (what transformers
    5's ``DynamicCache`` and the inference engines keep; :func:`decompressed_kv_cache` is the cache of a
    plain implementation). FLOPs are transformers': ``wkv_b`` decompresses every cached position on every
    pass (``b·(t + s)`` rows), and ``QKᵀ`` costs ``2·(d_hn + d_hr)``, ``A·V`` ``2·d_hv`` per head and pair.
    ``sparse`` (DeepSeek Sparse Attention; ``queries="q_lora"``) adds the :func:`indexer` and each query
    attends its top ``K_I`` keys (:func:`sparse_pairs`) in place of all of them; ``shared_topk`` (GLM-5's
    ``indexer_types`` ``shared``: ``GlmMoeDsaAttention`` with ``skip_topk``) attends the previous layer's top
    ``K_I`` with no indexer of its own: no indexer parameters, FLOPs or cached keys.

    >>> a = latent_attention()
    >>> sp.expand(a.total("params"))
    d*d_hr + d*d_hv*n_h + d*r_kv + d*r_q + d_hn*n_h*r_kv + d_hn*n_h*r_q + d_hr*n_h*r_q + d_hv*n_h*r_kv + r_kv + r_q
    >>> a.total("kv_cache")
    b*(d_hr + r_kv)*(s + t)
    """
    choice("latent", queries, LATENT[1:])
    check_switches(bias=bias, causal=causal, sparse=sparse, shared_topk=shared_topk)
    if shared_topk and not sparse:
        raise SymllmError("latent: a layer reusing another's top-k (shared_topk) is a sparse attention's (sparse=True)")
    if sparse and queries != "q_lora":
        raise SymllmError("latent: the sparse-attention indexer reads the query latent (queries='q_lora')")
    pairs = sparse_pairs(causal) if sparse else query_key_pairs(causal)
    held = t + s
    d_qk = d_hn + d_hr  # a query/key head: its part without RoPE and its RoPE part
    # the latents' norms act on the replicated latent: replicated, no LoRA
    norm = Rules("replicated", lora=(), weight="norm", **_MLA)
    if queries == "q_lora":
        q = (linear("wq_a", d, r_q, bias, "self.wq_a = Linear(self.dim, self.q_lora_rank)",
                    # in no plan of transformers
                    rules=_mla_rules("replicated", "wq_a", "q_a_proj", "attn_q_a", DOWN_PROJECTIONS)),
             named(rmsnorm("q_a_norm", r_q, doc="self.q_norm = RMSNorm(self.q_lora_rank)", rules=norm), "q_a_layernorm",
                   "attn_q_a_norm"),
             linear("wq_b", r_q, n_h * d_qk, doc="self.wq_b = ColumnParallelLinear(self.q_lora_rank, self.n_heads * "
                    "self.qk_head_dim)", rules=_mla_rules("column", "wq_b", "q_b_proj", "attn_q_b")))
    else:
        q = (linear("wq", d, n_h * d_qk,
                    doc="self.wq = ColumnParallelLinear(self.dim, self.n_heads * self.qk_head_dim)",
                    rules=_mla_rules("column", "wq", "q_proj", "attn_q")),)
    wkv_b = linear("wkv_b", r_kv, n_h * (d_hn + d_hv),
                   doc="self.wkv_b = ColumnParallelLinear(self.kv_lora_rank, self.n_heads * (self.qk_nope_head_dim "
                       "+ self.v_head_dim))", rules=_mla_rules("column", "wkv_b", "kv_b_proj", "attn_kv_b"))
    # transformers decompresses the whole cache (b·(t + s) latents) on every pass, not only the s new ones
    wkv_b = wkv_b.replace(flops=matmul(b * held, r_kv, n_h * (d_hn + d_hv)))
    return Component(
        "attention",
        rules=Rules("replicated", lora=(), hf="self_attn", **_MLA),
        kv_cache=b * held * (r_kv + d_hr),
        # saved for backward (tests/test_mla.py: transformers' DeepseekV3 under saved_tensors_hooks): the normed
        # input of wq_a (or wq) and wkv_a; the normed query latent, wq_b's input; q after RoPE; the normed KV
        # latent, wkv_b's input; the decompressed keys (RoPE key included) and values; the attention output,
        # wo's input (the latents' norms save their own inputs; RoPE saves only its cos/sin tables)
        saved=beta_a * (T * d + (T * r_q if queries == "q_lora" else 0) + T * n_h * d_qk + T * r_kv
                        + T * n_h * (d_qk + d_hv) + T * n_h * d_hv),
        children=(
            *q,
            linear("wkv_a", d, r_kv + d_hr, bias, "self.wkv_a = Linear(self.dim, self.kv_lora_rank + "
                   "self.qk_rope_head_dim)", rules=_mla_rules("replicated", "wkv_a", "kv_a_proj_with_mqa",
                                                                "attn_kv_a_mqa", DOWN_PROJECTIONS)),
            named(rmsnorm("kv_a_norm", r_kv, doc="self.kv_norm = RMSNorm(self.kv_lora_rank)", rules=norm),
                  "kv_a_layernorm",
                  "attn_kv_a_norm"),
            wkv_b,
            linear("wo", n_h * d_hv, d, bias, "self.wo = RowParallelLinear(self.n_heads * self.v_head_dim, self.dim)",
                   rules=_mla_rules("row", "wo", "o_proj", "attn_output")),
            rope(n_h + 1, d_hr),  # the RoPE part of every query head and the one shared key
            *((indexer(causal=causal),) if sparse and not shared_topk else ()),
            Component("scores", flops=matmul(b * n_h, d_qk, 1) * pairs,
                      elementwise=ELEMENTWISE["softmax"] * b * n_h * pairs, saved=STAT_BYTES * b * n_h * s,
                      live=(T * n_h * (2 * d_qk + 2 * d_hv) + sp.ceiling(STAT_BYTES / beta_a) * b * n_h * s,),
                      eager_saved=beta_a * b * n_h * s ** 2,
                      eager_live=(2 * b * n_h * s ** 2, 2 * b * n_h * (s + n)),  # a decode step: t + s at s=1, t=s+n-1
                      doc="scores = torch.einsum('bshd,bthd->bsht', q, k) * self.softmax_scale", rules=_MLA_CORE),
            Component("context", flops=matmul(b * n_h, d_hv, 1) * pairs,
                      doc="x = torch.einsum('bsht,bthd->bshd', scores, v)", rules=_MLA_CORE),
        ),
        doc="MLA(args) (DeepSeek-V3 inference/model.py, attn_impl 'naive'; transformers' DeepseekV3Attention)",
    )


def decompressed_kv_cache() -> sp.Expr:
    """The KV-cache elements one latent-attention layer holds when the keys and values are kept
    decompressed (DeepSeek's ``attn_impl="naive"``, transformers 4's ``DeepseekV3Attention``): ``n_h``
    keys of ``d_hn + d_hr`` and values of ``d_hv`` per position, against the latent's ``r_kv + d_hr``
    (:func:`latent_attention`).

    >>> decompressed_kv_cache().subs({n_h: 128, d_hn: 128, d_hr: 64, d_hv: 128, b: 1, s: 1, t: 0})
    40960
    """
    return b * (t + s) * n_h * (d_hn + d_hr + d_hv)
