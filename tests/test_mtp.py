"""Multi-token-prediction modules that transformers does not build: reported apart from the total (``mtp``).

Nemotron-H's (``num_nextn_predict_layers``, the layers of ``mtp_layers_block_type`` /
``mtp_hybrid_override_pattern``) and Qwen3-Next's / Qwen3.5's (``mtp_num_hidden_layers``), laid out as vLLM
builds them (``vllm/model_executor/models/nemotron_h_mtp.py``: ``NemotronHMultiTokenPredictor``;
``qwen3_next_mtp.py``: ``Qwen3NextMultiTokenPredictor``): two RMSNorms of ``d`` (``enorm``/``hnorm``,
``pre_fc_norm_embedding``/``pre_fc_norm_hidden``), a ``2d -> d`` fusion without bias (``eh_proj``, ``fc``), the
module's decoder layers, a last RMSNorm (``final_layernorm``, ``norm``); the embedding and the output head are
the model's (vLLM loads them from the main model's ``embeddings`` / ``embed_tokens`` and ``lm_head``).

Expected numbers: those layers' parameters as transformers builds the same layer types in the main model (on
the meta device), the rest by hand; the total as transformers' model holds it (no MTP)."""
import json

import pytest
from hypothesis import given

import symllm
from symllm.arch.catalogue import preset_info
from symllm.arch.config import from_hf

from .conftest import requires
from .strategies import dsa_configs


def _meta(raw: dict):
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def _layer(model, i: int) -> int:
    """Parameters of transformers' decoder layer ``i`` (``model.layers.{i}.*``)."""
    return sum(p.numel() for name, p in model.named_parameters() if name.startswith(f"model.layers.{i}."))


def _nemotron(**changes) -> dict:
    """Nemotron-3 Nano 30B-A3B's config.json (the preset's) with one multi-token-prediction module, as
    Nemotron-3 Super's config states it: an attention layer and a MoE layer."""
    return {**preset_info("nemotron-3-nano-30b-a3b")["config"], "num_nextn_predict_layers": 1,
            "mtp_hybrid_override_pattern": "*E", **changes}


def test_nemotron_h_mtp_is_two_norms_a_fusion_its_layers_and_a_norm():
    """The module's attention and MoE layers have the parameters of NemotronHForCausalLM's own attention (layer 5,
    ``*``) and MoE (layer 1, ``E``) layers on the meta device; enorm, hnorm, final_layernorm (3d) and eh_proj
    (2d·d) by hand; transformers builds no MTP: symllm's total is its model's, the module apart. By hand too:
    d = 2688; attention 2688 + 2·2688·32·128 + 2·2688·2·128; MoE 2688 + 128·2688 (router) + 128·2·2688·1856
    (ungated experts) + 2·2688·3712 (shared)."""
    raw = _nemotron()
    model, d = _meta(raw), raw["hidden_size"]
    assert raw["hybrid_override_pattern"][5] == "*" and raw["hybrid_override_pattern"][1] == "E"
    counts = symllm.params(from_hf(raw))
    assert counts["total"] == sum(p.numel() for p in model.parameters())
    assert counts["mtp"] == 3 * d + 2 * d * d + _layer(model, 5) + _layer(model, 1)
    attention = d + 2 * d * 32 * 128 + 2 * d * 2 * 128
    moe = d + 128 * d + 128 * 2 * d * 1856 + 2 * d * 3712
    assert counts["mtp"] == 3 * d + 2 * d * d + attention + moe == 1_335_325_824


def test_nemotron_h_mtp_layer_types_read_as_the_config_class_reads_them():
    """``mtp_layers_block_type`` (the class's own key, its legacy name ``attention`` too) and the pattern give
    the same module; without either the class's default ``["full_attention", "moe"]``."""
    pattern = symllm.params(from_hf(_nemotron()))["mtp"]
    default = {k: v for k, v in _nemotron().items() if k != "mtp_hybrid_override_pattern"}
    assert symllm.params(from_hf(default))["mtp"] == pattern
    listed = _nemotron(mtp_layers_block_type=["attention", "moe"])
    del listed["mtp_hybrid_override_pattern"]
    assert symllm.params(from_hf(listed))["mtp"] == pattern
    twice = symllm.params(from_hf(_nemotron(mtp_hybrid_override_pattern="*EE")))["mtp"]
    moe = 2688 + 128 * 2688 + 128 * 2 * 2688 * 1856 + 2 * 2688 * 3712
    assert twice - pattern == moe


