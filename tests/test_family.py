"""The LLaMA family beyond Meta's LLaMA: HF model types (llama, mistral, qwen2, qwen3), q/k/v and
MLP biases, Qwen3's QK-norm, and the refusal of what symllm does not model.

Expected numbers come from published totals, transformers' own model classes built on the meta device,
and the torch reference model (numel, FlopCounterMode, saved tensors)."""
import json

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch import symbols as S
from symllm.arch.components import attention
from symllm.arch.config import from_hf, preset_info
from symllm.arch.families.hf import HF_UNMODELLED

from .conftest import assert_refused_in_one_line, requires
from .strategies import family_configs, hf_configs

#: the model types of this family that the transformers property draws, each under every profile
KINDS = ("llama", "mistral", "qwen2", "qwen3")

QWEN25_7B = {  # Qwen/Qwen2.5-7B config.json
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "vocab_size": 152064, "tie_word_embeddings": False, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 131072, "use_sliding_window": False, "max_window_layers": 28, "hidden_act": "silu",
    "max_position_embeddings": 131072, "torch_dtype": "bfloat16", "use_cache": True,
}
QWEN3_8B = {  # Qwen/Qwen3-8B config.json
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096, "head_dim": 128,
    "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 151936, "tie_word_embeddings": False, "attention_bias": False, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000, "sliding_window": None, "use_sliding_window": False, "max_window_layers": 36,
    "hidden_act": "silu", "max_position_embeddings": 40960,
}
MISTRAL_V01 = {  # mistralai/Mistral-7B-v0.1 config.json
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 32000, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": False, "hidden_act": "silu",
}
MIXTRAL_8X7B = {  # mistralai/Mixtral-8x7B-v0.1 config.json
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000, "sliding_window": None,
}


# --- published totals ----------------------------------------------------------------------------

@pytest.mark.parametrize("raw,total", [(QWEN25_7B, 7_615_616_512), (QWEN3_8B, 8_190_735_360)])
def test_published_qwen_totals_from_their_config_json(raw, total):
    """Qwen2.5-7B (q/k/v biases) and Qwen3-8B (QK-norm, head_dim 128) read from their config.json
    give the totals their checkpoints hold."""
    assert symllm.params(from_hf(raw))["total"] == total


def test_qwen_structure_is_read_from_the_model_type():
    """Qwen2 always has q/k/v biases and no o bias; Qwen3 has q_norm and k_norm of width head_dim."""
    q2, q3 = symllm.params(from_hf(QWEN25_7B)), symllm.params(from_hf(QWEN3_8B))
    assert q2["block/attention/wq"] == 28 * (3584 * 3584 + 3584)  # the bias: one per output
    assert q2["block/attention/wo"] == 28 * 3584 * 3584  # no o bias
    assert q3["block/attention/q_norm"] == q3["block/attention/k_norm"] == 36 * 128
    assert "block/attention/q_norm" not in q2


# --- transformers' own classes ----------------------------------------------------------------------

def _hf_counts(raw: dict) -> dict:
    """transformers' model for ``raw`` built on the meta device: numel per symllm breakdown key."""
    transformers = _transformers()
    import torch
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    names = {"embed_tokens": "embedding", "q_proj": "block/attention/wq", "k_proj": "block/attention/wk",
             "v_proj": "block/attention/wv", "o_proj": "block/attention/wo", "q_norm": "block/attention/q_norm",
             "k_norm": "block/attention/k_norm", "gate_proj": "block/feed_forward/w1",
             "down_proj": "block/feed_forward/w2", "up_proj": "block/feed_forward/w3",
             "input_layernorm": "block/attention_norm", "post_attention_layernorm": "block/ffn_norm",
             "norm": "norm", "lm_head": "lm_head"}
    out = {"total": sum(p.numel() for p in model.parameters())}  # parameters() yields a tied matrix once
    for name, p in model.named_parameters():  # named_parameters() too: a tied lm_head is not listed
        key = names[name.split(".")[-2]]
        out[key] = out.get(key, 0) + p.numel()
    return out


