"""Layers with their own head shape (LayerKind.heads "own": ``n_ha``, ``n_kva``, ``d_ha``) and layers whose
keys are their values (LayerKind.k_eq_v: no ``wv``): parameters, the KV cache per group, tensor-parallel
shards and LoRA, each against hand arithmetic written out below (transformers' Gemma 4 is checked against
them in tests/test_gemma4.py)."""
import pytest

import symllm
from symllm.arch.layers import LayerKind
from symllm.errors import SymllmError

# two sliding layers of the model's shape (4 query heads, 2 KV heads of width 8) and one full layer of its
# own (4 query heads, 1 KV head of width 12) whose keys are its values
_CFG = dict(vocab_size=100, dim=16, n_layers=3, n_heads=4, n_kv_heads=2, head_dim=8, hidden_dim=32, sliding_window=4,
            layers=((LayerKind(window="sliding"), 2), (LayerKind(heads="own", k_eq_v=True), 1)),
            alt_heads=4, alt_kv_heads=1, alt_head_dim=12)


def test_params_per_group_by_hand():
    """A sliding block: wq 16*32, wk and wv 16*16, wo 32*16, SwiGLU 3*16*32, two norms of 16 = 3104; the own
    block: wq 16*48, wk 16*12, no wv, wo 48*16, the same SwiGLU and norms = 3296; embedding and lm_head
    100*16 each, the final norm 16: 1600 + 1600 + 16 + 2*3104 + 3296 = 12720."""
    out = symllm.params(symllm.ModelConfig(**_CFG))
    assert out["block"] == 3104
    assert (out["full_block/attention/wq"], out["full_block/attention/wk"], out["full_block/attention/wo"]) == (
        768, 192, 768)
    assert "full_block/attention/wv" not in out
    assert out["total"] == 12720


def test_kv_cache_per_group_by_hand():
    """After a 10-token prefill: each sliding layer holds its last 4 positions, 2 (k and v) * 4 * 2 heads * 8 =
    128 elements; the full layer all 10, 2 * 10 * 1 head * 12 = 240 (a k_eq_v layer still caches keys and
    values, as transformers' cache does); 2*128 + 240 = 496 elements of 2 bytes (bf16)."""
    out = symllm.workload(symllm.ModelConfig(**_CFG), batch=1, seq=10)
    assert out["memory"]["kv_cache"] == 2 * 496


def test_tensor_parallel_shard_by_hand():
    """tp=2, rank 0: the vocabulary halves (800 + 800), the final norm whole (16); a sliding block holds wq
    16*16, wk and wv 16*8, wo 16*16, SwiGLU 3*16*16, norms 32 = 1568; the own block wq 16*24, wk 16*6,
    wo 24*16, SwiGLU 768, norms 32 = 1664: 1616 + 2*1568 + 1664 = 6416."""
    out = symllm.workload(symllm.ModelConfig(**_CFG), batch=1, seq=10, tp=2)
    assert out["params"]["per_gpu"] == 6416


def test_lora_adapts_each_kind_by_its_own_shape():
    """Rank 2 on wq, wk, wv, wo, r*(fan_in + fan_out) each: a sliding block 96 + 64 + 64 + 96 = 320, the own
    block 2*(16+48) + 2*(16+12) + 2*(48+16) = 312 (no wv): 2*320 + 312 = 952."""
    out = symllm.workload(symllm.ModelConfig(**_CFG), batch=1, seq=10, lora_rank=2, lora_targets="wq,wk,wv,wo")
    assert out["params"]["trainable"] == 952


def test_config_round_trips_and_checks_the_sizes():
    """to_dict writes heads and k_eq_v only where a layer has them, and reads back; the three sizes come
    together with a layer of its own shape, and never without one."""
    cfg = symllm.ModelConfig(**_CFG)
    assert symllm.ModelConfig(**cfg.to_dict()) == cfg
    assert "heads" not in cfg.to_dict()["layers"][0]
    with pytest.raises(SymllmError, match="^alt_head_dim: missing"):
        symllm.ModelConfig(**{**_CFG, "alt_head_dim": None})
    with pytest.raises(SymllmError, match="^alt_heads: 4 given but no layer has its own head shape"):
        symllm.ModelConfig(**{**_CFG, "layers": ((LayerKind(window="sliding"), 2), (LayerKind(), 1))})
    with pytest.raises(SymllmError, match="^alt_kv_heads: 3 does not divide the 4 query heads"):
        symllm.ModelConfig(**{**_CFG, "alt_kv_heads": 3})


def test_every_layer_kind_field_changes_its_repr():
    """The repr of a structure keys the on-disk caches of formulas (symllm.numbers.cache.key): a LayerKind that
    differs in any one field from the plain layer must print differently, or two structures share a table."""
    other = {"ffn": "moe", "rotary": False, "window": "sliding", "temperature": True, "mixer": "linear_attention",
             "heads": "own", "k_eq_v": True, "sinks": True, "kv_shared": True, "wide_ffn": True,
             "shared_topk": True, "rope_part": "whole"}
    assert set(other) == set(LayerKind.__dataclass_fields__)
    for field, value in other.items():
        assert repr(LayerKind(**{field: value})) != repr(LayerKind()), field
