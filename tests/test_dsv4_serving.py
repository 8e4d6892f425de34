"""DeepSeek-V4's serving capacity as vLLM lays out its caches (symllm.costs.dsv4_cache.deepseek_v4_blocks).

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
  ``UniformTypeKVCacheSpecs.max_memory_usage_bytes`` = the group's pages · the sum of its layers' pages).

and from vLLM 0.33.0's, in its wheel (commit 4ba787ec9), the newest release and symllm's default:

* vllm/models/deepseek_v4/attention.py, compressor.py and vllm/v1/attention/backends/mla/sparse_swa.py: the same
  specs for ``fp8_ds_mla`` (``state_content_bytes=584``, ``alignment=576``, ``tokens_per_state`` = the
  compression ratio, window keys 64 tokens a block, states 4 or 8, indexer keys 132 bytes);
* vllm/v1/kv_cache_interface.py: ``AttentionSpec.page_size_bytes`` = ``num_heads · num_states ·
  state_content_size_bytes`` (``num_states = block_size // tokens_per_state``; ``state_content_bytes``, else
  ``(head_size + head_size_v) · dtype size``, ``head_size_v = 0`` for the MLA specs), padded by
  ``_apply_alignment_padding``; ``SlidingWindowSpec.max_admission_blocks_per_request`` =
  ``cdiv(min(window - 1 + max_in_flight_tokens, max_model_len), block) + 1``; ``is_uniform_type``: one block
  size, full attention with full attention, sliding windows of one window;
* vllm/config/vllm.py: ``max_in_flight_tokens = max_concurrent_batches · max_num_batched_tokens``, 2 batches with
  async scheduling, which ``async_scheduling = None`` turns on unless something is incompatible;
* vllm/v1/core/kv_cache_planning.py: ``_get_packed_kv_cache_groups`` (buckets of uniform specs; a bucket whose
  page sizes each hold as many layers is "balanced"; ``repeats`` = ``_approximate_gcd`` of the balanced buckets'
  largest counts, from the largest count of a balanced bucket with two page sizes or more up; a balanced bucket
  splits in ``cdiv(count, repeats)`` groups of repeats ``[i::n]``, the others stay whole; no page padded),
  ``_get_kv_cache_bytes_per_block`` (block-outermost: the largest group's Σ pages, rounded to the least common
  multiple of the pages' block-stride alignments, 1 where none is set, as here), ``get_kv_cache_config_from_groups``
  (``available_memory // bytes_per_block``), ``_max_memory_usage_bytes_from_groups`` (Σ each group's pages);
* vllm/v1/core/kv_cache_utils.py: ``get_max_concurrency_for_kv_cache_config`` (``num_blocks / Σ_g
  cdiv(max_memory_usage_bytes, page_size_bytes)``) and ``update_kv_cache_capacity`` ("GPU KV cache size":
  ``int(max_concurrency · max_model_len)`` tokens)."""
import json
from fractions import Fraction

import pytest

