"""Gemma 4 (gemma4_text, and the gemma4 multimodal wrapper) against transformers' own classes: what sets it
apart (full layers with their own head shape, keys as values without v_proj, per_layer_config as transformers
writes it) and what symllm refuses in one line. Drawn configs are checked per kind of parameter, for FLOPs and
the KV cache with tests/test_dense_families.py's properties (gemma4_text is one of its DENSE_FAMILIES)."""
import json

import pytest
from hypothesis import given

import symllm
from symllm.arch.config import from_hf

from .conftest import assert_refused_in_one_line, requires
from .strategies import dense_family_configs

#: a small Gemma 4: 4 sliding layers of 4 query heads and 2 key/value heads of width 8, and 2 full layers
#: (every 6th, the last forced) of width 16 with 1 key/value head and keys as values
_RAW = {"model_type": "gemma4_text", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 7, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
        "global_head_dim": 16, "num_global_key_value_heads": 1, "attention_k_eq_v": True,
        "hidden_size_per_layer_input": 0, "sliding_window": 4}


def _hf(raw: dict, device: str = "meta"):
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.Gemma4TextConfig(**{k: v for k, v in raw.items() if k != "model_type"})
    with torch.device(device):
        return transformers.Gemma4ForCausalLM(config)


def test_k_eq_v_layers_have_no_v_proj_as_transformers_builds_them():
    """transformers builds a v_proj in the 5 sliding layers only (its full layers 5 and 6 reuse k_proj's output);
    symllm's wv is in its sliding group only, and each group's k_proj width is transformers' (2*8 and 1*16)."""
    model = _hf(_RAW)
    v_layers = sorted(int(name.split(".")[2]) for name, _ in model.named_parameters() if "v_proj" in name)
    assert v_layers == [0, 1, 2, 3, 4]
    k_width = {int(n.split(".")[2]): p.shape[0] for n, p in model.named_parameters() if "k_proj" in n}
    assert k_width == {0: 16, 1: 16, 2: 16, 3: 16, 4: 16, 5: 16, 6: 16}  # 2 heads of 8; 1 head of 16
    out = symllm.params(from_hf(_RAW))
    assert out["block/attention/wv"] == 5 * 32 * 16 and "full_block/attention/wv" not in out
    assert out["full_block/attention/wk"] == 2 * 32 * 16 and out["full_block/attention/wq"] == 2 * 32 * 4 * 16
    assert out["total"] == sum(p.numel() for p in model.parameters())


def test_moe_block_as_transformers_builds_it():
    """26B-A4B's MoE block (enable_moe_block) on _RAW: Gemma4TextDecoderLayer keeps its dense MLP (3·32·48 a layer)
    and adds Gemma4TextRouter (proj 32·4, scale 32, per_expert_scale 4), Gemma4TextExperts (gate_up_proj 4·2·12·32,
    down_proj 4·32·12) and three norms of 32: each kind summed over transformers' 7 layers on the meta device equals
    symllm's, and the active count is the total less the 2 of 4 experts a token does not run."""
    raw = {**_RAW, "enable_moe_block": True, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 12}
    model = _hf(raw)
    hf = {}
    for name, p in model.named_parameters():
        key = ".".join(name.split(".")[3:]) if name.startswith("model.layers.") else name
        hf[key] = hf.get(key, 0) + p.numel()
    out = symllm.params(from_hf(raw))
    pairs = {"router.proj.weight": "block/moe/router/router_proj", "router.scale": "block/moe/router/router_scale",
             "router.per_expert_scale": "block/moe/router/per_expert_scale",
             "post_feedforward_layernorm_1.weight": "block/post_ffn_norm_1",
             "pre_feedforward_layernorm_2.weight": "block/moe_norm",
             "post_feedforward_layernorm_2.weight": "block/post_moe_norm"}
    for hf_name, ours in pairs.items():  # one group in symllm's tree per kind of layer: summed over both
        assert out[ours] + out.get("full_" + ours, 0) == hf[hf_name], hf_name
    assert hf["router.proj.weight"] == 7 * 32 * 4 and hf["experts.gate_up_proj"] == 7 * 4 * 2 * 12 * 32
    experts = hf["experts.gate_up_proj"] + hf["experts.down_proj"]
    assert out["block/moe/experts"] + out["full_block/moe/experts"] == experts
    assert out["block/feed_forward/w1"] + out["full_block/feed_forward/w1"] == hf["mlp.gate_proj.weight"] == 7 * 32 * 48
    total = sum(p.numel() for p in model.parameters())
    assert out["total"] == total and out["active"] == total - experts // 2


