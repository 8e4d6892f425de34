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

from .conftest import requires

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


def test_gpt_oss_experts_follow_hf_plan():
    """transformers 5.23's plan for gpt-oss names no expert (GptOssConfig has no base_model_tp_plan; its
    base_model_ep_plan shards whole experts over expert-parallel ranks): under ``--engine hf`` each routed expert is
    whole by default, 32 of them on a rank at ``--tp 2``, and a split one given is refused; the default engine
    splits each expert's width (2880) over the ranks."""
    from symllm.costs.workloads import Workload
    from symllm.errors import SymllmError
    hf = phases.workload("gpt-oss-20b", tp=2, engine="hf")
    assert hf["workload"]["expert_tp"] == "whole"
    assert phases.workload("gpt-oss-20b", tp=2)["workload"]["expert_tp"] == "split"
    # rank 0's parameters by hand from config.json (hidden 2880, 24 layers, 64 query heads and 8 KV heads of 64,
    # 32 experts of intermediate 2880, vocabulary 201088, untied): everything whole but the lm_head's rows, split
    d, V, L, E, f = 2880, 201088, 24, 32, 2880
    attention = d * 4096 + 4096 + 2 * (d * 512 + 512) + 4096 * d + d + 64  # q, k, v, o with biases; the sinks
    layer = attention + 2 * d + d * E + E + E * (d * 2 * f + 2 * f + f * d + d)  # norms, router, experts
    assert hf["params"]["per_gpu"] == V * d + L * layer + d + V // 2 * d
    assert phases.workload("gpt-oss-20b", tp=2, engine="hf", expert_tp="whole")["params"] == hf["params"]
    refused = r"^expert_tp: split \(--engine hf: transformers' plan for gpt-oss-20b keeps its routed experts whole\)$"
    with pytest.raises(SymllmError, match=refused):
        phases.workload("gpt-oss-20b", Workload(tp=2, engine="hf", expert_tp="split"))


@pytest.mark.parametrize("config_class", ["Qwen3NextConfig", "Qwen3_5TextConfig", "Qwen3_5MoeTextConfig"])
def test_deltanet_plan_gathers_its_projections(config_class):
    """transformers 5.23's plans (models/qwen3_next/configuration_qwen3_next.py, models/qwen3_5/ and
    models/qwen3_5_moe/configuration_*.py, ``base_model_tp_plan``) name the Gated DeltaNet's projections alone,
    each colwise_gather_output: every rank gets their whole outputs, so the convolution, the delta rule, the
    gated norm and every head's state run whole on each."""
    transformers = requires("transformers")
    plan = getattr(transformers, config_class).base_model_tp_plan
    named = {k.split("linear_attn.")[1]: v for k, v in plan.items() if "linear_attn." in k}
    assert set(named.values()) == {"colwise_gather_output"} and "out_proj" in named
    assert all(k.startswith("in_proj_") for k in named if k != "out_proj")  # Qwen3.5: in_proj_qkv, _z, _b, _a


def test_deltanet_state_and_flops_whole_under_hf():
    """qwen3-next-80b-a3b's state on rank 0 by hand from its config.json: 36 linear_attention layers of 48, each
    32 value heads of a 128 x 128 fp32 state and a convolution of kernel 4 over 2·16·128 + 32·128 channels (bf16):
    whole under --engine hf at --tp 4, a quarter under the default (vLLM's heads split); the delta rule's FLOPs on
    rank 0 every head's under hf."""
    import sympy as sp
    from symllm.arch.resolved import spec
    from symllm.arch import symbols as S
    from symllm.costs import parallel
    state = 36 * (32 * 128 * 128 * 4 + 4 * 2 * (2 * 16 * 128 + 32 * 128))
    hf = phases.workload("qwen3-next-80b-a3b", seq=64, tp=4, engine="hf")["memory_per_gpu"]["state_cache"]
    default = phases.workload("qwen3-next-80b-a3b", seq=64, tp=4)["memory_per_gpu"]["state_cache"]
    assert (hf, default) == (state, state // 4)
    mdl = spec("qwen3-next-80b-a3b").model("dense")

    def rule(tree):
        return next(c for c in tree.walk() if c.name == "delta_rule").flops
    assert rule(parallel.shard(parallel.layout(mdl, "hf"))) == rule(mdl)
    assert rule(parallel.shard(mdl)) == rule(mdl).xreplace({S.n_gv: sp.ceiling(S.n_gv / S.N_t)})
