"""DeepSeek-V4's serving capacity as vLLM lays out its caches (symllm.costs.serving.deepseek_v4_blocks).

Expected numbers are hand arithmetic written out here from vLLM's own formulas (docs/serving.md, "DeepSeek-V4"):
an fp8_ds_mla entry is 448 + 2 · 64 + 7 + 1 = 584 bytes (deepseek_v4_attention.py's ``head_bytes``); a page is
``block_size // compress_ratio`` entries, rounded up to a multiple of 576 (``_apply_alignment_padding``); the
indexer's key is 128 + 128 // 128 · 4 = 132 bytes; a compressor's state is ``2 · coff · head_dim`` fp32 values a
token (``CompressorStateCache``), 4 tokens a block for ratio 4 and 8 for ratio 128; the window keys are blocks of
64 tokens; the full group's blocks are 256 tokens. Groups, tuples and blocks follow
``kv_cache_utils._get_kv_cache_groups_uniform_groups``, ``_approximate_gcd`` and
``_get_kv_cache_config_deepseek_v4``; a request's blocks follow ``_max_memory_usage_bytes_from_groups`` (each
group's ``max_memory_usage_bytes`` in pages: ``cdiv(context, 256)`` for the full group,
``cdiv(min(window - 1 + max_num_batched_tokens, context), block) + 1`` for a window group)."""
import json
from fractions import Fraction

import pytest

from symllm.costs import serving
from symllm.errors import SymllmError

from .test_dsv4 import FLASH_BASE

#: three layers, CSA (ratio 4), HCA (128), CSA, at DeepSeek-V4's attention widths (head_dim 512, RoPE 64, indexer 128)
SMALL = {"model_type": "deepseek_v4", "vocab_size": 100, "hidden_size": 32, "moe_intermediate_size": 16,
         "num_hidden_layers": 3, "num_attention_heads": 4, "head_dim": 512, "q_lora_rank": 8,
         "qk_rope_head_dim": 64, "num_experts_per_tok": 2, "n_routed_experts": 4, "hc_mult": 2,
         "sliding_window": 128, "o_groups": 2, "o_lora_rank": 6, "index_n_heads": 2, "index_head_dim": 128,
         "index_topk": 2, "compress_ratios": [4, 128, 4]}


