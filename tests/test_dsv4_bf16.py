"""DeepSeek-V4's bf16 serving cache as vLLM 0.33.0 lays it out (symllm.costs.dsv4_cache: layout "bf16").

Expected numbers are hand arithmetic written out here from vLLM 0.33.0's own code, read by hand in the PyPI wheel
vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl (``pip download vllm==0.33.0 --no-deps``, unzipped, not installed;
``vllm/_version.py``: 0.33.0, commit 4ba787ec9; read 2026-11-29):

* vllm/models/deepseek_v4/attention.py: ``_resolve_dsv4_kv_cache_dtype`` maps ``--kv-cache-dtype`` by the
  backend's layout: FlashMLA's fp8_ds_mla layout turns ``auto`` into ``fp8`` and any fp8 into ``fp8_ds_mla``
  (bf16 there is a ValueError); a plain-row backend (FlashInfer) keeps fp8 as ``float8_e4m3fn`` and ``auto`` /
  ``bfloat16`` as ``torch.bfloat16``. ``DeepseekV4Attention.get_kv_cache_spec`` (ratio > 1): ``MLAAttentionSpec(
  block_size=cache_config.block_size, num_kv_heads=1, head_size=512, dtype=bfloat16, tokens_per_state=ratio,
  alignment=576 if fp8_ds_mla else 512, state_content_bytes=584 if fp8_ds_mla else None)``;
  ``DeepseekV4IndexerCache.get_kv_cache_spec``: uint8 keys of ``head_dim + head_dim // 128 · 4`` = 132 bytes
  (the FP8 indexer, the default) whatever the attention's cache, ``alignment=576 if fp8_ds_mla else 512``;
* vllm/v1/attention/backends/mla/sparse_swa.py: ``DeepseekV4SWACache`` (block 64), ``SlidingWindowMLASpec`` in
  the attention's dtype, ``state_content_bytes`` None and ``alignment`` 512 off fp8_ds_mla;
* vllm/models/deepseek_v4/compressor.py: ``CompressorStateCache``: fp32, ``state_dim = 2 · coff · head_dim``,
  blocks 4 (ratio 4) and 8 (ratio 128), ``alignment=576 if fp8_ds_mla else 512``;
* vllm/v1/kv_cache_interface.py: ``AttentionSpec.state_content_size_bytes`` = ``(head_size + head_size_v) ·
  dtype size`` where ``state_content_bytes`` is None, ``head_size_v = 0`` on ``MLAAttentionSpec``; a page is
  ``num_heads · num_states · state_content_size_bytes``, ``num_states = block_size // tokens_per_state``,
  rounded up to ``alignment`` (``_apply_alignment_padding``); ``is_uniform_type`` looks at block sizes and spec
  classes only (not dtypes), so the buckets are those of the fp8 layout;
* vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py: ``DeepseekV4FlashInferMLASparseBackend`` (kernel block
  256, ``use_fp8_ds_mla_layout = False`` on ``DeepseekV4FlashInferMLAAttention``): ``supports_combination``
  takes ``auto``/``bfloat16``/``fp8`` on SM10x, fp8 only on SM12x, and "requires SM10x or SM12x";
  vllm/models/deepseek_v4/nvidia/model.py ``_select_dsv4_attn_cls``: FlashInfer only where
  ``--attention-backend FLASHINFER_MLA_SPARSE_DSV4`` is given (or on SM12, in the fp8_ds_mla layout), FlashMLA
  otherwise;
* vllm/v1/core/kv_cache_planning.py (the grouping, as tests/test_dsv4_serving.py writes it out for fp8_ds_mla):
  ``_get_packed_kv_cache_groups``, ``_get_kv_cache_bytes_per_block`` (no block-stride alignment off
  fp8_ds_mla), ``get_kv_cache_config_from_groups``.

B200 and GB200 are compute capability 10.0 (NVIDIA, developer.nvidia.com/cuda-gpus); H100 and H200 9.0."""
import json
from fractions import Fraction

import pytest

from symllm.costs import dsv4_cache, serving
from symllm.errors import SymllmError

from .test_dsv4 import FLASH_BASE
from .test_dsv4_serving import SMALL
from .test_serve_refusals import no_workload  # noqa: F401 (a fixture)