def test_qwen3_next_mtp_is_two_norms_a_fusion_a_full_attention_layer_and_a_norm():
    """Qwen3-Next-80B-A3B (the preset's config.json with its ``mtp_num_hidden_layers: 1``): the module's layer
    has the parameters of Qwen3NextForCausalLM's full-attention layer 3 (its MoE too: layer 0's feed-forward, a
    MoE with decoder_sparse_step 1) on the meta device; pre_fc_norm_embedding, pre_fc_norm_hidden, norm (3d)
    and fc (2d·d) by hand; the total is transformers' model's. By hand: d = 2048, the gated q_proj 2048·2·16·256,
    k_proj and v_proj 2048·2·256 each, o_proj 16·256·2048, q_norm and k_norm 256 each, two layer norms 2·2048;
    512 experts of 3·2048·512, the router 512·2048, the shared expert 3·2048·512 and its gate 2048."""
    raw = {**preset_info("qwen3-next-80b-a3b")["config"], "mtp_num_hidden_layers": 1}
    model, d = _meta(raw), raw["hidden_size"]
    counts = symllm.params(from_hf(raw))
    assert counts["total"] == sum(p.numel() for p in model.parameters())
    assert counts["mtp"] == 3 * d + 2 * d * d + _layer(model, 3)
    layer = (d * 2 * 16 * 256 + 2 * d * 2 * 256 + 16 * 256 * d + 2 * 256 + 2 * d
             + 512 * 3 * d * 512 + 512 * d + 3 * d * 512 + d)
    assert counts["mtp"] == 3 * d + 2 * d * d + layer == 1_650_471_424


def test_qwen3_5_mtp_layer_is_a_dense_full_attention_layer():
    """Qwen3.5 (dense, inside its multimodal wrapper): the module's layer is a full-attention layer with the
    model's SwiGLU, as Qwen3_5ForCausalLM's layer 3 on the meta device (vLLM's layer 0 of the module, dense
    as every Qwen3.5 layer); two layers hold twice it and its norms and fusion."""
    text = {"model_type": "qwen3_5_text", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
            "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 4,
            "linear_value_head_dim": 4, "linear_conv_kernel_dim": 4, "tie_word_embeddings": False}
    model, d = _meta(text), 32
    one = symllm.params(from_hf({"model_type": "qwen3_5", "text_config": {**text, "mtp_num_hidden_layers": 1}}))
    two = symllm.params(from_hf({**text, "mtp_num_hidden_layers": 2}))
    assert one["total"] == two["total"] == sum(p.numel() for p in model.parameters())
    assert one["mtp"] == 3 * d + 2 * d * d + _layer(model, 3) and two["mtp"] == 2 * one["mtp"]