def _transformers():
    from .conftest import requires
    return requires("transformers")


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_every_component_equals_transformers_on_meta(kind, data):
    """For a random config.json of each supported model type, every component count and the total
    equal the numel sums of transformers' own model class built from it on the meta device."""
    raw = data.draw(family_configs()[kind])
    measured = _hf_counts(raw)
    ours = symllm.params(from_hf(raw))
    assert {k: ours.get(k, 0) for k in measured} == measured
    assert sum(v for k, v in ours.items() if k not in ("block", "total", "active")) == ours["total"]
    assert ours["active"] == ours["total"]  # a dense model: every weight is used by every token


@pytest.mark.parametrize("raw", [QWEN25_7B, QWEN3_8B])
def test_published_qwen_configs_on_meta_agree(raw):
    """The published Qwen configs built by transformers on the meta device hold symllm's counts."""
    ours, measured = symllm.params(from_hf(raw)), _hf_counts(raw)
    assert {k: ours.get(k, 0) for k in measured} == measured


@pytest.mark.parametrize("name", [n for n in symllm.preset_names() if preset_info(n)["format"] == "hf"
                                  and from_hf(preset_info(n)["config"]).n_experts is None
                                  and preset_info(n)["config"].get("model_type") in ("llama", "mistral", "qwen2", "qwen3")])
def test_hf_presets_agree_with_transformers_on_meta(name):
    """Every dense LLaMA-like preset kept as a config.json builds in transformers (meta device) with symllm's
    counts (mixture-of-experts presets: tests/test_moe.py; Phi-3, OLMo 2, Gemma: tests/test_dense_families.py)."""
    ours, measured = symllm.params(name), _hf_counts(preset_info(name)["config"])
    assert {k: ours.get(k, 0) for k in measured} == measured


# --- the torch reference model: biases and QK-norm are drawn by tests/strategies.py's configs(), so the
# numel, FlopCounterMode and saved-activation properties (tests/test_hypothesis.py, test_flops.py,
# test_memory.py) cover them ------------------------------------------------------------------------

def test_qkv_bias_and_qk_norm_closed_forms():
    """q/k/v-only biases add n_h·d_h + 2·n_kv·d_h; Qwen3's QK-norm adds 2·d_h parameters per layer."""
    base = attention().total("params")
    assert sp.expand(attention(qkv_bias=True).total("params") - base) == S.n_h * S.d_h + 2 * S.n_kv * S.d_h
    assert sp.expand(attention(qk_norm="rmsnorm").total("params") - base) == 2 * S.d_h


# --- refusing what is not modelled ----------------------------------------------------------------

@pytest.mark.parametrize("raw,start", [
    (dict(MIXTRAL_8X7B, model_type="qwen2_moe"), "num_local_experts: 8 (mixture-of-experts) is not modelled"),
    (dict(MIXTRAL_8X7B, num_experts_per_tok=9), "experts_per_token: 9 is more than n_experts 8"),
    (dict(MIXTRAL_8X7B, use_qk_norm=True), "use_qk_norm: True"),
    ({"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"], "vision_config": {},
      "text_config": dict(MIXTRAL_8X7B, model_type="llama4_text", no_rope_layers=[1, 0])},
     "text_config.no_rope_layers: expected 32 flags of 0 or 1"),
    (dict(MIXTRAL_8X7B, model_type="llama4_text", layer_types=["full_attention"] * 32), "layer_types: "),
    ({"model_type": "gpt2", "n_embd": 768, "n_layer": 12}, "model_type: 'gpt2' is not modelled"),
    (dict(QWEN25_7B, model_type="starcoder2"), "model_type: 'starcoder2'"),
    (dict(QWEN25_7B, model_type="llama", num_local_experts=8), "num_local_experts: 8"),
    (dict(QWEN25_7B, model_type="llama", num_experts_per_tok=2), "num_experts_per_tok: 2"),
    (dict(QWEN25_7B, model_type="llama", use_qk_norm=True), "use_qk_norm: True"),
    (dict(QWEN25_7B, model_type="llama", attention_chunk_size=8192), "attention_chunk_size: 8192"),
    (dict(QWEN25_7B, model_type="llama", sliding_window=4096), "sliding_window: 4096"),
    (dict(QWEN25_7B, attention_bias=True), "attention_bias: True"),
    (dict(QWEN3_8B, mlp_bias=True), "mlp_bias: True"),
    (dict(QWEN3_8B, hidden_act="gelu"), "hidden_act: 'gelu'"),
    (dict(QWEN3_8B, architectures=["Qwen3ForSequenceClassification"]), "architectures: "),
    (dict(QWEN3_8B, partial_rotary_factor=0.5), "partial_rotary_factor: 0.5"),
])
def test_unmodelled_configs_are_refused_in_one_line(tmp_path, cli, raw, start):
    """A model type or a key symllm does not model is refused naming it (CLI: one line, exit 2),
    never counted wrong."""
    assert_refused_in_one_line(cli, tmp_path, raw, start)