@given(dense_family_configs("gemma4_text"))
def test_per_layer_config_as_transformers_writes_it(raw):
    """A config.json saved by transformers (Gemma4TextConfig.to_dict: global_head_dim dropped, the full layers'
    overrides written into per_layer_config) counts what transformers builds from it."""
    requires("transformers")
    written = _hf(raw).config.to_dict()
    assert "per_layer_config" in written and "global_head_dim" not in written
    kept = {k: v for k, v in written.items() if k in raw or k in ("per_layer_config", "layer_types")}
    kept["model_type"] = "gemma4_text"
    model = _hf(kept)
    assert symllm.params(from_hf(kept))["total"] == sum(p.numel() for p in model.parameters())


def test_multimodal_config_counts_its_text_config(cli, tmp_path):
    """A gemma4 checkpoint's config.json (text_config, vision_config, audio_config) counts the language model
    (Gemma4ForCausalLM of its text_config on the meta device), saying the vision and audio towers are not."""
    raw = {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"],
           "text_config": {k: v for k, v in _RAW.items() if k != "model_type"},
           "vision_config": {"model_type": "gemma4_vision"}, "audio_config": {"model_type": "gemma4_audio"}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", str(path), "--seq", "16", "--json"])
    out = json.loads(r.out)
    assert r.code == 0 and out["params"]["total"] == sum(p.numel() for p in _hf(_RAW).parameters())
    assert "vision and audio encoders" in out["config"]["note"]


@pytest.mark.parametrize("change, start", [
    ({"hidden_size_per_layer_input": None}, None),  # null: no per-layer embeddings, counted
    ({"hidden_size_per_layer_input": -1}, "hidden_size_per_layer_input: "),
    # layers 5 and 6 are the only full ones: none would make the keys and values the last 2 share
    ({"num_kv_shared_layers": 2}, "num_kv_shared_layers: 2 leaves no earlier full_attention layer to share from"),
    ({"num_kv_shared_layers": 7}, "num_kv_shared_layers: 7 leaves no earlier full_attention layer"),
    ({"num_kv_shared_layers": 1}, None),  # layer 6 shares layer 5's: counted
    ({"enable_moe_block": True}, "num_experts: "),  # the MoE block without its sizes
    ({"enable_moe_block": True, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 8}, None),
    ({"enable_moe_block": True, "num_experts": 2, "top_k_experts": 3, "moe_intermediate_size": 8},
     "top_k_experts: 3 is more than"),
    ({"use_bidirectional_attention": "all"}, "use_bidirectional_attention: 'all'"),
    ({"per_layer_config": {"5": {"head_dim": 16}, "6": {"head_dim": 32}}}, "per_layer_config: 2 head shapes"),
    ({"per_layer_config": {"5": {"intermediate_size": 16}}}, "per_layer_config: {'intermediate_size': 16}"),
    ({"per_layer_config": {"9": {"head_dim": 16}}}, "per_layer_config: '9' is not a layer index"),
])
def test_unmodelled_keys_are_refused_in_one_line(cli, tmp_path, change, start):
    """A negative per-layer width, layers sharing keys and values no earlier layer of their type makes
    (transformers' kv_sharing_modes raises), the MoE block, bidirectional attention and per-layer overrides
    symllm does not model are one
    line and exit 2, never counted as another model."""
    raw = {**_RAW, **change}
    if start is None:
        assert symllm.params(from_hf(raw))["total"] > 0
        return
    assert_refused_in_one_line(cli, tmp_path, raw, start)


def test_verify_a_saved_checkpoint(cli, tmp_path):
    """verify of Gemma4ForCausalLM's save_pretrained (sharded, bf16): every tensor agrees, the per-layer
    ``layer_scalar`` buffer included (one element a layer, saved beside the parameters); the file's bytes are
    torch's state dict, the formula's are its parameters alone (a buffer is not a parameter); and a missing
    buffer is named."""
    torch = requires("torch")
    torch.manual_seed(0)
    model = _hf(_RAW, "cpu").to(torch.bfloat16)
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    buffers = {n: b for n, b in model.named_buffers() if n.endswith("layer_scalar")}
    assert len(buffers) == _RAW["num_hidden_layers"] and {tuple(b.shape) for b in buffers.values()} == {(1,)}
    r = cli(["verify", tmp_path, "--json"])
    ck = json.loads(r.out)["checkpoint"]
    assert r.code == 0 and ck["difference"] is None, r.out + r.err
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}  # tied: saved once
    assert ck["bytes"] == sum(v.numel() * v.element_size() for v in state.values())
    assert ck["formula_bytes"] == 2 * sum(p.numel() for p in model.parameters())
    index = tmp_path / "model.safetensors.index.json"
    written = json.loads(index.read_text())
    del written["weight_map"]["model.layers.3.layer_scalar"]
    index.write_text(json.dumps(written))
    r = cli(["verify", tmp_path])
    assert r.code != 0 and "model.layers.3.layer_scalar" in r.out + r.err


