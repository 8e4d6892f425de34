"""Real checkpoints' config.json files as their makers publish them: keys transformers never reads (accepted
where they state what it builds, refused where they would say another model), Kimi-K2's ``kimi_k2`` model
type, Kimi-K2.5's multimodal wrapper, and MiniMax-M2 (``minimax_m2``: parts symllm has, put together).

Expected numbers come from transformers' own classes built from the same dicts on the meta device
(``Qwen3MoeForCausalLM``, ``Glm4MoeForCausalLM``, ``DeepseekV3ForCausalLM``, ``Kimi_K25ForConditionalGeneration``
without its vision tower and projector, ``MiniMaxM2ForCausalLM``; run on small CPU models under FlopCounterMode
through its own cache for FLOPs), published checkpoint totals and hand arithmetic written here. The config dicts are the published files (each cited where it is
written); the presets that ship one are read here as they are.
"""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.api import by_kind
from symllm.arch.config import from_hf, preset_info
from symllm.costs import phases as costs

from .conftest import requires, training_step_flops
from .test_mla import _hf_kinds as _mla_kinds, _hf_model
from .strategies import cohere_configs, kimi_configs, minimax_m2_configs
from .test_moe import _active_from_hf, _hf_kinds as _moe_kinds
from .test_windows import generation_agrees

#: Qwen/Qwen3-Coder-480B-A35B-Instruct config.json (the qwen3-coder-480b-a35b preset ships it whole)
QWEN3_CODER = preset_info("qwen3-coder-480b-a35b")["config"]
#: moonshotai/Kimi-K2-Instruct config.json: the kimi-k2 preset's dict with the model type and auto_map the
#: published file has (the preset says deepseek_v3; Moonshot's deploy guidance: "we set "model_type":
#: "kimi_k2" in config.json ... you can manually change the model_type to "deepseek_v3""), and its
#: pretraining_tp and ep_size
KIMI_K2 = {**preset_info("kimi-k2")["config"], "model_type": "kimi_k2", "ep_size": 1, "pretraining_tp": 1,
           "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config",
                        "AutoModel": "modeling_deepseek.DeepseekV3Model",
                        "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"}}
#: moonshotai/Kimi-K2.5 config.json (the kimi-k2.5 preset ships it without its quantization_config)
KIMI_K25 = preset_info("kimi-k2.5")["config"]


def _small(raw: dict, layers: int = 2, experts: int = 4) -> dict:
    """A config cut to ``layers`` layers and ``experts`` experts, every other key as published (built on CPU
    in a blink; the published sizes are checked on the meta device below)."""
    out = {**raw, "num_hidden_layers": layers}
    for key in ("num_experts", "num_local_experts", "n_routed_experts"):
        if key in out:
            out[key] = experts
    out["num_experts_per_tok"] = min(out["num_experts_per_tok"], experts)
    return out


# --- keys transformers never reads ------------------------------------------------------------------

def test_qwen3_coder_as_published_equals_transformers_on_meta():
    """Qwen3-Coder-480B-A35B-Instruct's config.json states ``use_qk_norm: true``, ``qkv_bias: false`` and
    ``shared_expert_intermediate_size: 0``, which Qwen3MoeForCausalLM never reads (it always has the
    QK-norm, q/k/v biases come from attention_bias, no shared expert): read as transformers builds it, every
    kind of parameter, the total and the active count equal its model on the meta device."""
    measured = _moe_kinds(_hf_model(QWEN3_CODER))
    measured["active"] = _active_from_hf(QWEN3_CODER, measured)
    assert by_kind(symllm.params(from_hf(QWEN3_CODER))) == measured
    assert by_kind(symllm.params("qwen3-coder-480b-a35b")) == measured


def test_tongyi_deepresearch_use_qk_norm_is_read_as_qwen3_moe():
    """Tongyi-DeepResearch-30B-A3B is Qwen3-30B-A3B's architecture with ``use_qk_norm: true`` in its
    ``qwen3_moe`` config (issue 39's report of the published file): counted as Qwen3MoeForCausalLM builds it,
    the same as without the key."""
    raw = {**preset_info("qwen3-30b-a3b")["config"], "use_qk_norm": True}
    measured = _moe_kinds(_hf_model(raw))
    measured["active"] = _active_from_hf(raw, measured)
    assert by_kind(symllm.params(from_hf(raw))) == measured == by_kind(symllm.params("qwen3-30b-a3b"))