def test_disabled_windows_are_counted():
    """A window that is switched off is not refused: Qwen's use_sliding_window false, Mistral's null,
    Qwen's use_sliding_window true with every layer below max_window_layers."""
    assert symllm.params(from_hf(dict(MISTRAL_V01, sliding_window=None)))["total"] == 7_241_732_096
    assert from_hf(dict(QWEN25_7B, use_sliding_window=True, max_window_layers=28)).qkv_bias


def test_rope_parameters_are_read():
    """transformers 5 writes rope_theta inside rope_parameters; it is read from there."""
    raw = dict(QWEN3_8B, rope_parameters={"rope_type": "default", "rope_theta": 5e6})
    del raw["rope_theta"]
    assert from_hf(raw).rope_theta == 5e6


@given(hf_configs(), st.sampled_from(sorted(HF_UNMODELLED)), st.sampled_from([True, 2, 16, 0.5, [1, 0], "x"]))
def test_any_unmodelled_key_is_refused_naming_it(raw, key, value):
    """Any supported config.json with an architecture key symllm does not model set to a non-neutral
    value is refused, the error naming that key first (one line), never counted."""
    with pytest.raises(symllm.SymllmError) as info:
        from_hf(dict(raw, **{key: value}))
    assert str(info.value).startswith(f"{key}: ") and "\n" not in str(info.value)


def test_count_json_and_text_for_the_qwen_presets(cli):
    """count --json gives the published totals; the text table says which variants it counted."""
    for name, total, line in (("qwen2.5-7b", 7_615_616_512, "(biases on wq, wk, wv)"),
                              ("qwen3-8b", 8_190_735_360, "(QK-norm (rmsnorm of width d_h))")):
        r = cli(["count", name, "--json"])
        assert r.code == 0 and json.loads(r.out)["params"]["total"] == total
        assert line in cli(["count", name]).out.splitlines()


# --- configs read as transformers 5 builds them (issue 25 item 6) -----------------------------------------

_SMALL = {"hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24,
          "vocab_size": 40, "num_hidden_layers": 4}
_QWEN2_WINDOW = dict(_SMALL, model_type="qwen2", use_sliding_window=True, sliding_window=16, max_window_layers=2)
_LLAMA4_TEXT = dict(_SMALL, model_type="llama4_text", num_local_experts=2, head_dim=4)


def _transformers_refuses(raw: dict) -> bool:
    """Whether transformers 5.23 refuses to build the config (its strict dataclass or its own checks)."""
    transformers = _transformers()
    try:
        transformers.AutoConfig.for_model(**raw)
    except Exception:
        return True
    return False