def test_the_bf16_pages_by_hand():
    """A bf16 entry is (512 + 0) · 2 = 1,024 bytes; every page rounds up to 512: the window keys 64 · 1,024 =
    65,536 (= 128 · 512, no padding); a CSA layer's entries 256 / 4 · 1,024 = 65,536; an HCA layer's 256 / 128 ·
    1,024 = 2,048 (= 4 · 512); the indexer's keys 64 · 132 = 8,448 -> 17 · 512 = 8,704 (576's 8,640 in
    fp8_ds_mla); the compressors' states 4 · (2 · 2 · 512) · 4 = 8 · (2 · 512) · 4 = 32,768 (= 64 · 512) and
    4 · (2 · 2 · 128) · 4 = 8,192 (= 16 · 512), unpadded (fp8_ds_mla pads them to 32,832 and 8,640)."""
    assert dsv4_cache.DSV4_LAYOUTS["bf16"] == ((512 + 0) * 2, 512)
    pad = lambda size: dsv4_cache._pad(size, 512)  # noqa: E731
    assert (pad(64 * 1024), pad(256 // 4 * 1024), pad(256 // 128 * 1024), pad(64 * 132)) == (65536, 65536, 2048,
                                                                                              8704)
    assert 17 * 512 == 8704 > 64 * 132 > 16 * 512
    assert (pad(4 * 2 * 2 * 512 * 4), pad(8 * 2 * 1 * 512 * 4), pad(4 * 2 * 2 * 128 * 4)) == (32768, 32768, 8192)


def test_small_config_bf16_by_hand():
    """CSA, HCA, CSA in bf16: the full group {65,536: 2 CSA entries, 8,704: 2 indexer keys, 2,048: 1 HCA entry} is
    unbalanced and whole: 2 · 65,536 + 2 · 8,704 + 2,048 = 150,528 bytes; the window keys {65,536: 3}, the CSA
    states {32,768: 2, 8,192: 2} (balanced, two sizes: repeats from 2), the HCA states {32,768: 1}; from 2 over
    [3, 2, 1]: 2 pads 1 + 0 + 1 = 2, 3 pads 0 + 1 + 2 = 3 -> 2 repeats; the window keys split in ⌈3 / 2⌉ = 2
    (131,072 and 65,536 bytes), the CSA states 2 · 32,768 + 2 · 8,192 = 81,920, the HCA states 32,768: 5 groups,
    the block the full group's 150,528 bytes. ⌊10^9 / 150,528⌋ = 6,643 blocks (150,528 · 6,644 = 1,000,108,032 >
    10^9). The blocks a request takes do not depend on the bytes: 16 + 2 · 65 + 1,025 + 513 = 1,684 (4,096
    tokens, 2,048 batched, two steps in flight), so ⌊6,643 · 4,096 / 1,684⌋ = 16,157 tokens logged."""
    r = dsv4_cache.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048, layout="bf16")
    assert 2 * 65536 + 2 * 8704 + 2048 == 150528 > max(2 * 65536, 2 * 32768 + 2 * 8192, 32768)
    assert 150528 * 6643 <= 10 ** 9 < 150528 * 6644
    assert (r["layout"], r["block_bytes"], r["repeats"], r["groups"], r["blocks"]) == ("bf16", 150528, 2, 5, 6643)
    assert (r["blocks_per_request"], r["requests"]) == (16 + 2 * 65 + 1025 + 513, 6643 // 1684)
    assert r["max_concurrency"] == Fraction(6643, 1684) and r["kv_tokens"] == 6643 * 4096 // 1684 == 16157


def test_flash_base_bf16_by_hand():
    """Flash-Base (2 window-only, 21 CSA, 20 HCA layers) in bf16: the full group 21 · 65,536 + 21 · 8,704 + 20 ·
    2,048 = 1,376,256 + 182,784 + 40,960 = 1,600,000 bytes (6,250 a token of its 256); repeats 22 as in fp8 (the
    counts [43, 21, 20] do not change); the window keys 22 · 65,536 = 1,441,792 and 21 · 65,536 = 1,376,256, the
    CSA states 21 · 32,768 + 21 · 8,192 = 860,160, the HCA states 20 · 32,768 = 655,360: the block is the full
    group's 1,600,000 bytes (fp8_ds_mla's 1,002,240 × 1.6). Of 80 GiB: ⌊85,899,345,920 / 1,600,000⌋ = 53,687
    blocks, 53,687 // 1,684 = 31 requests of 4,096 tokens (fp8_ds_mla: 50)."""
    assert 21 * 65536 + 21 * 8704 + 20 * 2048 == 1600000 > 22 * 65536 == 1441792
    r = dsv4_cache.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 4096, 8192, layout="bf16")
    assert (r["block_bytes"], r["repeats"], r["groups"]) == (1600000, 22, 5)
    assert r["blocks"] == 85899345920 // 1600000 == 53687
    assert (r["blocks_per_request"], r["requests"]) == (1684, 31)


