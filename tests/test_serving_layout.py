"""Serving's KV bytes a token are what the laid-out model's rank 0 holds (``memory_per_gpu``'s ``kv_cache``), one
rule for every engine's layout: under ``--engine hf`` a sublayer transformers' plan keeps whole caches every head
on every rank (gpt-oss's attention, Nemotron-H's attention layers; DeepSeek-V3's latent is whole under any
engine), and each layer's own key/value heads split over the ranks under the default (vLLM's: MiMo-V2-Flash's
sliding layers hold twice the full layers' heads).

The hand counts read each preset's config.json (``symllm/presets/*.json``, the published files) and write the
bytes out: 2 (keys and values) x the attention layers x the key/value heads rank 0 holds x the head width x 2
(bf16); vLLM's split: ``num_kv_heads = max(1, total_num_kv_heads // tp)`` in each layer's ``QKVParallelLinear``
(vllm/model_executor/layers/linear.py), transformers' plan for the families: tests/test_hf_plans.py.
"""
from __future__ import annotations

import warnings

import pytest

from symllm.costs import phases, serving

SEQ = 64  # under gpt-oss's sliding window (128): every layer holds every token


def _per_token(name: str, engine, tp: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return serving.capacity(name, gpu="h200", tp=tp, seq=SEQ, engine=engine)["kv_bytes_per_token"]


@pytest.mark.parametrize("name", ["gpt-oss-20b", "nemotron-h-8b", "deepseek-v3"])
@pytest.mark.parametrize("engine", [None, "hf"])
def test_serve_pages_what_count_holds(name, engine):
    """count's per-GPU KV cache of one sequence of s tokens is serve's bytes a token x s, in either layout."""
    w = phases.workload(name, batch=1, seq=SEQ, tp=2, engine=engine)
    assert w["memory_per_gpu"]["kv_cache"] == _per_token(name, engine, 2) * SEQ


@pytest.mark.parametrize("name, engine, tp, expected", [
    # gpt-oss-20b: num_hidden_layers 24, num_key_value_heads 8, head_dim 64; hf's plan keeps attention whole
    ("gpt-oss-20b", "hf", 2, 2 * 24 * 8 * 64 * 2),
    ("gpt-oss-20b", None, 2, 2 * 24 * (8 // 2) * 64 * 2),
    # nemotron-h-8b: 4 attention layers ('*' in hybrid_override_pattern), 8 KV heads of attention_head_dim 128
    ("nemotron-h-8b", "hf", 4, 2 * 4 * 8 * 128 * 2),
    ("nemotron-h-8b", None, 4, 2 * 4 * (8 // 4) * 128 * 2),
    # deepseek-v3: 61 layers, one latent of kv_lora_rank 512 + qk_rope_head_dim 64 a token, whole on every rank
    ("deepseek-v3", "hf", 2, 61 * (512 + 64) * 2),
    ("deepseek-v3", None, 2, 61 * (512 + 64) * 2),
    # mimo-v2-flash at tp 8: 9 full layers of 4 KV heads (replicated, one a rank) and 39 sliding of 8 (one a
    # rank): 48 heads of keys head_dim 192 and values v_head_dim 128
    ("mimo-v2-flash", None, 8, 48 * (192 + 128) * 2),
])
def test_kv_bytes_per_token_by_hand(name, engine, tp, expected):
    assert _per_token(name, engine, tp) == expected
