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
from symllm.arch.config import HF_UNMODELLED, from_hf, preset_info

from .strategies import hf_configs

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


@given(hf_configs())
def test_every_component_equals_transformers_on_meta(raw):
    """For a random config.json of each supported model type, every component count and the total
    equal the numel sums of transformers' own model class built from it on the meta device."""
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
                                  and "num_local_experts" not in preset_info(n)["config"]])
def test_hf_presets_agree_with_transformers_on_meta(name):
    """Every dense preset kept as a config.json builds in transformers (meta device) with symllm's counts
    (mixture-of-experts presets: tests/test_moe.py)."""
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
    (dict(MIXTRAL_8X7B, model_type="qwen2_moe"), "model_type: 'qwen2_moe' (mixture-of-experts"),
    (dict(MIXTRAL_8X7B, num_experts_per_tok=9), "experts_per_token: 9 is more than n_experts 8"),
    (dict(MIXTRAL_8X7B, use_qk_norm=True), "use_qk_norm: True"),
    ({"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"], "vision_config": {},
      "text_config": dict(MIXTRAL_8X7B, model_type="llama4_text", no_rope_layers=[1, 0])},
     "text_config.no_rope_layers: expected 32 flags of 0 or 1"),
    (dict(MIXTRAL_8X7B, model_type="llama4_text", interleave_moe_layer_step=2, no_rope_layers=[0] + [1] * 31),
     "nope_layers: layer 0 has no RoPE and no experts"),
    (dict(MIXTRAL_8X7B, model_type="llama4_text", layer_types=["full_attention"] * 32), "layer_types: "),
    ({"model_type": "gpt2", "n_embd": 768, "n_layer": 12}, "model_type: 'gpt2' is not modelled"),
    (dict(QWEN25_7B, model_type="gemma"), "model_type: 'gemma'"),
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
    with pytest.raises(symllm.SymllmError) as info:
        from_hf(raw)
    assert str(info.value).startswith(start) and "\n" not in str(info.value)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", path])
    assert (r.code, r.out) == (2, "") and r.err == f"symllm: error: {info.value}\n"


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