def test_which_layout_vllm_takes():
    """No KV cache dtype given is vLLM's ``auto``, which FlashMLA (the default backend on SM90 and SM100) turns
    into fp8_ds_mla; fp8 is fp8_ds_mla; bf16 is FlashInfer's rows, on an SM10x card only; anything else, and bf16
    in vLLM 0.20.0 ("DeepseekV4 only supports fp8 kv-cache format for now"), refused in one line."""
    assert dsv4_cache.layout("bf16", False, "h200") == dsv4_cache.layout("fp8", True, "h100-sxm") == "fp8_ds_mla"
    assert dsv4_cache.layout("bf16", True, "b200") == dsv4_cache.layout("bf16", True, "gb200") == "bf16"
    for kv, gpu, line in (
            ("bf16", "h200", "kv_dtype: bf16; on h200 vLLM caches DeepSeek-V4 in fp8 only (bf16: b200, gb200)"),
            ("fp16", "b200", "kv_dtype: fp16; vLLM caches DeepSeek-V4 in fp8 (FlashMLA's fp8_ds_mla) or bf16 only")):
        with pytest.raises(SymllmError) as e:
            dsv4_cache.layout(kv, True, gpu)
        assert str(e.value) == line
    with pytest.raises(SymllmError) as e:
        dsv4_cache.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048, release="0.20", layout="bf16")
    assert str(e.value) == "kv_dtype: bf16; vLLM 0.20.0 caches DeepSeek-V4 in fp8 only (release 0.20)"


