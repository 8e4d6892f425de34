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
    DeepSeek-V3.2, EXAONE 4.0, Kimi-K2.5, MiniMax-M2.5, Nemotron 3 Nano, Qwen3-Next and Qwen3.5-27B at least."""
    assert {"command-r-v01", "deepseek-v3.2", "exaone-4.0-32b", "kimi-k2.5", "minimax-m2.5",
            "nemotron-3-nano-30b-a3b", "qwen3-next-80b-a3b", "qwen3.5-27b"} <= set(PRESETS)


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


def test_qwen35_27b_wrapper_adds_only_the_vision_encoder():
    """Qwen/Qwen3.5-27B as transformers builds the whole checkpoint (Qwen3_5ForConditionalGeneration, meta
    device): 27,356,728,560 parameters, of which the vision encoder and merger (``model.visual``) are
    460,730,096 and the rest is the language model symllm counts (26,895,998,464; the model card: 'Language
    Model ... Number of Parameters: 27B')."""
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**preset_info("qwen3.5-27b")["config"])
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert type(model).__name__ == "Qwen3_5ForConditionalGeneration"
    visual = sum(p.numel() for n, p in model.named_parameters() if n.startswith("model.visual."))
    total = sum(p.numel() for p in model.parameters())
    assert (total, visual) == (27_356_728_560, 460_730_096)
    assert symllm.params("qwen3.5-27b")["total"] == total - visual


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
