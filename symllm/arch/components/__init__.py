"""LLaMA's components as SymPy expressions: one factory each, composed into a block and a model.

A :class:`Component` is an immutable value holding closed-form SymPy expressions for what it owns
(parameters, forward FLOPs, element-wise FLOPs, KV-cache elements) and its children. Totals add the
children up and multiply by ``repeat`` (the block repeats ``L`` times).

Conventions, stated once (docs/conventions.md):

* FLOPs count a multiply-add as 2; :func:`matmul` is the only place that says so.
* FLOP expressions are for one forward pass over ``b`` sequences of ``s`` new tokens each, with
  ``t`` tokens per sequence already in the KV cache (prefill: ``t = 0``; a decode step: ``s = 1``).
* The attention core (``QKᵀ`` and ``A·V``) counts every score of the ``s × (t + s)`` rectangle when
  ``causal=False`` ("dense", what eager/SDPA kernels and torch's ``FlopCounterMode`` count), or only
  the unmasked pairs ``s·t + s(s+1)/2`` when ``causal=True``. Never silently halved. A sliding window
  or attention chunk of ``W`` limits both to what transformers computes and its mask keeps (:func:`_pairs`).
* Element-wise FLOPs (norms, SiLU, gating, RoPE, softmax, residual adds) live in their own
  ``elementwise`` bucket, with the per-element counts in :data:`ELEMENTWISE`.

>>> from symllm.arch.symbols import d, d_h, n_h, n_kv
>>> attention().total("params")
2*d*d_h*n_h + 2*d*d_h*n_kv
>>> model().breakdown()["block/feed_forward/w2"]
L*d*d_ff

Modules, by part: :mod:`~symllm.arch.components.base` (``Component``, ``Rules``, ``matmul``, ``linear``,
``ELEMENTWISE``), :mod:`~symllm.arch.components.norms`, :mod:`~symllm.arch.components.embeddings`
(embedding, lm_head), :mod:`~symllm.arch.components.gqa` (attention, RoPE, sinks, windows),
:mod:`~symllm.arch.components.latent` (DeepSeek's latent attention), :mod:`~symllm.arch.components.mlp`
(the feed-forward), :mod:`~symllm.arch.components.mixture` (router, experts, MoE) and
:mod:`~symllm.arch.components.assembly` (block, model, mtp, component lookup, the LoRA vocabulary); this
package re-exports them.
"""
from __future__ import annotations

from symllm.arch.components.assembly import (EVERY_FUSED, EVERY_LATENT_PART, EVERY_PART, MIXER_FACTORIES, block,
                                             component, group_counts, lora_names, mixer, model, mtp)
from symllm.arch.components.base import (ELEMENTWISE, INDEX_BYTES, LLAMA, QUANTITIES, SPLITS, STAT_BYTES, WEIGHTS,
                                         Component, Rules, collected, linear, matmul)
from symllm.arch.components.embeddings import embedding, lm_head
from symllm.arch.components.gqa import (ChunkedPairs, SlidingPairs, WindowPairs, attention, expand_windows, rope,
                                        sinks)
from symllm.arch.components.latent import decompressed_kv_cache, latent_attention
from symllm.arch.components.mixture import experts, moe, router
from symllm.arch.components.mlp import feed_forward, meta_hidden_dim, swiglu
from symllm.arch.components.norms import qk_norms, rmsnorm
from symllm.arch.layers import (ACTIVATIONS, COMPONENTS, FFNS, HEADS, LATENT, MIXERS, NORMS, ROPE_PARTS, WINDOWS,
                                LayerKind, Structure, Variant)

__all__ = [
    "Component", "QUANTITIES", "ELEMENTWISE", "STAT_BYTES", "INDEX_BYTES", "matmul", "linear", "embedding",
    "attention", "latent_attention", "LATENT", "feed_forward", "swiglu", "rmsnorm", "qk_norms", "rope", "lm_head",
    "block", "model", "meta_hidden_dim",
    "router", "experts", "moe", "sinks", "FFNS", "WINDOWS", "LayerKind", "Structure", "group_counts", "SlidingPairs",
    "ChunkedPairs", "WindowPairs", "expand_windows",
    "COMPONENTS", "component", "collected", "decompressed_kv_cache", "mtp", "Rules", "SPLITS", "WEIGHTS", "lora_names",
    "Variant", "NORMS", "ACTIVATIONS", "MIXERS", "HEADS", "ROPE_PARTS", "MIXER_FACTORIES", "mixer",
]