def test_glm45_air_decoder_sparse_step_is_read_as_glm4_moe():
    """GLM-4.5-Air's config.json carries ``decoder_sparse_step: 1`` (issue 39's report of the published
    file), which Glm4MoeForCausalLM never reads (its MoE layers are those from first_k_dense_replace on):
    counted as transformers builds it, on the meta device."""
    raw = {**preset_info("glm-4.5-air")["config"], "decoder_sparse_step": 1}
    assert by_kind(symllm.params(from_hf(raw))) == _mla_kinds(_hf_model(raw), raw) == by_kind(symllm.params("glm-4.5-air"))


@pytest.mark.parametrize("raw, line", [
    ({**QWEN3_CODER, "use_qk_norm": False}, "use_qk_norm: False is ignored by transformers' qwen3_moe"),
    ({**QWEN3_CODER, "qkv_bias": True}, "qkv_bias: True is ignored by transformers' qwen3_moe"),
    ({**QWEN3_CODER, "shared_expert_intermediate_size": 2560},
     "shared_expert_intermediate_size: 2560 is ignored by transformers' qwen3_moe"),
    ({**preset_info("glm-4.5-air")["config"], "decoder_sparse_step": 2},
     "decoder_sparse_step: 2 is ignored by transformers' glm4_moe"),
    ({**KIMI_K25, "text_config": {**KIMI_K25["text_config"], "model_type": "qwen3_moe"}},
     "text_config.model_type: 'qwen3_moe' is not modelled inside kimi_k25"),
    ({**KIMI_K25, "tie_word_embeddings": "false"}, "tie_word_embeddings: expected True or False, got 'false'"),
])
def test_a_value_that_would_change_the_model_is_refused_in_one_line(cli, tmp_path, raw, line):
    """The same keys saying something transformers would not build (no QK-norm, q/k/v biases, a shared expert,
    a MoE layer every other layer), or a wrapper around another language model, are refused: one line
    naming the key and the value, exit 2, nothing on stdout."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", str(path)])
    assert r.code == 2 and r.out == "" and r.err.startswith(f"symllm: error: {line}") and r.err.count("\n") == 1


# --- Kimi-K2 and Kimi-K2.5 --------------------------------------------------------------------------

def test_kimi_k2_model_type_is_deepseek_v3(cli, tmp_path):
    """Kimi-K2-Instruct's own config.json (``model_type: kimi_k2``, its ``auto_map`` to DeepSeek's remote
    DeepseekV3Config and DeepseekV3ForCausalLM: transformers has no kimi_k2 class, and its Kimi_K25Config
    rewrites a kimi_k2 text_config to deepseek_v3) is counted as DeepseekV3ForCausalLM builds the same dict
    (meta device), and says how it was read."""
    transformers = requires("transformers")
    assert "kimi_k2" not in transformers.models.auto.configuration_auto.CONFIG_MAPPING_NAMES
    as_v3 = {**KIMI_K2, "model_type": "deepseek_v3"}
    del as_v3["auto_map"]
    cfg = from_hf(KIMI_K2)
    assert by_kind(symllm.params(cfg)) == _mla_kinds(_hf_model(as_v3), as_v3) == by_kind(symllm.params("kimi-k2"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(KIMI_K2))
    r = cli(["count", str(path)])
    assert r.code == 0 and "read as deepseek_v3" in r.out


def _kimi_k25_text(raw: dict) -> int:
    """The parameters of transformers' Kimi_K25ForConditionalGeneration for ``raw`` (meta device) outside its
    vision tower and projector: the language model and its lm_head, tied or not as the wrapper decides."""
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw)
    assert type(config.text_config).__name__ == "DeepseekV3Config"
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert type(model).__name__ == "Kimi_K25ForConditionalGeneration"
    return sum(p.numel() for name, p in model.named_parameters()
               if not name.startswith(("model.vision_tower.", "model.mm_projector.")))


@pytest.mark.parametrize("tie", [False, True, None])
def test_kimi_k25_counts_the_language_model_transformers_builds(tie):
    """Kimi-K2.5's config.json (a kimi_k25 wrapper, its text_config kimi_k2) counts the language model of
    Kimi_K25ForConditionalGeneration (meta device, the vision tower and projector left out): the published
    file (tie_word_embeddings false at the top) and the same with the wrapper's own tie_word_embeddings true
    or absent (its default, true: the wrapper's flag ties the lm_head, whatever the text_config says), on a
    config cut to 2 layers of 4 experts, every other key as published."""
    raw = {k: v for k, v in KIMI_K25.items() if k != "tie_word_embeddings"}
    raw["text_config"] = _small(KIMI_K25["text_config"])
    if tie is not None:
        raw["tie_word_embeddings"] = tie
    cfg = from_hf(raw)
    assert symllm.params(cfg)["total"] == _kimi_k25_text(raw)
    assert cfg.tie_embeddings is (tie is not False) and "vision encoder" in cfg.note


@given(kimi_configs())
def test_random_kimi_configs_equal_transformers(raw):
    """Random Kimi-K2 configs (model_type kimi_k2) and Kimi-K2.5 wrappers (text_config kimi_k2 or deepseek_v3,
    the wrapper's tie_word_embeddings true, false or absent, the text_config's drawn apart): kimi_k2 counts
    per kind as DeepseekV3ForCausalLM of the same dict; kimi_k25 counts what Kimi_K25ForConditionalGeneration
    builds outside its vision tower and projector (meta device)."""
    cfg = from_hf(raw)
    if raw["model_type"] == "kimi_k2":
        as_v3 = {k: v for k, v in raw.items() if k != "auto_map"} | {"model_type": "deepseek_v3"}
        assert by_kind(symllm.params(cfg)) == _mla_kinds(_hf_model(as_v3), as_v3)
    else:
        assert symllm.params(cfg)["total"] == _kimi_k25_text(raw)


def test_kimi_k25_preset_equals_transformers_and_says_the_vision_tower_is_not_counted(cli):
    """The kimi-k2.5 preset (the published config.json, 61 layers of 384 experts) equals transformers' language
    model on the meta device, and count says the vision encoder is not counted."""
    assert symllm.params("kimi-k2.5")["total"] == _kimi_k25_text(KIMI_K25)
    r = cli(["count", "kimi-k2.5"])
    assert r.code == 0 and "the vision encoder and projector are not" in r.out.replace("\n  ", " ")


def test_kimi_k25_with_its_int4_quantization_config_is_read(tmp_path, cli):
    """The published file carries its int4 compressed-tensors quantization_config (at the top, and again in
    text_config): the wrapper's is read whole as the weight format, or refused in one line; never a
    traceback."""
    q = {"config_groups": {"group_0": {"input_activations": None, "output_activations": None,
                                       "targets": ["Linear"],
                                       "weights": {"actorder": None, "block_structure": None, "dynamic": False,
                                                   "group_size": 32, "num_bits": 4, "observer": "minmax",
                                                   "observer_kwargs": {}, "strategy": "group", "symmetric": True,
                                                   "type": "int"}}},
         "format": "pack-quantized",
         "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
         "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed"}
    raw = {**KIMI_K25, "quantization_config": q, "text_config": {**KIMI_K25["text_config"], "quantization_config": q}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", str(path)])
    assert (r.code == 0 and "1,026,408,209,408" in r.out) or \
        (r.code == 2 and r.err.startswith("symllm: error: quantization_config") and r.err.count("\n") == 1)


# --- MiniMax-M2 ---------------------------------------------------------------------------------------

#: MiniMaxAI/MiniMax-M2.5 config.json (the minimax-m2.5 preset ships it without its FP8 quantization_config)
MINIMAX = preset_info("minimax-m2.5")["config"]


def test_minimax_m25_equals_transformers_and_the_published_checkpoint():
    """MiniMax-M2.5 as published: each kind of parameter, the total and the active count equal
    MiniMaxM2ForCausalLM on the meta device; and the checkpoint's stored numbers, 228,703,644,928 (the Hugging
    Face API's safetensors total for MiniMaxAI/MiniMax-M2.5, as a public test quotes it:
    MINIMAX_SAFETENSORS_TRUTH), are these parameters plus, by hand, the router's e_score_correction_bias
    (a buffer: 256 floats in each of 62 layers) and the FP8 checkpoint's 128 × 128 block scales of every
    quantized linear (q 6144 × 3072: 48 × 24 blocks; k and v 1024 × 3072: 8 × 24; o 3072 × 6144: 24 × 48;
    each expert's w1 and w3 1536 × 3072: 12 × 24, w2 3072 × 1536: 24 × 12). No multi-token-prediction module
    is stored, whatever use_mtp says."""
    measured = _moe_kinds(_hf_model(MINIMAX))
    measured["active"] = _active_from_hf(MINIMAX, measured)
    ours = symllm.params("minimax-m2.5")
    assert by_kind(ours) == measured
    scales = 62 * (48 * 24 + 2 * 8 * 24 + 24 * 48 + 256 * (2 * 12 * 24 + 24 * 12))
    assert ours["total"] + 62 * 256 + scales == 228_703_644_928


@given(minimax_m2_configs(), st.integers(1, 2), st.integers(1, 6), st.integers(0, 3))
def test_random_minimax_m2_equals_transformers(raw, b, s, n):
    """Random MiniMax-M2 configs (the keys MiniMax's code writes present or not): parameters per kind and the
    active count equal MiniMaxM2ForCausalLM's on the meta device; a prefill of s tokens and n decode steps
    through its own cache (eager experts: each token through its k experts; the QK-norms over the whole
    width and the partial RoPE are element-wise) have symllm's matmul FLOPs, and the cache holds what symllm
    counts."""
    measured = _moe_kinds(_hf_model(raw))
    measured["active"] = _active_from_hf(raw, measured)
    cfg = from_hf(raw)
    assert by_kind(symllm.params(cfg)) == measured
    generation_agrees(raw, b, s, n)


@pytest.mark.parametrize("change, line", [
    ({"attn_type_list": [1] * 61 + [0]}, "attn_type_list: [1, 1, 1"),
    ({"qk_norm_type": "per_head"}, "qk_norm_type: 'per_head' is ignored by transformers' minimax_m2"),
    ({"use_qk_norm": False}, "use_qk_norm: False is ignored by transformers' minimax_m2"),
    ({"scoring_func": "softmax"}, "scoring_func: 'softmax' is ignored by transformers' minimax_m2"),
    ({"use_routing_bias": 1}, "use_routing_bias: 1 is ignored by transformers' minimax_m2"),
    ({"shared_intermediate_size": 1536}, "shared_intermediate_size: 1536 is ignored by transformers' minimax_m2"),
    ({"rope_parameters": {"partial_rotary_factor": 0.25}}, "partial_rotary_factor: 0.25 disagrees with rotary_dim 64"),
    ({"num_experts": 128}, "num_experts: 128 differs from num_local_experts 256"),
])
def test_minimax_m2_keys_saying_another_model_are_refused(cli, tmp_path, change, line):
    """A released key saying what transformers' class does not build (lightning-attention layers, a per-head
    QK-norm or none, softmax routing, no routing bias, a shared expert), or two statements that disagree, is
    refused in one line naming it: exit 2, nothing on stdout."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**MINIMAX, **change}))
    r = cli(["count", str(path)])
    assert r.code == 2 and r.out == "" and r.err.startswith(f"symllm: error: {line}") and r.err.count("\n") == 1


def test_verify_a_saved_minimax_m2_checkpoint(tmp_path, cli):
    """transformers' save_pretrained of a tiny MiniMax-M2 (MiniMax's own layout: block_sparse_moe, experts'
    w1/w2/w3, the routing-bias buffer): verify finds every tensor, and its bytes are the parameters' (bf16)
    plus the buffer's n_e values a layer."""
    transformers, torch = requires("transformers"), requires("torch")
    raw = {**_small(MINIMAX, layers=2, experts=4), "attn_type_list": [1, 1], "vocab_size": 64, "hidden_size": 32,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "rotary_dim": 4,
           "intermediate_size": 16}
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**raw)).to(torch.bfloat16)
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    r = cli(["verify", str(tmp_path)])
    assert r.code == 0 and "agrees with the component tree" in r.out, r.out + r.err
    out = json.loads(cli(["count", str(tmp_path), "--json"]).out)
    assert out["params"]["total"] == sum(p.numel() for p in model.parameters())
    assert out["checkpoint"]["bytes"] == 2 * (out["params"]["total"] + 2 * 4)


