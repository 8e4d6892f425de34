"""MiMo-V2-Flash (mimo_v2_flash) against transformers' own classes: the generation loop's FLOPs and the KV cache
it holds (values of their own width, sliding layers with twice the key/value heads), what sets it apart per
module, and hand arithmetic. Parameters per kind and prefill/training FLOPs of drawn configs are
tests/test_moe.py's properties (mimo_v2_flash is one of its KINDS)."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import from_hf
from symllm.errors import SymllmError

from .conftest import requires
from .strategies import mimo_configs
from .test_dense_families import _generation_agrees

#: a small MiMo-V2-Flash: layer 0 full and dense, layers 1-4 sliding and MoE, layer 5 full and MoE
_RAW = {"model_type": "mimo_v2_flash", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 12, "v_head_dim": 8,
        "moe_intermediate_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2, "sliding_window": 4,
        "rope_parameters": {k: {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
                            for k in ("full_attention", "sliding_attention")}}


def _hf(raw: dict, device: str = "meta"):
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw, attn_implementation="eager", experts_implementation="eager")
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(config)


def test_attention_shapes_by_hand_and_as_transformers_builds_them():
    """A full layer: q_proj 32 -> 8*12, k_proj 32 -> 2*12, v_proj 32 -> 2*8, o_proj 8*8 -> 32, no sinks; a
    sliding layer: k_proj 32 -> 4*12, v_proj 32 -> 4*8 and 8 sinks. transformers' modules have these shapes."""
    model = _hf(_RAW)
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters() if ".self_attn." in n}
    assert shapes["model.layers.0.self_attn.k_proj.weight"] == (24, 32)
    assert shapes["model.layers.0.self_attn.v_proj.weight"] == (16, 32)
    assert shapes["model.layers.0.self_attn.o_proj.weight"] == (32, 64)
    assert shapes["model.layers.1.self_attn.k_proj.weight"] == (48, 32)
    assert shapes["model.layers.1.self_attn.v_proj.weight"] == (32, 32)
    assert shapes["model.layers.1.self_attn.sinks"] == (8,) and "model.layers.0.self_attn.sinks" not in shapes
    out = symllm.params(from_hf(_RAW))
    # groups: block (layer 0: full, dense), moe_block... the sliding MoE layers, and the full MoE layer
    wk = {k: v for k, v in out.items() if k.endswith("attention/wk")}
    assert sorted(wk.values()) == [32 * 24, 32 * 24, 4 * 32 * 48]
    assert sum(v for k, v in out.items() if k.endswith("attention/sinks")) == 4 * 8
    assert out["total"] == sum(p.numel() for p in model.parameters())


def test_kv_cache_by_hand():
    """After a 10-token prefill (b = 1): each full layer holds 10 positions of 2 heads, keys of 12 and values
    of 8: 10*2*(12+8) = 400 elements; each sliding layer its last 4 of 4 heads: 4*4*20 = 320; 2*400 + 4*320 =
    2080 elements of 2 bytes (bf16)."""
    out = symllm.workload(from_hf(_RAW), batch=1, seq=10)
    assert out["memory"]["kv_cache"] == 2 * 2080


@given(mimo_configs(), st.integers(1, 2), st.integers(1, 10), st.integers(0, 3))
def test_prefill_decode_and_kv_equal_transformers(raw, b, s, n):
    """Prefill, the last decode step and the whole generation equal FlopCounterMode's over transformers' own
    loop (eager attention and experts, CPU); the KV cache holds what transformers' cache holds, but for the one
    position fewer each sliding layer keeps between steps once the window is full (the next step's own key
    completes it): 2*n_kv heads of head_dim + v_head_dim there."""
    # a sliding layer's 2*n_kv heads: keys of head_dim and values of v_head_dim
    _generation_agrees(raw, b, s, n, slot=2 * raw["num_key_value_heads"] * (raw["head_dim"] + raw["v_head_dim"]))


