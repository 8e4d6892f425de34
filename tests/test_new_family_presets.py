"""The presets of the families issue 39 added (hybrid, sparse and per-layer attention, multimodal wrappers): each
is its checkpoint's published config.json, counts what transformers' own class builds from it on the meta device,
and carries the model card's published total (tests/data/published_params.json, held within the digits the card
prints by tests/test_params.py::test_rounded_published_figures). A preset added to one of these families is
checked here without a test of its own."""
import pytest

import symllm
from symllm.arch.config import preset_info

from .conftest import PUBLISHED, PUBLISHED_ABOUT, requires

#: the model types (as a config.json states them, wrappers included) of the families issue 39 added
NEW_FAMILIES = ("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "nemotron_h",
                "deepseek_v32", "glm_moe_dsa", "gemma4", "gemma4_text", "mimo_v2_flash", "minimax_m2", "exaone4",
                "cohere", "kimi_k25", "laguna", "deepseek_v4")
PRESETS = [n for n in symllm.preset_names() if preset_info(n)["config"].get("model_type") in NEW_FAMILIES]


def test_the_new_families_ship_presets():
    """The presets below are found by model type (an empty list would pass every check vacuously): Command-R,
    DeepSeek-V3.2, EXAONE 4.0, Gemma 4 26B-A4B, GLM-5, Kimi-K2.5, MiniMax-M2.5, Nemotron 3 Nano, Qwen3-Next,
    Qwen3.5-27B, Qwen3.5-35B-A3B and Qwen3.5-397B-A17B, Nemotron-H-56B, Nemotron 3 Super, Gemma 4 31B, MiMo-V2-Flash
    and Laguna XS.2 at least."""
    assert {"command-r-v01", "deepseek-v3.2", "exaone-4.0-32b", "gemma-4-26b-a4b", "glm-5", "kimi-k2.5",
            "minimax-m2.5", "nemotron-3-nano-30b-a3b", "qwen3-next-80b-a3b", "qwen3.5-27b",
            "qwen3.5-397b-a17b", "qwen3.5-35b-a3b", "nemotron-h-56b", "nemotron-3-super-120b-a12b",
            "gemma-4-31b", "mimo-v2-flash", "laguna-xs.2"} <= set(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_preset_equals_transformers_language_model_on_meta(name):
    """symllm's total equals the parameters of transformers' causal-LM class built on the meta device from the
    preset's config.json (from its text_config where the checkpoint is a multimodal wrapper: the language model
    symllm counts)."""
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**preset_info(name)["config"]).get_text_config()
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert symllm.params(name)["total"] == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", PRESETS)
def test_preset_carries_the_published_total(name):
    """Every such preset has its checkpoint's published total in tests/data/published_params.json, exact or as
    the model card rounds it (of the model, or of the checkpoint with its multi-token-prediction layers), with
    its source (tests/test_params.py checks symllm's count against it)."""
    assert name in PUBLISHED or {(name, "total"), (name, "total_with_mtp")} & set(PUBLISHED_ABOUT)


#: the multimodal presets: transformers' whole-checkpoint class, its parameters, and those of its vision parts
#: (the prefixes of the parameters outside the language model), all from transformers on the meta device
_WRAPPERS = [("qwen3.5-27b", "Qwen3_5ForConditionalGeneration", 27_356_728_560, ("model.visual.",)),
             ("qwen3.5-397b-a17b", "Qwen3_5MoeForConditionalGeneration", 396_802_360_816, ("model.visual.",)),
             ("gemma-4-26b-a4b", "Gemma4ForConditionalGeneration", 25_805_933_872,
              ("model.vision_tower.", "model.embed_vision.")),
             ("qwen3.5-35b-a3b", "Qwen3_5MoeForConditionalGeneration", 35_107_181_936, ("model.visual.",)),
             ("gemma-4-31b", "Gemma4ForConditionalGeneration", 31_273_086_512,
              ("model.vision_tower.", "model.embed_vision."))]


@pytest.mark.parametrize("name, cls, total, vision", _WRAPPERS)
def test_wrapper_adds_only_the_vision_encoder(name, cls, total, vision):
    """The multimodal checkpoints as transformers builds them whole (meta device): the parameters outside the
    vision encoder and its projector are the language model symllm counts (Qwen3.5-35B-A3B: 35.11B whole, 34.66B
    without its vision encoder, both '35B'; Gemma 4 31B: 31.27B whole, the card's '30.7B' its language model's).
    Qwen3.5-27B's card figure, '27B'
    under 'Language Model', holds for both (26.90B and 27.36B); Qwen3.5-397B-A17B's '397B in total' is the whole
    model's (396.80B rounds to it, the language model's 396.35B does not); Gemma 4 26B-A4B's 'Total Parameters
    25.2B' is the language model's, its vision encoder '~550M' (572,792,112 with the embedder)."""
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**preset_info(name)["config"])
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert type(model).__name__ == cls
    assert sum(p.numel() for p in model.parameters()) == total
    outside = sum(p.numel() for n, p in model.named_parameters() if n.startswith(vision))
    assert symllm.params(name)["total"] == total - outside


