"""DeepSeek-V4's serving capacity as vLLM lays out its caches (symllm.costs.serving.deepseek_v4_blocks).

Expected numbers are hand arithmetic written out here from released vLLM 0.20.0's own code, read by hand in the
PyPI wheel vllm-0.20.0 (``vllm/_version.py``: commit b8160878f; docs/serving.md, "DeepSeek-V4"):

* vllm/v1/kv_cache_interface.py: ``MLAAttentionSpec.real_page_size_bytes`` is ``storage_block_size · 584`` for
  ``fp8_ds_mla`` with ``model_version="deepseek_v4"`` (448 FP8 NoPE + 128 bytes of bf16 RoPE + 8 of scales),
  else ``storage_block_size · num_kv_heads · head_size · dtype size``; ``storage_block_size`` is
  ``block_size // compress_ratio``; ``SlidingWindowMLASpec`` likewise; ``_apply_alignment_padding`` rounds a page
  up to a multiple of ``alignment``; ``SlidingWindowSpec.max_admission_blocks_per_request`` is
  ``cdiv(min(sliding_window - 1 + max_num_batched_tokens, max_model_len), block_size) + 1``;
  ``FullAttentionSpec.max_memory_usage_bytes`` is ``cdiv(max_model_len, block_size)`` pages;
* vllm/model_executor/layers/deepseek_v4_attention.py: the attention's ``MLAAttentionSpec(block_size=256,
  num_kv_heads=1, compress_ratio, alignment=576, model_version="deepseek_v4")``; the indexer's
  ``DeepseekV4IndexerCache`` of ``head_dim + head_dim // 128 · 4`` = 132 uint8 a key, ``alignment=576``;
* vllm/v1/attention/backends/mla/sparse_swa.py: ``DeepseekV4SWACache``, ``block_size = 64``, window
  ``sliding_window``, ``alignment=576``, ``model_version="deepseek_v4"``; the backends prefer 256-token blocks;
* vllm/model_executor/layers/deepseek_compressor.py: ``CompressorStateCache``: fp32, ``state_dim = 2 · coff ·
  head_dim`` (coff 2 for ratio 4, 1 for 128), window ``coff · ratio``, 4 tokens a block for ratio 4 and 8 for 128,
  ``alignment=576``, no ``model_version``;
* vllm/v1/core/kv_cache_utils.py: ``group_and_unify_kv_cache_specs`` (the full group, then window groups keyed by
  block size and window), ``_get_kv_cache_groups_uniform_groups`` (``_approximate_gcd`` of the groups' most
  common page counts from the full group's up; each window page padded to the nearest full-group page; window
  groups split in ``cdiv(layers, tuples)``), ``_get_kv_cache_config_deepseek_v4`` (``available_memory //
  (Σ distinct full-group pages · tuples)``), ``_max_memory_usage_bytes_from_groups`` (Σ each group's pages),
  ``_report_kv_cache_config`` ("GPU KV cache size": ``num_blocks // len(groups) · min block size``) and
  ``get_max_concurrency_for_kv_cache_config`` (the logged "Maximum concurrency": ``num_blocks /
  cdiv(L · Σ_g max_memory_usage_bytes(g), L · page_size_bytes(full group))``, L the most layers a group has,
  ``UniformTypeKVCacheSpecs.max_memory_usage_bytes`` = the group's pages · the sum of its layers' pages)."""
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
    HCA states: 2,175 -> ⌈2,175 / 8⌉ + 1 = 273; 16 + 70 + 515 + 273 = 874 blocks, 10,458 / 874 requests.

    The logged "Maximum concurrency" weighs each group's pages by its layers' (padded) page bytes: the full group
    2 · 37,440 + 2 · 8,640 + 1,728 = 93,888 bytes; the window groups 2 · 37,440 = 74,880 and 37,440; the CSA
    states 2 · (32,832 -> 37,440) + 2 · 8,640 = 92,160; the HCA states 37,440. 16 · 93,888 + 35 · 74,880 + 35 ·
    37,440 + 515 · 92,160 + 273 · 37,440 = 1,502,208 + 2,620,800 + 1,310,400 + 47,462,400 + 10,221,120 =
    63,116,928; / 93,888 = 672.25 -> 673: 10,458 / 673 (15.5x, where 11 requests fit)."""
    r = serving.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048)
    assert (r["layer_tuples"], r["groups"], r["blocks"], r["kv_tokens"]) == (2, 5, 10458, 8364)
    assert (r["blocks_per_request"], r["requests"], r["max_concurrency"]) == (874, 11, Fraction(10458, 874))
    assert 16 * 93888 + 35 * 74880 + 35 * 37440 + 515 * 92160 + 273 * 37440 == 63116928
    assert -(-63116928 // 93888) == 673 and r["logged_concurrency"] == Fraction(10458, 673)


def test_flash_base_widths_by_hand():
    """DeepSeek-V4-Flash-Base's 43 layers (compress_ratios: 2 window-only, 21 CSA, 20 HCA): tuple counts [21, 43,
    21, 20]; from 21: 21 pads 0 + 20 + 0 + 1 = 21, 22 pads 1 + 1 + 1 + 2 = 5, 23 pads 2 + 3 + 2 + 3 = 10, 24 and up
    pad at least 3 + 5 + 3 + 4 = 15 -> 22 tuples. The window group splits in ⌈43 / 22⌉ = 2 (22 and 21 layers), the
    CSA and HCA states stay whole: 5 groups, 22 tuples of 47,808 bytes = 1,051,776 bytes a block. Of 80 GiB:
    ⌊85,899,345,920 / 1,051,776⌋ = 81,670 blocks. A request of 4,096 tokens with 8,192 batched: 16 + 2 · (64 + 1)
    + (1,024 + 1) + (512 + 1) = 1,684 blocks. Logged: the full group 21 · 37,440 + 21 · 8,640 + 20 · 1,728 =
    1,002,240 bytes, the window groups 22 · 37,440 = 823,680 and 21 · 37,440 = 786,240, the CSA states 21 · 37,440
    + 21 · 8,640 = 967,680, the HCA states 20 · 37,440 = 748,800; 16 · 1,002,240 + 65 · 823,680 + 65 · 786,240 +
    1,025 · 967,680 + 513 · 748,800 = 1,496,687,040, / 1,002,240 -> 1,494: vLLM logs 81,670 / 1,494 = 54.66x where
    81,670 // 1,684 = 48 requests fit."""
    r = serving.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 4096, 8192)
    assert 47808 * 22 == 1051776 and 85899345920 // 1051776 == 81670
    assert (r["layer_tuples"], r["groups"], r["blocks"], r["blocks_per_request"]) == (22, 5, 81670, 1684)
    assert r["kv_tokens"] == 81670 // 5 * 4 and r["requests"] == 81670 // 1684 == 48
    assert 16 * 1002240 + 65 * 823680 + 65 * 786240 + 1025 * 967680 + 513 * 748800 == 1496687040
    assert -(-1496687040 // 1002240) == 1494 and r["logged_concurrency"] == Fraction(81670, 1494)


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