@pytest.mark.parametrize("change, start", [
    ({"rope_parameters": {"full_attention": {"rope_type": "default", "partial_rotary_factor": 0.5},
                          "sliding_attention": {"rope_type": "default", "partial_rotary_factor": 0.25}}},
     "rope_parameters: partial_rotary_factor [0.25, 0.5] differs"),
    ({"mlp_layer_types": ["dense"]}, "mlp_layer_types: expected 6 of dense, sparse"),
    ({"num_key_value_heads": 8}, "num_key_value_heads: 8, doubled in the sliding layers, does not divide"),
    # the published config's own keys, which transformers ignores, stating another model than it builds
    ({"hybrid_layer_pattern": [0, 1, 1, 1, 1, 1]}, "hybrid_layer_pattern: [0, 1, 1, 1, 1, 1] is not what"),
    ({"moe_layer_freq": [0, 0, 1, 1, 1, 1]}, "moe_layer_freq: [0, 0, 1, 1, 1, 1] is not what"),
    ({"swa_num_key_value_heads": 2}, "swa_num_key_value_heads: 2 is not what"),
    ({"add_full_attention_sink_bias": True}, "add_full_attention_sink_bias: true is not what"),
])
def test_unmodelled_or_inconsistent_keys_are_refused_in_one_line(change, start):
    """Rotary parts that differ by layer type, a per-layer list of the wrong length, and sliding layers whose
    doubled key/value heads do not divide the query heads are refused in one line."""
    with pytest.raises(SymllmError) as info:
        from_hf({**_RAW, **change})
    assert str(info.value).startswith(start) and "\n" not in str(info.value)


def test_published_configs_own_keys_state_what_transformers_builds():
    """The published config.json's keys for the checkpoint's own code (the mimo-v2-flash preset's:
    hybrid_layer_pattern 1 for a sliding layer, moe_layer_freq 1 for MoE, the swa_* shapes, the sink flags) and
    its attention_chunk_size, which neither model reads, are accepted where they state transformers' model: the
    small config with them, written out by hand from its layer types (layer 0 full and dense, 1-4 sliding, 5
    full), counts what MiMoV2FlashForCausalLM builds on the meta device, the same as without them."""
    own = {"hybrid_layer_pattern": [0, 1, 1, 1, 1, 0], "moe_layer_freq": [0, 1, 1, 1, 1, 1],
           "swa_num_attention_heads": 8, "swa_num_key_value_heads": 4, "swa_head_dim": 12, "swa_v_head_dim": 8,
           "add_swa_attention_sink_bias": True, "add_full_attention_sink_bias": False, "attention_chunk_size": 4}
    counts = symllm.params(from_hf({**_RAW, **own}))
    assert counts == symllm.params(from_hf(_RAW))
    assert counts["total"] == sum(p.numel() for p in _hf(_RAW).parameters())


def test_verify_a_saved_checkpoint(cli, tmp_path):
    """verify of save_pretrained of _RAW: its weight-conversion mapping writes the routed experts one by one
    (``mlp.experts.{e}.gate_proj``...) and the sliding layers' sinks as ``self_attn.attention_sink_bias`` (8, one a
    query head), and the router's ``e_score_correction_bias`` buffer beside its gate: every tensor agrees, exit 0."""
    import json
    torch = requires("torch")
    torch.manual_seed(0)
    _hf(_RAW, "cpu").to(torch.bfloat16).save_pretrained(tmp_path, max_shard_size="20KB")
    written = json.loads((tmp_path / "model.safetensors.index.json").read_text())["weight_map"]
    assert "model.layers.1.self_attn.attention_sink_bias" in written and "model.layers.1.mlp.experts.3.up_proj.weight" in written
    r = cli(["verify", tmp_path, "--json"])
    ck = json.loads(r.out)["checkpoint"]
    assert r.code == 0 and ck["difference"] is None and ck["tensors"] == len(written), r.out + r.err