# --- Command-R --------------------------------------------------------------------------------------

#: CohereForAI/c4ai-command-r-v01 config.json (the command-r-v01 preset ships it)
COMMAND_R = preset_info("command-r-v01")["config"]
#: transformers' CohereForCausalLM module names -> symllm's kinds
_COHERE = {"q_proj": "attention/wq", "k_proj": "attention/wk", "v_proj": "attention/wv", "o_proj": "attention/wo",
           "q_norm": "attention/q_norm", "k_norm": "attention/k_norm", "gate_proj": "feed_forward/w1",
           "down_proj": "feed_forward/w2", "up_proj": "feed_forward/w3", "input_layernorm": "attention_norm",
           "embed_tokens": "embedding", "norm": "norm", "lm_head": "lm_head"}


def _cohere_kinds(raw: dict) -> dict:
    """numel per symllm kind of CohereForCausalLM for ``raw`` on the meta device (a tied matrix once), the
    total, and the active count (dense: the total)."""
    model = _hf_model(raw)
    out = {"total": sum(p.numel() for p in model.parameters())}
    for name, p in model.named_parameters():
        parts = name.split(".")
        kind = _COHERE[parts[-2]]
        out[kind] = out.get(kind, 0) + p.numel()
    out["active"] = out["total"]
    return out