@pytest.mark.parametrize("raw,start", [
    (dict(_QWEN2_WINDOW, max_window_layers=4.0), "max_window_layers: expected a non-negative integer, got 4.0"),
    (dict(_QWEN2_WINDOW, use_sliding_window="false"), "use_sliding_window: expected True or False, got 'false'"),
    (dict(_QWEN2_WINDOW, use_sliding_window=1), "use_sliding_window: expected True or False, got 1"),
    (dict(_QWEN2_WINDOW, layer_types=["full_attention"] * 3), "layer_types: 3 entries for 4 layers"),
    (dict(_QWEN2_WINDOW, layer_types=["full_attention"] * 3 + ["local"]), "layer_types: unknown 'local'"),
    (dict(_LLAMA4_TEXT, intermediate_size=None), "intermediate_size: expected a positive integer, got None"),
    (dict(_LLAMA4_TEXT, interleave_moe_layer_step=0), "interleave_moe_layer_step: expected a positive integer, got 0"),
    (dict(_LLAMA4_TEXT, num_hidden_layers=4.0), "num_hidden_layers: expected a positive integer, got 4.0"),
    (dict(_LLAMA4_TEXT, num_hidden_layers=""), "num_hidden_layers: expected a positive integer, got ''"),
    (dict(_LLAMA4_TEXT, num_hidden_layers=float("nan")), "num_hidden_layers: expected a positive integer, got nan"),
    ({"model_type": "llama4", "text_config": dict(_LLAMA4_TEXT, num_hidden_layers=4.0)},
     "text_config.num_hidden_layers: expected a positive integer, got 4.0"),
    (dict(_SMALL, model_type="mistral", num_key_value_heads=None), "num_key_value_heads: expected a positive integer, got None"),
    (dict(_SMALL, model_type="llama", hidden_size=16.0), "hidden_size: expected a positive integer, got 16.0"),
    (dict(_SMALL, model_type="qwen3", head_dim=None), "head_dim: expected a positive integer, got None"),
])
def test_what_transformers_refuses_is_refused_in_one_line(tmp_path, cli, raw, start):
    """A value transformers 5's config classes refuse (a float or string where an int or a bool belongs,
    layer_types of the wrong length or with unknown names, a null size, a zero step) is one line and
    exit 2 here too, never read another way (4.0 as every layer windowed, "false" as true, 0 as 1)."""
    assert _transformers_refuses(raw)
    assert_refused_in_one_line(cli, tmp_path, raw, start)


def test_qwen2_window_layers_as_transformers_derives_them():
    """max_window_layers 4 of 4 layers: transformers' layer_types are all full, and so is symllm's count;
    max_window_layers 2: layers 2 and 3 slide."""
    transformers = _transformers()
    for top, sliding in ((4, []), (2, [2, 3])):
        config = transformers.AutoConfig.for_model(**dict(_QWEN2_WINDOW, max_window_layers=top))
        assert [i for i, t in enumerate(config.layer_types) if t == "sliding_attention"] == sliding
        cfg = from_hf(dict(_QWEN2_WINDOW, max_window_layers=top))
        assert [i for i, kind in enumerate(cfg.layer_kinds()) if kind.window == "sliding"] == sliding
        assert (cfg.sliding_window is None) == (not sliding)


@pytest.mark.parametrize("inner_type", ["llama", "qwen2", None])
def test_llama4_text_config_is_llama4_text_whatever_it_says(inner_type):
    """transformers builds a llama4 config's text_config as Llama 4 text even when it says another
    model_type; symllm counts that model (transformers' on the meta device), not a dense llama."""
    transformers, torch = _transformers(), requires("torch")
    text = dict(_SMALL, head_dim=4, **({"model_type": inner_type} if inner_type else {}))
    config = transformers.AutoConfig.for_model("llama4", text_config=text)
    assert type(config.text_config).__name__ == "Llama4TextConfig"
    with torch.device("meta"):
        model = transformers.Llama4ForCausalLM(config.text_config)
    total = sum(p.numel() for p in model.parameters())
    assert symllm.params(from_hf({"model_type": "llama4", "text_config": text}))["total"] == total


def test_absent_kv_heads_take_the_class_default():
    """num_key_value_heads absent is the class's default (Mistral's 8, Qwen2's 32), as transformers builds."""
    for kind, heads in (("mistral", 16), ("qwen2", 64), ("llama4_text", 16)):  # not the class's default
        raw = dict(_SMALL, model_type=kind, num_attention_heads=heads, hidden_size=heads * 4)
        del raw["num_key_value_heads"]
        config = _transformers().AutoConfig.for_model(**raw)
        assert from_hf(raw).n_kv_heads == config.num_key_value_heads