def test_qwen35_397b_card_total_is_the_whole_model():
    """'397B in total' (the Qwen3.5-397B-A17B card) rounds transformers' whole model, 396,802,360,816, not the
    language model alone, 396,346,350,336 (which rounds to 396B): the card counts the vision encoder."""
    assert round(396_802_360_816 / 1e9) == 397 and round(symllm.params("qwen3.5-397b-a17b")["total"] / 1e9) == 396


def test_deepseek_v32_preset_is_the_stored_checkpoint():
    """deepseek-ai/DeepSeek-V3.2's safetensors hold 685,396,921,376 numbers (the checkpoint report that copies
    the preset's config.json totals its tensor list so): symllm's parameters with the multi-token-prediction
    layer, plus, by hand from that list, the routers' e_score_correction_bias (a buffer: 256 floats in each of
    the 59 MoE layers, the MTP layer's included) and the FP8 checkpoint's 128 x 128 block scales
    (weight_scale_inv) of every quantized linear. In each of the 62 attention layers: kv_a_proj_with_mqa
    576 x 7168: 5 x 56 blocks; kv_b_proj 32768 x 512: 256 x 4; o_proj 7168 x 16384: 56 x 128; q_a_proj
    1536 x 7168: 12 x 56; q_b_proj 24576 x 1536: 192 x 12; the indexer's wk 128 x 7168: 1 x 56 and wq_b
    8192 x 1536: 64 x 12 (its weights_proj is bf16). In the 3 dense layers: gate, up 18432 x 7168 and down
    7168 x 18432: 144 x 56 each. In the 59 MoE layers, 256 routed experts and the shared one: gate, up
    2048 x 7168 and down 7168 x 2048: 16 x 56 each."""
    counts = symllm.params("deepseek-v3.2")
    attention = 62 * (5 * 56 + 256 * 4 + 56 * 128 + 12 * 56 + 192 * 12 + 1 * 56 + 64 * 12)
    dense = 3 * 3 * 144 * 56
    moe = 59 * (256 + 1) * 3 * 16 * 56
    assert counts["total"] + counts["mtp"] + 59 * 256 + attention + dense + moe == 685_396_921_376


def test_glm5_preset_is_the_stored_checkpoint():
    """zai-org/GLM-5's multi-token-prediction layer (model.layers.78) shares the model's embedding and output
    head: the BF16 checkpoint stores no model.layers.78.embed_tokens or shared_head.head (vllm-ascend's GLM-5
    guide, docs/source/tutorials/models/GLM5.md, copies model.embed_tokens.weight and lm_head.weight into them
    for its loader), so the module is enorm, hnorm and shared_head.norm (3 × 6144), eh_proj (12288 × 6144) and
    one MoE layer with its indexer, not DeepSeek-V3's module with its own copies (2 × 154880 × 6144). The
    checkpoint's total with it, 753.9B, is the public inventory's figure (not 755.8B with the copies); the
    model's, 743.9B, transformers' (test_preset_equals_transformers_language_model_on_meta)."""
    counts = symllm.params("glm-5")
    d, h = 6144, 64
    attention = (d * 2048 + 2048 + 2048 * h * 256 + d * (512 + 64) + 512  # q_a, its norm, q_b, kv_a, its norm
                 + 512 * h * (192 + 256) + h * 256 * d)  # kv_b, o_proj
    indexer = 2048 * 32 * 128 + d * 128 + 2 * 128 + d * 32  # wq_b, wk, k_norm (weight, bias), weights_proj
    moe = 256 * 3 * d * 2048 + 256 * d + 3 * d * 2048  # routed experts, router, shared expert
    layer = attention + indexer + moe + 2 * d  # and the two layer norms
    assert counts["mtp"] == 3 * d + 2 * d * d + layer == 9_952_920_320
    assert round((counts["total"] + counts["mtp"]) / 1e9, 1) == 753.9
    assert round((counts["total"] + counts["mtp"] + 2 * 154880 * d) / 1e9, 1) == 755.8
