"""DeepSeek-V4 (transformers' ``deepseek_v4``): shared-key-value attention with compressors and an indexer,
hyper-connections, all-MoE layers with hash routing.

Expected numbers come from transformers' own ``DeepseekV4ForCausalLM`` built on the meta device (its
``named_parameters``, mapped to symllm's kinds here from transformers' module names) and from hand arithmetic
written out from transformers 5.23's ``modeling_deepseek_v4.py``; the caches against the cache transformers'
model returns on CPU. FLOPs are not modelled: a workload is refused in one line, as are the keys that would change
the model unmodelled."""
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.api import by_kind
from symllm.arch.config import from_hf
from symllm.costs import phases as costs

from .conftest import requires
from .strategies import dsv4_configs

#: the model types the transformers property draws (tests/test_elementwise.py: every registered family has one)
KINDS = ("deepseek_v4",)

#: transformers' module names -> symllm's kinds (DeepseekV4Attention, its compressors and the indexer)
_ATTN = {"q_a_proj": "wq_a", "q_a_norm": "q_a_norm", "q_b_proj": "wq_b", "kv_proj": "wkv", "kv_norm": "kv_norm",
         "o_a_proj": "wo_a", "o_b_proj": "wo_b"}
_COMPRESSOR = {"kv_proj": "compress_kv", "gate_proj": "compress_gate", "kv_norm": "compress_norm",
               "position_bias": "position_bias"}
_INDEXER = {"kv_proj": "index_kv", "gate_proj": "index_gate", "kv_norm": "index_norm",
            "position_bias": "index_position_bias", "q_b_proj": "index_wq_b", "weights_proj": "index_weights"}


def _hf_model(raw: dict):
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def _kind(name: str) -> str:
    """symllm's kind of transformers' parameter ``name`` (its group of blocks left out, as ``by_kind`` does)."""
    parts = name.split(".")
    leaf, owner = parts[-1], parts[-2]
    if parts[:2] == ["model", "hc_head"]:
        return f"hc_head/{leaf}"
    if "attn_hc" in parts or "ffn_hc" in parts:
        return f"{owner}/{owner}_{leaf}"
    if "indexer" in parts:
        return f"attention/compressor/indexer/{_INDEXER[leaf if leaf == 'position_bias' else owner]}"
    if "compressor" in parts:
        return f"attention/compressor/{_COMPRESSOR[leaf if leaf == 'position_bias' else owner]}"
    if "self_attn" in parts:
        return "attention/sinks" if leaf == "sinks" else f"attention/{_ATTN[owner]}"
    if "shared_experts" in parts:
        return "moe/shared_expert"
    if "experts" in parts:
        return "moe/experts"
    if "gate" in parts:
        return "moe/router"
    return {"embed_tokens": "embedding", "input_layernorm": "attention_norm", "lm_head": "lm_head",
            "post_attention_layernorm": "ffn_norm", "norm": "norm"}[owner]


def _hf_kinds(model, raw: dict) -> dict:
    """numel per kind of parameter, the total and the active count (the total less (E - k)/E of the routed
    experts' weights: a token runs k of the E experts of each layer)."""
    out = {"total": sum(p.numel() for p in model.parameters())}
    for name, p in model.named_parameters():
        out[_kind(name)] = out.get(_kind(name), 0) + p.numel()
    E, k = model.config.n_routed_experts, model.config.num_experts_per_tok
    unused = Fraction(out["moe/experts"]) * (E - k) / E
    assert unused.denominator == 1
    out["active"] = out["total"] - int(unused)
    return out


@given(dsv4_configs())
def test_random_configs_equal_transformers_on_meta(raw):
    """Each kind of parameter (the attention's q_a/q_b/kv/o_a/o_b projections, norms and sinks, each
    compressor's and indexer's projections, position biases and norms, the hyper-connections and hc_head, the
    router, routed and shared experts), the total and the active count equal transformers' model of a random
    DeepSeek-V4 config on the meta device."""
    assert by_kind(symllm.params(from_hf(raw))) == _hf_kinds(_hf_model(raw), raw)