def test_command_r_equals_transformers_and_its_published_size():
    """c4ai-command-r-v01 as published: each kind of parameter (one input_layernorm a block, no
    post_attention_layernorm), the total and the active count equal CohereForCausalLM on the meta device;
    the total is Cohere's '35 billion parameter' model (tests/data/published_params.json)."""
    assert by_kind(symllm.params("command-r-v01")) == _cohere_kinds(COMMAND_R)
    assert round(symllm.params("command-r-v01")["total"] / 1e9) == 35


#: the model types whose per-kind parameter property against transformers lives here (tests/test_elementwise.py)
KINDS = ("cohere",)


@given(cohere_configs(), st.integers(1, 2), st.integers(1, 6), st.integers(0, 3))
def test_random_command_r_equals_transformers(raw, b, s, n):
    """Random Command-R configs (MHA/GQA/MQA, attention biases, Command-R+'s per-head LayerNorm QK-norm with
    its (heads, head_dim) weights, tied or not): parameters per kind equal CohereForCausalLM's on the meta
    device; a prefill of s tokens and n decode steps through its own cache have symllm's matmul FLOPs (the
    parallel block, the LayerNorms and the logit scale add none), and the cache holds what symllm counts."""
    cfg = from_hf(raw)
    assert by_kind(symllm.params(cfg)) == _cohere_kinds(raw)
    generation_agrees(raw, b, s, n)