from symllm.costs import dsv4_cache, serving
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
    pad = dsv4_cache._pad
    assert (pad(64 * 584), pad(256 // 4 * 584), pad(256 // 128 * 584), pad(64 * 132)) == (37440, 37440, 1728, 8640)
    assert (pad(4 * 2 * 2 * 512 * 4), pad(8 * 2 * 1 * 512 * 4), pad(4 * 2 * 2 * 128 * 4)) == (32832, 32832, 8640)
    assert dsv4_cache.deepseek_v4_blocks(SMALL, 0, 1, 1, "0.20")["layer_tuple_bytes"] == 37440 + 8640 + 1728 == 47808


def test_small_config_by_hand_020():
    """vLLM 0.20.0. CSA, HCA, CSA: the full group holds 2 layers at each of the CSA pages and 1 at HCA's (2 tuples); the
    window group 3 layers, the CSA states 2 (each an attention and an indexer state), the HCA states 1; the tuple
    count from 2 up padding [2, 3, 2, 1] least: 2 pads 0 + 1 + 0 + 1 = 2, 3 pads 1 + 0 + 1 + 2 = 4 -> 2. The window
    group splits in ⌈3 / 2⌉ = 2 (2 and 1 layers), the others stay whole: 1 + 2 + 1 + 1 = 5 groups, the largest 2
    layers. Of 10^9 bytes: ⌊10^9 / (47,808 · 2)⌋ = 10,458 blocks; vLLM logs 10,458 // 5 × 4 = 8,364 tokens. A
    request of 4,096 tokens with 2,048 batched: ⌈4,096 / 256⌉ = 16 full blocks; window: min(127 + 2,048, 4,096) =
    2,175 -> ⌈2,175 / 64⌉ + 1 = 35 in each of 2 groups; CSA states: min(7 + 2,048, 4,096) = 2,055 -> ⌈2,055 / 4⌉ + 1
    = 515; HCA states: 2,175 -> ⌈2,175 / 8⌉ + 1 = 273; 16 + 70 + 515 + 273 = 874 blocks, 10,458 / 874 requests.

    The logged "Maximum concurrency" weighs each group's pages by its layers' (padded) page bytes: the full group 2
    · 37,440 + 2 · 8,640 + 1,728 = 93,888 bytes; the window groups 2 · 37,440 = 74,880 and 37,440; the CSA states 2
    · (32,832 -> 37,440) + 2 · 8,640 = 92,160; the HCA states 37,440. 16 · 93,888 + 35 · 74,880 + 35 · 37,440 + 515
    · 92,160 + 273 · 37,440 = 1,502,208 + 2,620,800 + 1,310,400 + 47,462,400 + 10,221,120 = 63,116,928; / 93,888 =
    672.25 -> 673: 10,458 / 673 (15.5x, where 11 requests fit)."""
    r = dsv4_cache.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048, release="0.20")
    assert (r["layer_tuples"], r["groups"], r["blocks"], r["kv_tokens"]) == (2, 5, 10458, 8364)
    assert (r["blocks_per_request"], r["requests"], r["max_concurrency"]) == (874, 11, Fraction(10458, 874))
    assert 16 * 93888 + 35 * 74880 + 35 * 37440 + 515 * 92160 + 273 * 37440 == 63116928
    assert -(-63116928 // 93888) == 673 and r["logged_concurrency"] == Fraction(10458, 673)


def test_flash_base_widths_by_hand_020():
    """vLLM 0.20.0. DeepSeek-V4-Flash-Base's 43 layers (compress_ratios: 2 window-only, 21 CSA, 20 HCA): tuple counts [21,
    43, 21, 20]; from 21: 21 pads 0 + 20 + 0 + 1 = 21, 22 pads 1 + 1 + 1 + 2 = 5, 23 pads 2 + 3 + 2 + 3 = 10, 24 and
    up pad at least 3 + 5 + 3 + 4 = 15 -> 22 tuples. The window group splits in ⌈43 / 22⌉ = 2 (22 and 21 layers),
    the CSA and HCA states stay whole: 5 groups, 22 tuples of 47,808 bytes = 1,051,776 bytes a block. Of 80 GiB:
    ⌊85,899,345,920 / 1,051,776⌋ = 81,670 blocks. A request of 4,096 tokens with 8,192 batched: 16 + 2 · (64 + 1) +
    (1,024 + 1) + (512 + 1) = 1,684 blocks. Logged: the full group 21 · 37,440 + 21 · 8,640 + 20 · 1,728 = 1,002,240
    bytes, the window groups 22 · 37,440 = 823,680 and 21 · 37,440 = 786,240, the CSA states 21 · 37,440 + 21 ·
    8,640 = 967,680, the HCA states 20 · 37,440 = 748,800; 16 · 1,002,240 + 65 · 823,680 + 65 · 786,240 + 1,025 ·
    967,680 + 513 · 748,800 = 1,496,687,040, / 1,002,240 -> 1,494: vLLM logs 81,670 / 1,494 = 54.66x where 81,670 //
    1,684 = 48 requests fit."""
    r = dsv4_cache.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 4096, 8192, release="0.20")
    assert 47808 * 22 == 1051776 and 85899345920 // 1051776 == 81670
    assert (r["layer_tuples"], r["groups"], r["blocks"], r["blocks_per_request"]) == (22, 5, 81670, 1684)
    assert r["kv_tokens"] == 81670 // 5 * 4 and r["requests"] == 81670 // 1684 == 48
    assert 16 * 1002240 + 65 * 823680 + 65 * 786240 + 1025 * 967680 + 513 * 748800 == 1496687040
    assert -(-1496687040 // 1002240) == 1494 and r["logged_concurrency"] == Fraction(81670, 1494)


def test_small_config_by_hand_033():
    """vLLM 0.33.0 (the default). CSA, HCA, CSA: the buckets are the full group {37,440: 2 CSA entries, 8,640: 2
    indexer keys, 1,728: 1 HCA entry} (unbalanced: stays whole, 2 · 37,440 + 2 · 8,640 + 1,728 = 93,888 bytes), the
    window keys {37,440: 3}, the CSA states {32,832: 2, 8,640: 2} (balanced, two page sizes: repeats from 2 up) and
    the HCA states {32,832: 1}; from 2 over [3, 2, 1]: 2 pads 1 + 0 + 1 = 2, 3 pads 0 + 1 + 2 = 3 -> 2 repeats. The
    window keys split in ⌈3 / 2⌉ = 2 groups (74,880 and 37,440 bytes), the CSA states 2 · 32,832 + 2 · 8,640 =
    82,944, the HCA states 32,832: 5 groups, the block the largest, 93,888 bytes (no page padded to another).
    ⌊10^9 / 93,888⌋ = 10,650 blocks. A request of 4,096 tokens with 2,048 batched, 4,096 in flight: 16 + 2 ·
    (⌈min(127 + 4,096, 4,096) / 64⌉ + 1 = 65) + (⌈4,096 / 4⌉ + 1 = 1,025) + (⌈4,096 / 8⌉ + 1 = 513) = 1,684 blocks;
    vLLM logs 10,650 / 1,684 = 6.32x and ⌊10,650 · 4,096 / 1,684⌋ = 25,904 tokens."""
    r = dsv4_cache.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048)
    assert 2 * 37440 + 2 * 8640 + 1728 == 93888 > max(2 * 37440, 2 * 32832 + 2 * 8640, 32832)
    assert 10 ** 9 // 93888 == 10650
    assert (r["block_bytes"], r["repeats"], r["groups"], r["blocks"]) == (93888, 2, 5, 10650)
    assert (r["blocks_per_request"], r["requests"]) == (16 + 2 * 65 + 1025 + 513, 10650 // 1684)
    assert r["max_concurrency"] == r["logged_concurrency"] == Fraction(10650, 1684)
    assert r["kv_tokens"] == 10650 * 4096 // 1684 == 25904


def test_flash_base_widths_by_hand_033():
    """vLLM 0.33.0: Flash-Base's full group {37,440: 21, 8,640: 21, 1,728: 20} stays whole: 786,240 + 181,440 +
    34,560 = 1,002,240 bytes; repeats from 21 (the CSA states' {32,832: 21, 8,640: 21}) over [43, 21, 20]: 21 pads
    20 + 0 + 1 = 21, 22 pads 1 + 1 + 2 = 4, and any d from 23 pads at least (d - 21) + (d - 20) >= 5 -> 22. The window
    keys split in 2 (22 · 37,440 = 823,680; 786,240), the CSA states 21 · 32,832 + 21 · 8,640 = 870,912, the HCA
    states 20 · 32,832 = 656,640: the block is the full group's 1,002,240 bytes (0.20's 1,051,776 less 4.7%). Of
    80 GiB: ⌊85,899,345,920 / 1,002,240⌋ = 85,707 blocks. A request of 4,096 tokens: 1,684 blocks as in 0.20; of
    131,072 with 8,192 batched, two steps (16,384 tokens) are in flight where 0.20 held one: 512 + 2 · (⌈16,511 /
    64⌉ + 1 = 259) + (⌈16,391 / 4⌉ + 1 = 4,099) + (⌈16,511 / 8⌉ + 1 = 2,065) = 7,194 blocks (0.20: 512 + 2 ·
    (⌈8,319 / 64⌉ + 1 = 131) + (⌈8,199 / 4⌉ + 1 = 2,051) + (⌈8,319 / 8⌉ + 1 = 1,041) = 3,866)."""
    r = dsv4_cache.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 4096, 8192)
    assert 21 * 37440 + 21 * 8640 + 20 * 1728 == 1002240 and 85899345920 // 1002240 == 85707
    assert (r["block_bytes"], r["repeats"], r["groups"], r["blocks"]) == (1002240, 22, 5, 85707)
    assert r["blocks_per_request"] == 16 + 2 * 65 + 1025 + 513 == 1684 and r["requests"] == 85707 // 1684
    assert r["kv_tokens"] == 85707 * 4096 // 1684
    assert 512 + 2 * 259 + 4099 + 2065 == 7194 and 512 + 2 * 131 + 2051 + 1041 == 3866
    assert dsv4_cache.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 131072, 8192)["blocks_per_request"] == 7194
    assert dsv4_cache.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 131072, 8192, "0.20")["blocks_per_request"] == 3866