def test_the_pages_by_hand():
    """Every page, padded to 576 bytes: the window keys 64 × 584 = 37,376 -> 65 × 576 = 37,440; a CSA layer's
    entries 256 / 4 × 584 = 37,376 -> 37,440; an HCA layer's 256 / 128 × 584 = 1,168 -> 3 × 576 = 1,728; the
    indexer's keys 64 × 132 = 8,448 -> 15 × 576 = 8,640; a 512-wide compressor's state 4 × (2 · 2 · 512) × 4 =
    8 × (2 · 1 · 512) × 4 = 32,768 -> 57 × 576 = 32,832 (at most the full group's largest page, 37,440, to which
    vLLM pads it); the indexer compressor's 4 × (2 · 2 · 128) × 4 = 8,192 -> 8,640. A layer tuple is the full
    group's distinct pages: 37,440 + 8,640 + 1,728 = 47,808 bytes."""
    pad = serving._pad
    assert (pad(64 * 584), pad(256 // 4 * 584), pad(256 // 128 * 584), pad(64 * 132)) == (37440, 37440, 1728, 8640)
    assert (pad(4 * 2 * 2 * 512 * 4), pad(8 * 2 * 1 * 512 * 4), pad(4 * 2 * 2 * 128 * 4)) == (32832, 32832, 8640)
    assert serving.deepseek_v4_blocks(SMALL, 0, 1, 1)["layer_tuple_bytes"] == 37440 + 8640 + 1728 == 47808


def test_small_config_by_hand():
    """CSA, HCA, CSA: the full group holds 2 layers at each of the CSA pages and 1 at HCA's (2 tuples); the window
    group 3 layers, the CSA states 2 (each an attention and an indexer state), the HCA states 1; the tuple count
    from 2 up padding [2, 3, 2, 1] least: 2 pads 0 + 1 + 0 + 1 = 2, 3 pads 1 + 0 + 1 + 2 = 4 -> 2. The window group
    splits in ⌈3 / 2⌉ = 2 (2 and 1 layers), the others stay whole: 1 + 2 + 1 + 1 = 5 groups, the largest 2 layers.
    Of 10^9 bytes: ⌊10^9 / (47,808 · 2)⌋ = 10,458 blocks; vLLM logs 10,458 // 5 × 4 = 8,364 tokens. A request of
    4,096 tokens with 2,048 batched: ⌈4,096 / 256⌉ = 16 full blocks; window: min(127 + 2,048, 4,096) = 2,175 ->
    ⌈2,175 / 64⌉ + 1 = 35 in each of 2 groups; CSA states: min(7 + 2,048, 4,096) = 2,055 -> ⌈2,055 / 4⌉ + 1 = 515;
    HCA states: 2,175 -> ⌈2,175 / 8⌉ + 1 = 273; 16 + 70 + 515 + 273 = 874 blocks, 10,458 / 874 requests."""
    r = serving.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048)
    assert (r["layer_tuples"], r["groups"], r["blocks"], r["kv_tokens"]) == (2, 5, 10458, 8364)
    assert (r["blocks_per_request"], r["requests"], r["max_concurrency"]) == (874, 11, Fraction(10458, 874))


def test_flash_base_widths_by_hand():
    """DeepSeek-V4-Flash-Base's 43 layers (compress_ratios: 2 window-only, 21 CSA, 20 HCA): tuple counts [21, 43,
    21, 20]; from 21: 21 pads 0 + 20 + 0 + 1 = 21, 22 pads 1 + 1 + 1 + 2 = 5, 23 pads 2 + 3 + 2 + 3 = 10, 24 and up
    pad at least 3 + 5 + 3 + 4 = 15 -> 22 tuples. The window group splits in ⌈43 / 22⌉ = 2 (22 and 21 layers), the
    CSA and HCA states stay whole: 5 groups, 22 tuples of 47,808 bytes = 1,051,776 bytes a block. Of 80 GiB:
    ⌊85,899,345,920 / 1,051,776⌋ = 81,670 blocks. A request of 4,096 tokens with 8,192 batched: 16 + 2 · (64 + 1)
    + (1,024 + 1) + (512 + 1) = 1,684 blocks."""
    r = serving.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 4096, 8192)
    assert 47808 * 22 == 1051776 and 85899345920 // 1051776 == 81670
    assert (r["layer_tuples"], r["groups"], r["blocks"], r["blocks_per_request"]) == (22, 5, 81670, 1684)
    assert r["kv_tokens"] == 81670 // 5 * 4 and r["requests"] == 81670 // 1684


def test_capacity_needs_an_fp8_cache_and_its_blocks_fill_what_is_left(cli, tmp_path):
    """vLLM asserts DeepSeek-V4's KV cache is fp8: a bf16 one is refused in one line; with fp8 the blocks are the
    left bytes over 1,051,776 a block (Flash-Base's layout, above), and count --serve prints them."""
    with pytest.raises(SymllmError, match="^kv_dtype: bf16; vLLM serves DeepSeek-V4 with an fp8 KV cache only"):
        serving.capacity(FLASH_BASE, gpu="h200", tp=8, seq=4096)
    r = serving.capacity(FLASH_BASE, gpu="h200", tp=8, seq=4096, kv_format="fp8")
    assert r["blocks"] == int(r["kv_cache_bytes"] // 1051776) > 0 and r["block_size"] == 256
    assert r["max_concurrency"] == Fraction(r["blocks"], 1684) and r["fits"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(FLASH_BASE))
    out = cli(["count", str(path), "--seq", "4096", "--serve", "--gpu", "h200", "--tp", "8", "--kv-format", "fp8"])
    assert out.code == 0, out.err
    assert f"{r['blocks']:,} blocks of 256" in out.out


@pytest.mark.parametrize("change, line", [
    ({"head_dim": 256}, "head_dim: 256; vLLM's DeepSeek-V4 kernels take 512 only (serve)"),
    ({"compress_ratios": [128, 128, 0]},
     "serve: vLLM's DeepSeek-V4 cache layout needs a compressed sparse attention layer")])
def test_what_vllm_does_not_serve_is_refused(change, line):
    """Widths vLLM's DeepSeek-V4 kernels do not take, and a layout its allocator asserts against, in one line."""
    with pytest.raises(SymllmError) as e:
        serving.deepseek_v4_blocks({**SMALL, **change}, 10 ** 9, 4096, 2048)
    assert str(e.value) == line