def test_deepseek_v4_flash_defaults_equal_transformers_and_the_hand_count():
    """DeepseekV4Config's own defaults (DeepSeek-V4-Flash's sizes: d 4096, 43 layers, 64 heads of 512,
    q_lora_rank 1024, 8 output groups of 1024, 256 experts of 2048, hc_mult 4, CSA every 4 and HCA every 128
    tokens, an indexer of 64 heads of 128): every kind equals transformers' on the meta device, and one layer's
    attention and streams are, by hand from modeling_deepseek_v4.py:
    q_a_proj 4096·1024, q_a_norm 1024, q_b_proj 1024·64·512, kv_proj 4096·512, kv_norm 512, o_a_proj
    (64·512/8)·(8·1024), o_b_proj 8·1024·4096, sinks 64; the HCA compressor 2·4096·512 + 128·512 + 512; the CSA
    compressor 2·4096·1024 + 4·1024 + 512 and its indexer 2·4096·256 + 4·256 + 128 + 1024·64·128 + 4096·64;
    each hyper-connection 24·16384 + 24 + 3; hc_head 4·16384 + 4 + 1."""
    raw = {"model_type": "deepseek_v4"}
    counts = by_kind(symllm.params(from_hf(raw)))
    assert counts == _hf_kinds(_hf_model(raw), raw)
    L = 43  # the default pattern: two HCA layers, then HCA and CSA alternating: 20 CSA, 23 HCA
    attention = (4096 * 1024 + 1024 + 1024 * 64 * 512 + 4096 * 512 + 512 + (64 * 512 // 8) * (8 * 1024)
                 + 8 * 1024 * 4096 + 64)
    hca = 2 * 4096 * 512 + 128 * 512 + 512
    csa = 2 * 4096 * 1024 + 4 * 1024 + 512 + 2 * 4096 * 256 + 4 * 256 + 128 + 1024 * 64 * 128 + 4096 * 64
    streams = 2 * (24 * 16384 + 24 + 3)
    ours = sum(v for k, v in counts.items() if k.startswith(("attention/", "attn_hc/", "ffn_hc/")))
    assert ours == L * (attention + streams) + 20 * csa + 23 * hca
    assert sum(v for k, v in counts.items() if k.startswith("hc_head/")) == 4 * 16384 + 4 + 1


#: what DeepseekV4HCACache / DeepseekV4CSACache hold beside the window's keys (each a dict by compressor name)
_STATES = ("buffer_kv", "buffer_gate", "compressed_kv", "overlap_kv", "overlap_gate")


def _held(cache) -> tuple[int, int]:
    """Bytes transformers' ``cache`` holds: ``(keys and values, every other state)``, a tensor held under two
    names counted once (a compressing layer's ``values`` is its ``keys``)."""
    torch = requires("torch")
    kv, state, seen = 0, 0, set()
    for layer in cache.layers:
        for name in ("keys", "values", *_STATES):
            value = getattr(layer, name, None)
            for x in (value.values() if isinstance(value, dict) else [value]):
                if isinstance(x, torch.Tensor) and id(x) not in seen:
                    seen.add(id(x))
                    if name in ("keys", "values"):
                        kv += x.numel() * x.element_size()
                    else:
                        state += x.numel() * x.element_size()
    return kv, state


@given(dsv4_configs(), st.integers(1, 2), st.integers(1, 9), st.integers(1, 3))
def test_kv_and_state_cache_equal_transformers_cache(raw, b, s, steps):
    """transformers' model on CPU (fp32): after a prefill of b × s tokens and after each of ``steps`` decode
    steps, its cache holds symllm's kv_cache bytes in keys and values (the window's last W - 1 keys of the one
    head; a sliding-only layer's keys and values two tensors, a compressing layer's one read as both) and
    symllm's state_cache bytes in the compressors' buffers, compressed entries and overlap state."""
    torch = requires("torch")
    torch.manual_seed(0)
    transformers = requires("transformers")
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    kv, state = costs.memory(mdl, "kv_cache"), costs.memory(mdl, "state_cache")
    ids = torch.randint(0, raw["vocab_size"], (b, s))
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
        for n in range(steps + 1):
            values = symllm.values(cfg, batch=b, seq=s, gen=n, dtype="fp32")
            assert (kv.subs(values), state.subs(values)) == _held(cache), n
            cache = model(ids[:, -1:], past_key_values=cache, use_cache=True).past_key_values


def test_the_state_cache_of_one_layer_of_each_kind_by_hand():
    """One sequence of 7 tokens in fp32 (4 bytes), head_dim 16, index_head_dim 8, CSA every 2 and HCA every 4
    tokens, a window of 8, by hand from the cache classes: the HCA layer keeps 7 mod 4 = 3 tokens in buffer_kv and
    buffer_gate (16 wide) and ⌊7/4⌋ = 1 entry: 4·(2·3·16 + 16) = 448 bytes; a CSA layer keeps 1 token of 32 in
    each buffer, ⌊7/2⌋ = 3 entries of 16 and the overlap (2 × 16, kv and gate), and its indexer the same at 8:
    4·(2·32 + 3·16 + 2·2·16) + 4·(2·16 + 3·8 + 2·2·8) = 704 + 352; every layer's window holds min(7, 8 - 1) = 7
    keys of 16, twice in the sliding-only layer."""
    raw = {"model_type": "deepseek_v4", "vocab_size": 100, "hidden_size": 32, "moe_intermediate_size": 16,
           "num_hidden_layers": 3, "num_attention_heads": 4, "head_dim": 16, "q_lora_rank": 8,
           "num_experts_per_tok": 2, "n_routed_experts": 4, "hc_mult": 2, "sliding_window": 8, "o_groups": 2,
           "o_lora_rank": 6, "index_n_heads": 2, "index_head_dim": 8, "index_topk": 4,
           "layer_types": ["sliding_attention", "heavily_compressed_attention", "compressed_sparse_attention"],
           "compress_rates": {"compressed_sparse_attention": 2, "heavily_compressed_attention": 4}}
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    values = symllm.values(cfg, batch=1, seq=7, gen=0, dtype="fp32")
    assert costs.memory(mdl, "state_cache").subs(values) == 448 + 704 + 352
    assert costs.memory(mdl, "kv_cache").subs(values) == 4 * 7 * 16 * (2 + 1 + 1)


def test_a_workload_and_unmodelled_keys_are_refused_in_one_line(cli, tmp_path):
    """FLOPs of DeepSeek-V4 are not modelled: count with a workload exits 2 with one line (and the
    parameters are printed without one); a shared expert count transformers ignores, biases on the shared
    expert, a second key-value head, an unknown layer type and a window of 1 are refused in one line naming the
    key; verify (the torch reference has no such layers) and a checkpoint's expected tensors are refused too."""
    path = tmp_path / "config.json"
    base = {"model_type": "deepseek_v4", "num_hidden_layers": 2, "n_routed_experts": 4, "num_experts_per_tok": 2}
    path.write_text(json.dumps(base))
    ok = cli(["count", str(path)])
    assert ok.code == 0 and "hc_head/hc_fn" in ok.out and "FLOPs not modelled yet" in ok.out
    r = cli(["count", str(path), "--batch", "1", "--seq", "8"])
    assert (r.code, r.out) == (2, "") and r.err == ("symllm: error: layers: DeepSeek-V4's FLOPs are not modelled yet "
                                                    "(its parameters and caches are)\n"), r.err
    for change, key in (({"n_shared_experts": 2}, "n_shared_experts"), ({"mlp_bias": True}, "mlp_bias"),
                        ({"attention_bias": True}, "attention_bias"), ({"num_key_value_heads": 2},
                                                                       "num_key_value_heads"),
                        ({"layer_types": ["full_attention", "sliding_attention"]}, "layer_types"),
                        ({"sliding_window": 1}, "sliding_window")):
        path.write_text(json.dumps({**base, **change}))
        r = cli(["count", str(path)])
        assert r.code == 2 and r.out == "" and r.err.startswith(f"symllm: error: {key}:") and r.err.count("\n") == 1
    path.write_text(json.dumps(base))
    r = cli(["verify", str(path)])
    assert (r.code, r.out, r.err) == (2, "", "symllm: error: verify: the torch reference has no DeepSeek-V4 "
                                             "attention layers\n")
    from symllm.costs import checkpoints
    with pytest.raises(symllm.SymllmError, match="^checkpoint: DeepSeek-V4 tensors are not modelled$"):
        checkpoints.expected(from_hf(base))


@pytest.mark.parametrize("legacy, types", [
    ({"compress_ratios": [0, 4, 128, 4]}, ("shared_kv", "compressed_sparse", "heavily_compressed", "compressed_sparse")),
    ({}, ("heavily_compressed", "heavily_compressed", "heavily_compressed", "compressed_sparse"))])
def test_layer_types_are_read_as_the_config_class_derives_them(legacy, types):
    """The legacy per-layer compress_ratios (0, 4, 128) and, absent, the default pattern (two HCA layers then
    HCA and CSA alternating, from an HCA one) give the layer types DeepseekV4Config derives."""
    transformers = requires("transformers")
    raw = {"model_type": "deepseek_v4", "num_hidden_layers": 4, **legacy}
    names = {"sliding_attention": "shared_kv", "compressed_sparse_attention": "compressed_sparse",
             "heavily_compressed_attention": "heavily_compressed"}
    assert tuple(names[t] for t in transformers.AutoConfig.for_model(**raw).layer_types) == types
    assert tuple(kind.mixer for kind in from_hf(raw).layer_kinds()) == types