@pytest.mark.parametrize("raw,start", [
    (dict(_LLAMA4_TEXT, num_hidden_layers=9007199254740993), "num_hidden_layers: expected an integer <="),
    ({"model_type": "llama4", "text_config": dict(_LLAMA4_TEXT, num_hidden_layers=2**40)},
     "text_config.num_hidden_layers: expected an integer <="),
    (dict(_QWEN2_WINDOW, num_hidden_layers=2147483648), "num_hidden_layers: expected an integer <="),
    (dict(_SMALL, num_attention_heads=2**64), "num_attention_heads: expected an integer <= 2**63 - 1"),
])
def test_huge_counts_are_refused_before_anything_is_built(tmp_path, cli, within_a_minute, raw, start):
    """Layer counts past 2**20 (transformers builds one module per layer) and sizes past int64 are one
    line, at once: no MemoryError building per-layer lists, no report that never ends (``symllm report`` of
    the config file, in-process, failed after a minute rather than hanging the suite)."""
    assert_refused_in_one_line(cli, tmp_path, raw, start, command="report")


def test_qwen3_moe_window_is_in_every_layer():
    """Qwen3-MoE's class has no max_window_layers: with use_sliding_window every layer of transformers'
    model has the window (meta device), and symllm windows every layer."""
    transformers, torch = _transformers(), requires("torch")
    raw = dict(_SMALL, model_type="qwen3_moe", num_experts=2, num_experts_per_tok=1, moe_intermediate_size=8,
               use_sliding_window=True, sliding_window=16, max_window_layers=2)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**raw))
    assert [layer.self_attn.sliding_window for layer in model.model.layers] == [16] * 4
    cfg = from_hf(raw)
    assert cfg.sliding_window == 16 and [kind.window for kind, _ in cfg.layers] == ["sliding"]


@pytest.mark.parametrize("name", [n for n in symllm.preset_names() if preset_info(n)["format"] == "hf"])
def test_each_hf_preset_comes_from_its_family(name):
    """Every config.json preset is read by the family of its model_type, which names the checkpoint the
    preset's source is (where the family's presets come from)."""
    from symllm.arch.families.hf import family_of
    info = preset_info(name)
    family = family_of(info["config"].get("model_type", "llama"))
    assert info["source"].split()[0].split("/")[-1] in family.presets


def test_query_temperature_is_its_own_axis():
    """A layer without RoPE does no rotation and, unless it has the query temperature, no scaling: per layer of
    b·s tokens, RoPE rotates (n_h + n_kv)·d_h elements at 3 FLOPs each (2 multiplies, 1 add), the temperature
    multiplies the n_h·d_h query elements once. Llama 4 sets the temperature on its layers without RoPE, as
    Llama4TextAttention does (``attn_temperature_tuning and not use_rope``), and not where tuning is off."""
    from symllm.arch.layers import LayerKind
    b, s, n_h, n_kv, d_h = S.b, S.s, S.n_h, S.n_kv, S.d_h
    rope = attention(kind=LayerKind()).total("elementwise")
    nope = attention(kind=LayerKind(rotary=False)).total("elementwise")
    tempered = attention(kind=LayerKind(rotary=False, temperature=True)).total("elementwise")
    assert sp.expand(rope - nope - 3 * b * s * (n_h + n_kv) * d_h) == 0
    assert sp.expand(tempered - nope - b * s * n_h * d_h) == 0
    ropes = [1, 1, 1, 0]  # transformers' naming: 0 is a layer without RoPE
    for tuning in (True, False):
        kinds = from_hf(dict(_LLAMA4_TEXT, no_rope_layers=ropes, attn_temperature_tuning=tuning)).layer_kinds()
        assert [k.temperature for k in kinds] == [False, False, False, tuning]