def test_capacity_needs_an_fp8_cache_and_its_blocks_fill_what_is_left(cli, tmp_path):
    """On an H200 vLLM 0.33 caches DeepSeek-V4 in fp8 only (FlashMLA; its bf16 rows need FlashInfer on an SM10x
    card: tests/test_dsv4_bf16.py): a bf16 one is refused in one line; with fp8 the blocks are the left bytes over
    1,002,240 a block (Flash-Base's layout in 0.33, above), and count --serve prints them."""
    with pytest.raises(SymllmError, match=r"^kv_dtype: bf16; on h200 vLLM caches DeepSeek-V4 in fp8 only "
                                          r"\(bf16: b200, gb200\)$"):
        serving.capacity(FLASH_BASE, gpu="h200", tp=8, seq=4096, kv_dtype="bf16")
    r = serving.capacity(FLASH_BASE, gpu="h200", tp=8, seq=4096, kv_format="fp8")
    assert r["blocks"] == int(r["kv_cache_bytes"] // 1002240) > 0 and r["block_size"] == 256
    assert r["max_concurrency"] == Fraction(r["blocks"], 1684) and r["fits"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(FLASH_BASE))
    out = cli(["count", str(path), "--seq", "4096", "--serve", "--gpu", "h200", "--tp", "8", "--kv-format", "fp8"])
    assert out.code == 0, out.err
    assert f"{r['blocks']:,} blocks of 256" in out.out


_NOT_MODELLED = ("serve: vLLM's DeepSeek-V4 cache layout is modelled with a compressed sparse attention layer, or a "
                 "heavily compressed one under vLLM 0.33")


@pytest.mark.parametrize("change, release, line", [
    ({"head_dim": 256}, "0.33", "head_dim: 256; vLLM's DeepSeek-V4 kernels take 512 only (serve)"),
    ({"compress_ratios": [128, 128, 0]}, "0.20", _NOT_MODELLED),
    ({"compress_ratios": [0, 0, 0]}, "0.33", _NOT_MODELLED)])
def test_what_vllm_does_not_serve_is_refused(change, release, line):
    """Widths vLLM's DeepSeek-V4 kernels do not take, a layout 0.20's allocator asserts against (no CSA layer: its
    window pages are padded to a full-group page, of which an HCA layer's 1,728 bytes is smaller), and a model with
    no compressed layer (0.33 lays out its one spec by its uniform path, not modelled), in one line."""
    with pytest.raises(SymllmError) as e:
        dsv4_cache.deepseek_v4_blocks({**SMALL, **change}, 10 ** 9, 4096, 2048, release=release)
    assert str(e.value) == line


def test_no_csa_layer_under_033_by_hand():
    """Two HCA layers and a window-only one (compress_ratios [128, 128, 0]): transformers builds it (tests/test_dsv4.py
    draws such layer_types) and vLLM 0.33.0 packs it (kv_cache_planning.py, _get_packed_kv_cache_groups): no balanced
    bucket mixes page sizes (CSA's states would), so repeats_per_group is None and the two sliding-window buckets (the
    window keys, SlidingWindowMLASpec of 64 tokens; the HCA states, SlidingWindowMLASpec of 8) are state buckets; the
    anchor is the widest whole bucket or one state page, max(2 · 1,728, 37,440, 32,832) = 37,440, so each state group
    holds 37,440 // page = 1 layer: the full group (2 · 1,728 = 3,456), 3 window-key groups of 37,440 and 2 HCA-state
    groups of 32,832, 6 groups, a block of 37,440 bytes. A request of 4,096 tokens at 2,048 batched (two in flight:
    4,096) takes 16 full pages, 3 · (⌈min(127 + 4,096, 4,096) / 64⌉ + 1) = 3 · 65 and 2 · (4,096 / 8 + 1) = 2 · 513:
    1,237 blocks; 10⁹ bytes hold 26,709 blocks (10⁹ // 37,440)."""
    r = dsv4_cache.deepseek_v4_blocks({**SMALL, "compress_ratios": [128, 128, 0]}, 10 ** 9, 4096, 2048)
    assert 2 * 1728 < 37440 and 37440 // 32832 == 1 and 10 ** 9 // 37440 == 26709
    assert (r["block_bytes"], r["groups"], r["repeats"]) == (37440, 6, None)
    assert r["blocks_per_request"] == 16 + 3 * 65 + 2 * 513 == 1237
    assert r["blocks"] == 26709 and r["max_concurrency"] == Fraction(26709, 1237) and r["requests"] == 26709 // 1237


def test_an_unknown_release_is_refused():
    """The releases whose layouts are read are 0.33 and 0.20; any other is refused in one line naming it."""
    with pytest.raises(SymllmError) as e:
        dsv4_cache.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048, release="0.25")
    assert str(e.value) == "release: '0.25'; expected one of 0.33, 0.20"