def test_verify_a_saved_multimodal_checkpoint(cli, tmp_path):
    """verify of Gemma4ForConditionalGeneration's save_pretrained: the language model under
    ``model.language_model.`` agrees (transformers' own module names), the vision tower's tensors are reported
    as not counted, their number and bytes torch's."""
    torch, transformers = requires("torch"), requires("transformers")
    text = {k: v for k, v in _RAW.items() if k != "model_type"}
    config = transformers.Gemma4Config(text_config=text, audio_config=None, vision_config=dict(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
        head_dim=8))
    model = transformers.Gemma4ForConditionalGeneration(config).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    r = cli(["verify", tmp_path, "--json"])
    ck = json.loads(r.out)["checkpoint"]
    assert r.code == 0 and ck["difference"] is None, r.out + r.err
    outside = {k: v for k, v in model.state_dict().items() if not k.startswith(("model.language_model.", "lm_head."))}
    assert ck["not_counted"] == {"tensors": len(outside),
                                 "bytes": sum(v.numel() * v.element_size() for v in outside.values())}


#: _RAW's widths with sliding and full layers alternating, the last three sharing keys and values (layer 4 the
#: sliding layer 2's, layers 5 and 6 the full layer 3's), their MLP doubled
_SHARED = {**_RAW, "layer_types": ["sliding_attention", "full_attention"] * 3 + ["full_attention"],
           "num_kv_shared_layers": 3, "use_double_wide_mlp": True}


def test_kv_shared_layers_as_transformers_builds_and_caches_them():
    """Layers 4-6 have no k_proj, v_proj, k_norm (transformers builds none), their MLP is 2 x 48 wide; the KV
    cache after a prefill of 6 tokens (window 4) is the producing layers' alone, by hand: sliding layers 0 and 2
    hold 4 positions of 2 heads of 8, full layers 1 and 3 hold 6 of 1 head of 16, a key and a value each:
    2·2·4·2·8 + 2·2·6·1·16 = 640 elements; transformers' cache holds a DummyLayer for each sharing layer and one
    position fewer in each sliding layer between steps (3 = W - 1: 2·2·1·2·8 = 64 fewer)."""
    torch = requires("torch")
    from symllm.costs import phases as costs
    model = _hf(_SHARED, "cpu").eval()
    names = [n for n, _ in model.named_parameters()]
    for i in (4, 5, 6):
        assert not [n for n in names if f"layers.{i}.self_attn." in n and ("k_" in n or "v_" in n)]
        assert model.model.layers[i].mlp.gate_proj.weight.shape == (96, 32)
    cfg = from_hf(_SHARED)
    assert symllm.params(cfg)["total"] == sum(p.numel() for p in model.parameters())
    work = costs.workload(cfg, batch=1, seq=6, gen=0, dtype="fp32", kv_dtype="fp32")
    assert work["memory"]["kv_cache"] == 4 * 640
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config)
    with torch.no_grad():  # every position: without per-layer embeddings transformers' own slicing fails
        model(torch.zeros(1, 6, dtype=torch.long), past_key_values=cache, use_cache=True, logits_to_keep=slice(0, None))
    dummies = [i for i, layer in enumerate(cache.layers) if type(layer).__name__ == "DummyLayer"]
    assert dummies == [4, 5, 6]
    held = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers if layer.keys is not None)
    assert held == 640 - 64