@given(cohere_configs(), st.integers(1, 2), st.integers(1, 5))
def test_random_command_r_training_flops_equal_transformers(torch, raw, b, s):
    """A training step of CohereForCausalLM (forward with every position's logits, then backward) on CPU has
    symllm's training matmul FLOPs under FlopCounterMode."""
    flops = training_step_flops(_hf_model(raw, "cpu"), raw["vocab_size"], b, s)
    assert costs.workload(from_hf(raw), batch=b, seq=s, logits="all")["flops"]["training_step"] == flops


def test_command_r_block_by_hand():
    """One Command-R block's parameters by hand: 4 d² attention weights (MHA), 3 d·d_ff SwiGLU weights and
    one LayerNorm weight of d, no bias (c4ai-command-r-v01: d 8192, d_ff 22528); the model: 40 of them, the
    tied embedding V·d and the final LayerNorm d."""
    d, f, V, L = 8192, 22528, 256000, 40
    counts = symllm.params("command-r-v01")
    assert counts["block"] == 4 * d * d + 3 * d * f + d
    assert counts["total"] == L * (4 * d * d + 3 * d * f + d) + V * d + d


def test_command_r_refuses_a_null_logit_scale(cli, tmp_path):
    """transformers multiplies the logits by logit_scale: a null one is refused in one line, naming it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**COMMAND_R, "logit_scale": None}))
    r = cli(["count", str(path)])
    assert r.code == 2 and r.out == "" and r.err.startswith("symllm: error: logit_scale: null") and r.err.count("\n") == 1


@pytest.mark.parametrize("qk_norm", [False, True])
def test_verify_a_saved_command_r_checkpoint(tmp_path, cli, qk_norm):
    """transformers' save_pretrained of a tiny Command-R (tied, GQA), and of Command-R+'s layout (use_qk_norm:
    q_norm and k_norm stored as (heads, head_dim) tensors): verify finds every tensor, name and shape
    (input_layernorm only, no post_attention_layernorm), and the file's bytes are the parameters' in bf16."""
    transformers, torch = requires("transformers"), requires("torch")
    raw = {**COMMAND_R, "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 16, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
           "use_qk_norm": qk_norm}
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**raw)).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    r = cli(["verify", str(tmp_path)])
    assert r.code == 0 and "agrees with the component tree" in r.out, r.out + r.err
    out = json.loads(cli(["count", str(tmp_path), "--json"]).out)
    assert out["checkpoint"]["bytes"] == 2 * out["params"]["total"] == 2 * sum(p.numel() for p in model.parameters())