def test_serve_without_a_kv_dtype_is_vllms_auto_and_bf16_serves_on_b200(cli, tmp_path):
    """capacity on an H200 with no KV cache dtype lays out fp8_ds_mla, as with --kv-format fp8 (the same blocks of
    1,002,240 bytes); on a B200 with --kv-dtype bf16 the blocks are what is left over 1,600,000 bytes, and count
    --serve prints 1,600,000 / 256 = 6,250 bytes a token in the bf16 layout."""
    auto = serving.capacity(FLASH_BASE, gpu="h200", tp=8, seq=4096)
    assert auto["layout"] == "fp8_ds_mla" and auto["blocks"] == int(auto["kv_cache_bytes"] // 1002240) > 0
    r = serving.capacity(FLASH_BASE, gpu="b200", tp=8, seq=4096, kv_dtype="bf16")
    assert r["layout"] == "bf16" and r["blocks"] == int(r["kv_cache_bytes"] // 1600000) > 0
    assert r["max_concurrency"] == Fraction(r["blocks"], 1684) and r["fits"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(FLASH_BASE))
    out = cli(["count", str(path), "--seq", "4096", "--serve", "--gpu", "b200", "--tp", "8", "--kv-dtype", "bf16"])
    assert out.code == 0, out.err
    assert "6,250 bytes a token, bf16" in out.out and f"{r['blocks']:,} blocks of 256" in out.out


# --- the MXFP4 indexer cache (vLLM 0.33.0's indexer_kv_dtype) ----------------------------------------------------
# vllm/models/deepseek_v4/attention.py, DeepseekV4Indexer.__init__: "MXFP4 stores two values per byte plus one
# UE8M0 byte per 32 values", k_cache_head_dim = head_dim // 2 + head_dim // MXFP4_BLOCK_SIZE (32,
# vllm/models/deepseek_v4/common/ops/fused_indexer_q.py), else head_dim + head_dim // 128 · 4; chosen by
# AttentionConfig.indexer_kv_dtype (vllm/config/attention.py; vllm serve --attention-config), "auto" -> "fp8"
# (dsa_indexer_uses_fp4, vllm/v1/attention/backends/mla/indexer.py), which refuses mxfp4 off sm_10x.

def test_the_mxfp4_indexer_by_hand():
    """An MXFP4 key is 128 / 2 + 128 / 32 = 64 + 4 = 68 bytes (FP8's 128 + 4 = 132); a page 64 · 68 = 4,352 -> 4,608
    in either layout (8 · 576 = 9 · 512). The small config in fp8_ds_mla: the full group 2 · 37,440 + 2 · 4,608 +
    1,728 = 85,824 bytes, still above the window keys' 74,880 and the CSA states' 2 · 32,832 + 2 · 8,640 = 82,944:
    ⌊10^9 / 85,824⌋ = 11,651 blocks. Flash-Base at 80 GiB: fp8_ds_mla 21 · 37,440 + 21 · 4,608 + 20 · 1,728 =
    917,568 bytes a block, ⌊85,899,345,920 / 917,568⌋ = 93,616 blocks; bf16 21 · 65,536 + 21 · 4,608 + 20 · 2,048 =
    1,513,984 (above the window keys' 1,441,792), 56,737 blocks."""
    assert dsv4_cache.INDEXER_KEY_BYTES == {"fp8": 128 + 4, "mxfp4": 64 + 4}
    assert dsv4_cache._pad(64 * 68, 576) == dsv4_cache._pad(64 * 68, 512) == 4608 == 8 * 576 == 9 * 512
    r = dsv4_cache.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048, indexer="mxfp4")
    assert 2 * 37440 + 2 * 4608 + 1728 == 85824 > 2 * 32832 + 2 * 8640 == 82944
    assert (r["indexer"], r["block_bytes"], r["blocks"]) == ("mxfp4", 85824, 10 ** 9 // 85824) and r["blocks"] == 11651
    f = dsv4_cache.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 4096, 8192, indexer="mxfp4")
    b = dsv4_cache.deepseek_v4_blocks(FLASH_BASE, 80 * 2 ** 30, 4096, 8192, layout="bf16", indexer="mxfp4")
    assert 21 * 37440 + 21 * 4608 + 20 * 1728 == 917568 and 21 * 65536 + 21 * 4608 + 20 * 2048 == 1513984
    assert (f["block_bytes"], f["blocks"]) == (917568, 93616) and (b["block_bytes"], b["blocks"]) == (1513984, 56737)
    assert 917568 * 93616 <= 85899345920 < 917568 * 93617 and 1513984 * 56737 <= 85899345920 < 1513984 * 56738


def test_the_mxfp4_indexer_is_chosen_on_sm10x_only():
    """None (vLLM's "auto") and fp8 are the FP8 indexer; mxfp4 on a B200 or GB200; elsewhere, any other value, and
    on vLLM 0.20.0, or on a model without DeepSeek-V4's indexer cache, refused in one line."""
    assert dsv4_cache.indexer(None, "h200") == dsv4_cache.indexer("fp8", "h200") == "fp8"
    assert dsv4_cache.indexer("mxfp4", "gb200") == "mxfp4"
    with pytest.raises(SymllmError) as e:
        dsv4_cache.indexer("mxfp4", "h200")
    assert str(e.value) == "indexer_kv_dtype: mxfp4; needs b200 or gb200 (vLLM's sm_10x), not h200"
    with pytest.raises(SymllmError) as e:
        dsv4_cache.deepseek_v4_blocks(SMALL, 10 ** 9, 4096, 2048, release="0.20", indexer="mxfp4")
    assert str(e.value) == "indexer_kv_dtype: mxfp4; modelled for vLLM 0.33.0 only (release 0.20)"
    with pytest.raises(SymllmError) as e:
        serving.check("llama3.1-8b", gpu="b200", indexer_kv_dtype="mxfp4")
    assert str(e.value) == "indexer_kv_dtype: applies to DeepSeek-V4's indexer cache (vLLM 0.33.0) only"


def test_count_serve_with_the_mxfp4_indexer(cli, no_workload):
    """count --serve --indexer-kv-dtype mxfp4 on an H200 is refused before any workload is computed."""
    out = cli(["count", "deepseek-v4-flash-base", "--gpu", "h200", "--tp", "8", "--serve", "--indexer-kv-dtype",
               "mxfp4"])
    assert out.code == 2 and no_workload == []
    assert out.err.strip() == "symllm: error: indexer_kv_dtype: mxfp4; needs b200 or gb200 (vLLM's sm_10x), not h200"
