"""FlashAttention-3's forward tiles on Hopper (Dao-AILab/flash-attention hopper/tile_size.h, tile_size_fwd_sm90 at
8a80215), read by hand, and the engines that run FA3 there (vLLM V1's get_flash_attn_version, SGLang's fa3 default
backend) prefilling on them."""
from __future__ import annotations

import pytest

import symllm
from symllm.costs import figures, tiles
from symllm.costs.tiles import causal_tiles


@pytest.mark.parametrize("head_dim,dtype,expected", [
    # element_size 2, causal, not local, TMA cache, headdim_v = headdim:
    (64, "bf16", (192, 128)),   # headdim <= 64: {192, use_blockN_128 ? 128 : 192}, is_causal -> 128
    (80, "bf16", (192, 144)),   # <= 96: {192, is_local || paged_kv_non_TMA ? 128 : 144}
    (128, "bf16", (128, 128)),  # <= 128: {128, use_blockN_128 ? 128 : 176}, is_causal -> 128
    (192, "bf16", (128, 112)),  # <= 192: {128, headdim_v <= 128 ? 128 : 112}, headdim_v 192 -> 112
    (256, "bf16", (128, 80)),   # above: {128, is_local ? 64 : 80}
    # fp8 (element_size 1):
    (64, "fp8", (192, 160)), (96, "fp8", (192, 128)), (128, "fp8", (128, 224)), (192, "fp8", (128, 160)),
    (256, "fp8", (128, 128)),
])
def test_fa3_tiles_as_tile_size_h_sets_them(head_dim, dtype, expected):
    assert tiles.tile(head_dim, "fa3", dtype) == expected


def test_fa2_tiles_unchanged():
    """FlashAttention-2's (flash_fwd_launch_template.h): 128 x 128 at head width 64, 128 x 64 at 128."""
    assert tiles.tile(64) == (128, 128) and tiles.tile(128) == (128, 64)


@pytest.mark.parametrize("engine,gpu,kernel", [
    ("vllm", "h100-sxm", "fa3"), ("vllm", "h200", "fa3"), ("vllm", "a100-80gb", "fa2"),  # sm90 only
    ("sglang", "h100-sxm", "fa3"), ("sglang", "l40s", "fa2"),
    ("trtllm", "h100-sxm", "fa2"), ("tgi", "h100-sxm", "fa2"), ("vllm-v0", "h100-sxm", "fa2"),
])
def test_which_engines_run_fa3(engine, gpu, kernel):
    assert tiles.attention_kernel(figures.engine(engine), gpu) == kernel


def test_a_vllm_prefill_on_hopper_runs_fa3s_tiles():
    """Llama 3.2 1B (head width 64, 32 heads, 16 layers), a 1,024-token prompt on an H100: FA2 runs 128 x 128 tiles,
    query block m its m + 1 key blocks: 36 tiles of 16,384 pairs = 589,824; FA3 runs 192 x 128, six query blocks
    (the last padded) of ceil((m + 1) x 192 / 128) key blocks, at most 8: 2 + 3 + 5 + 6 + 8 + 8 = 32 tiles of
    24,576 = 786,432. At the measured per-pair rate the attention core takes 196,608 pairs x 4 x 32 x 64 x 16 FLOPs
    longer under vLLM (FA3) than under TGI (no FA3), whose GEMMs are the same; on an A100 the two are equal."""
    from fractions import Fraction
    assert causal_tiles(1024, tile=(128, 128)) == 36 * 128 * 128 == 589_824
    assert causal_tiles(1024, tile=(192, 128)) == 32 * 192 * 128 == 786_432

    def compute(engine, gpu):
        return symllm.workload("llama3.2-1b", gpu=gpu, engine=engine, seq=1024, dtype="bf16")[
            "time"]["expected"]["prefill_compute_s"]
    eta = tiles.attention_prefill(1024, 64, tiles=True)
    extra = Fraction(196_608 * 4 * 32 * 64 * 16) / (eta * Fraction("989.4e12"))
    assert compute("vllm", "h100-sxm") - compute("tgi", "h100-sxm") == pytest.approx(float(extra), rel=1e-6)
    assert compute("vllm", "a100-80gb") == pytest.approx(compute("tgi", "a100-80gb"), rel=1e-12)