def test_kv_shared_layers_count_and_describe(cli, tmp_path):
    """count says which layers share keys and values and how wide their MLP is (the config's own numbers)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_SHARED))
    r = cli(["count", str(path)])
    assert r.code == 0, r.err
    out = " ".join(r.out.split())  # the lines wrap
    assert "3 of 7 layers reuse an earlier layer's keys and values" in out and "feed-forward 96 wide" in out


#: an E2B-shaped tiny model: per-layer inputs of 6 from a table of 40 rows, beside _SHARED's shared layers
_PLE = {**_SHARED, "hidden_size_per_layer_input": 6, "vocab_size_per_layer_input": 40}


def test_per_layer_embeddings_by_hand_and_as_transformers_builds_them():
    """Per-layer embeddings add, by hand (d = 32, L = 7, d_p = 6, V_p = 40): the table 40·7·6 = 1,680, the model's
    projection 32·7·6 = 1,344, its norm 6, and in each of the 7 layers a gate and a projection of 32·6 and a norm
    of 32: 7·416 = 2,912; 5,942 in all, what Gemma4ForCausalLM's parameters grow by; each kind is transformers'."""
    with_ple, without = symllm.params(from_hf(_PLE)), symllm.params(from_hf(_SHARED))
    assert with_ple["total"] - without["total"] == 1680 + 1344 + 6 + 7 * (2 * 32 * 6 + 32) == 5942
    model = _hf(_PLE)
    assert with_ple["total"] == sum(p.numel() for p in model.parameters())
    hf = {n: p.numel() for n, p in model.named_parameters()}
    assert with_ple["per_layer_embedding"] == hf["model.embed_tokens_per_layer.weight"] == 1680
    assert with_ple["per_layer_model_projection"] == hf["model.per_layer_model_projection.weight"]
    assert sum(v for k, v in with_ple.items() if k.endswith("/per_layer_gate")) == sum(
        v for k, v in hf.items() if k.endswith("per_layer_input_gate.weight")) == 7 * 192


def test_verify_a_saved_checkpoint_with_per_layer_inputs_and_shared_layers(cli, tmp_path):
    """verify of save_pretrained of the E2B-shaped model: the per-layer table, projection and norms under their
    Hugging Face names, no k_proj/v_proj/k_norm in the sharing layers, every tensor agreeing."""
    torch = requires("torch")
    model = _hf(_PLE, "cpu").to(torch.bfloat16)
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    r = cli(["verify", tmp_path, "--json"])
    ck = json.loads(r.out)["checkpoint"]
    assert r.code == 0 and ck["difference"] is None, r.out + r.err
    assert ck["formula_bytes"] == 2 * sum(p.numel() for p in model.parameters())


def test_per_layer_embeddings_are_described(cli, tmp_path):
    """count says the per-layer table's shape and each layer's input width."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_PLE))
    r = cli(["count", str(path)])
    assert r.code == 0, r.err
    assert "per-layer embeddings: a table of 40 x 7*6 and a projection give each layer an input of 6" in " ".join(
        r.out.split())


def test_verify_a_saved_moe_block_checkpoint(cli, tmp_path):
    """verify of save_pretrained of _RAW with 26B-A4B's MoE block (4 experts of 12): each layer's router
    (``router.proj.weight [4, 32]``, ``router.scale [32]``, ``router.per_expert_scale [4]``) and fused experts
    (``experts.gate_up_proj [4, 24, 32]``, ``experts.down_proj [4, 32, 12]``) sit on the decoder layer itself, as
    Gemma4TextDecoderLayer holds them: every tensor agrees with torch's shape, exit 0; the file's bytes are the state
    dict's; experts written the other way round ([4, 32, 24], Llama 4's layout) are named in one line, exit 1."""
    torch = requires("torch")
    safetensors = requires("safetensors.torch")
    raw = {**_RAW, "enable_moe_block": True, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 12}
    torch.manual_seed(0)
    model = _hf(raw, "cpu").to(torch.bfloat16)
    model.save_pretrained(tmp_path / "saved", max_shard_size="20KB")
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}  # tied: saved once
    assert [list(state[f"model.layers.6.experts.{p}"].shape) for p in ("gate_up_proj", "down_proj")] == [
        [4, 24, 32], [4, 32, 12]]
    assert list(state["model.layers.6.router.proj.weight"].shape) == [4, 32]
    r = cli(["verify", tmp_path / "saved", "--json"])
    ck = json.loads(r.out)["checkpoint"]
    assert r.code == 0 and ck["difference"] is None and ck["tensors"] == len(state), r.out + r.err
    assert ck["bytes"] == sum(v.numel() * v.element_size() for v in state.values())
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text((tmp_path / "saved" / "config.json").read_text())
    state = {k: v.contiguous() for k, v in state.items()}
    state["model.layers.2.experts.gate_up_proj"] = state["model.layers.2.experts.gate_up_proj"].transpose(1, 2).contiguous()
    safetensors.save_file(state, bad / "model.safetensors")
    r = cli(["verify", bad, "--json"])
    assert r.code == 1 and json.loads(r.out)["checkpoint"]["difference"] == (
        "wrong shape: model.layers.2.experts.gate_up_proj is [4, 32, 24], the config says [4, 24, 32]"), r.out