def test_count_reports_the_modules_apart_from_the_total(cli, tmp_path):
    """``symllm count`` prints the total as transformers builds the model, the modules apart and the
    checkpoint's total with them beside it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**preset_info("qwen3-next-80b-a3b")["config"], "mtp_num_hidden_layers": 1}))
    r = cli(["count", str(path)])
    rows = {line.rsplit(None, 2)[0]: line.split()[-2] for line in r.out.splitlines() if line.count(",") > 1}
    assert r.code == 0 and rows["total"] == "79,674,391,296"
    assert rows["multi-token prediction (apart)"] == "1,650,471,424"
    assert rows["total with it (checkpoint)"] == f"{79_674_391_296 + 1_650_471_424:,}"


@pytest.mark.parametrize("raw, start", [
    ({**preset_info("qwen3-next-80b-a3b")["config"], "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": True},
     "mtp_use_dedicated_embeddings: true"),
    # Qwen3-Next with MoE every second layer: layer 0 (the module's) is dense, and no full-attention layer is
    ({**preset_info("qwen3-next-80b-a3b")["config"], "mtp_num_hidden_layers": 1, "decoder_sparse_step": 2},
     "mtp_kinds: an MTP block of a kind no layer of the model has"),
])
def test_what_is_not_modelled_is_refused_in_one_line(cli, tmp_path, raw, start):
    from .conftest import assert_refused_in_one_line
    assert_refused_in_one_line(cli, tmp_path, raw, start)


def test_mtp_kinds_round_trip_and_checks():
    """A config with MTP blocks of the model's kinds writes and reads back; blocks without modules, or of a
    kind the model has none of, are refused."""
    cfg = from_hf(_nemotron())
    assert symllm.ModelConfig(**json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert "mtp_kinds" not in from_hf(preset_info("nemotron-3-nano-30b-a3b")["config"]).to_dict()
    fields = cfg.to_dict()
    with pytest.raises(symllm.SymllmError, match="^mtp_kinds: given without multi-token-prediction modules"):
        symllm.ModelConfig(**{**fields, "n_mtp_layers": 0})
    with pytest.raises(symllm.SymllmError, match="^mtp_kinds: an MTP block of a kind no layer"):
        symllm.ModelConfig(**{**fields, "mtp_kinds": [{"ffn": "dense"}]})


@given(dsa_configs("deepseek_v32"))
def test_deepseek_v32_mtp_is_deepseek_v3s_module(raw):
    """DeepSeek-V3.2 (DeepSeek Sparse Attention on DeepSeek-V3; GLM-5 is read the same way) with
    ``num_nextn_predict_layers: 1``, which DeepseekV32Config does not hold: DeepSeek-V3's module (its own
    embedding and head copies 2·V·d, enorm, hnorm and shared_head.norm 3d, eh_proj 2d·d) around one block like
    DeepseekV32ForCausalLM's last layer (its indexer too) on the meta device; the total is transformers' model's."""
    raw = {**raw, "num_nextn_predict_layers": 1}
    model, d, V = _meta(raw), raw["hidden_size"], raw["vocab_size"]
    counts = symllm.params(from_hf(raw))
    assert counts["total"] == sum(p.numel() for p in model.parameters())
    assert counts["mtp"] == 2 * V * d + 3 * d + 2 * d * d + _layer(model, raw["num_hidden_layers"] - 1)


def _deepseek_small(**changes) -> dict:
    """A small DeepSeek-V3 config.json: MLA with a query latent, 4 layers, the first dense, 4 routed experts of
    8 and a shared one, one multi-token-prediction module."""
    return {"model_type": "deepseek_v3", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
            "moe_intermediate_size": 8, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 4,
            "q_lora_rank": 16, "kv_lora_rank": 8, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 8,
            "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
            "num_nextn_predict_layers": 1, "n_group": 1, "topk_group": 1, **changes}


def test_deepseek_mtp_copies_the_last_layers_kind_not_the_last_group():
    """The DeepSeek-style module's block is the kind of the model's last layer (vLLM's
    DeepSeekMultiTokenPredictorLayer builds layer num_hidden_layers, the layer after the last), not the last
    group: groups are in the order each kind first appears. Layers dense, MoE, MoE, dense (a symllm config with
    its layers stated, one MoE layer of the published order made dense) make the groups dense, MoE: the module's
    block is dense. Expected: DeepseekV3ForCausalLM's
    dense layer 0 and MoE layer 1 on the meta device, the module's embedding and head copies 2·V·d, enorm, hnorm
    and shared_head.norm 3d, eh_proj 2d·d by hand; the published order (dense then MoE) copies the MoE layer."""
    raw = _deepseek_small()
    model, d, V = _meta(raw), raw["hidden_size"], raw["vocab_size"]
    around = 2 * V * d + 3 * d + 2 * d * d
    assert symllm.params(from_hf(raw))["mtp"] == around + _layer(model, 1)
    fields = from_hf(raw).to_dict()
    dense, moe = ({**k, "count": 1} for k in fields["layers"])
    cfg = symllm.ModelConfig(**{**fields, "layers": [dense, {**moe, "count": 2}, dense]})
    assert [kind.ffn for kind, _ in cfg.groups] == ["dense", "moe"] and cfg.layers[-1][0].ffn == "dense"
    counts = symllm.params(cfg)
    whole = sum(p.numel() for p in model.parameters())
    assert counts["total"] == whole - _layer(model, 1) + _layer(model, 0)  # a MoE layer made dense
    assert counts["mtp"] == around + _layer(model, 0)
