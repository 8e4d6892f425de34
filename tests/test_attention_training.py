"""A training step's attention core at its kernel's rates (symllm.costs.attention_training): the figures as
published, the kernel each engine runs, the backward's FLOPs as torch counts them, and the rule by hand."""
from __future__ import annotations

import math
from fractions import Fraction

import pytest

import symllm
from symllm.costs import attention_training as at, figures, tiles

# FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608), section 4.1's H100 SXM5 figures, head dim 128, BF16,
# TFLOP/s at 512 ... 16k, copied by hand from the bars' labels: forward causal, and without the mask forward and
# backward (the backward figure has no causal variant).
PAPER = {
    "fwd_causal": {"fa2": [191, 260, 298, 319, 333, 335], "cudnn": [315, 410, 484, 518, 529, 539],
                   "fa3": [292, 423, 521, 579, 602, 616]},
    "fwd": {"fa2": [309, 350, 362, 368, 370, 370], "cudnn": [497, 574, 617, 609, 600, 595]},
    "bwd": {"fa2": [214, 260, 291, 310, 318, 322], "cudnn": [305, 408, 465, 499, 518, 516],
            "fa3": [316, 424, 501, 542, 559, 561]},
}
LENGTHS = [512, 1024, 2048, 4096, 8192, 16384]


def test_the_figures_are_the_papers():
    """Every figure the rule reads, at every published length, is the paper's bar."""
    table = figures.data()["attention_prefill"]["training"]
    for direction, kernels in PAPER.items():
        for kernel, values in kernels.items():
            assert [(s, int(v)) for s, v in table[direction][kernel]] == list(zip(LENGTHS, values)), (direction, kernel)
    assert table["card"] == "h100-sxm" and table["head_dim"] == 128 and table["causal"] is False


def test_the_table_is_read_at_the_lengths_and_between_them():
    """At a published length the ratio is the two bars'; between two lengths each bar is read linearly in
    log2(s) (6,144 tokens: 0.585 of the way from 4k to 8k); beyond 16k the last bars hold."""
    assert at.backward_ratio(2048, "cudnn") == Fraction(465, 617)
    w = math.log2(6144 / 4096)  # 0.585
    fwd, bwd = 368 + (370 - 368) * w, 310 + (318 - 310) * w
    assert float(at.backward_ratio(6144, "fa2")) == pytest.approx(bwd / fwd, rel=1e-12)
    assert at.backward_ratio(65536, "fa3") == Fraction(561, 648)
    f, b = at.core_rates(4096, kernel="fa3")   # 579 TFLOP/s causal of 989.4 on s²/2 pairs, read on the tiles
    pairs = Fraction(4096 ** 2 // 2 + 64 * 4096, 4096 ** 2 // 2)
    assert f == Fraction(579_000, 989_400) * pairs and b == f * Fraction(542, 638)


def test_the_backward_runs_two_and_a_half_forwards_as_torch_counts_it():
    """torch's FlopCounterMode formulas for SDPA (its flash and cuDNN kernels): the backward counts five matmuls
    (the scores recomputed) against the forward's two."""
    from torch.utils import flop_counter
    shape = (2, 8, 512, 128)
    ratio = Fraction(flop_counter.sdpa_backward_flop_count(shape, shape, shape, shape),
                     flop_counter.sdpa_flop_count(shape, shape, shape))
    recorded = figures.fraction(figures.data()["attention_prefill"]["training"]["backward_flops"])
    assert ratio == recorded == Fraction(5, 2)


def test_each_training_engine_names_its_kernel_with_a_source():
    """Megatron (and NeMo) run Transformer Engine's cuDNN attention on Hopper cards, torchtitan, llm-foundry and
    DeepSpeed FlashAttention-2; off Hopper cards, and for an engine naming none, torch's measured forward."""
    want = {"megatron": "cudnn", "nemo": "cudnn", "torchtitan": "fa2", "llm-foundry": "fa2", "deepspeed": "fa2"}
    for name, kernel in want.items():
        train = figures.engine(name, "training")
        assert train["attention_kernel_source"]
        assert at.training_kernel(train, "h100-sxm") == kernel and at.training_kernel(train, "h200") == kernel
        assert at.training_kernel(train, "a100-80gb") == ("fa2_a100" if kernel == "fa2" else "torch")
    assert at.training_kernel(figures.engine("hf"), "h100-sxm") == "torch"
    assert at.training_kernel(figures.engine("hf"), "a100-80gb") == "torch"


# FlashAttention-2 (Dao 2023, arXiv 2307.08691), figure 4(d), "Attention forward + backward speed (A100 80GB SXM4)",
# causal, head dim 128, FP16/BF16: the FlashAttention-2 bars' printed TFLOP/s at 512 ... 16k, copied by hand from
# Dao-AILab/flash-attention assets/flash2_a100_fwd_bwd_benchmark.png (4f285b35, 2023-07-17).
A100_FWD_BWD_CAUSAL = [99, 133, 155, 173, 182, 189]


def test_the_a100_figures_are_the_flashattention2_papers():
    """The A100 figure the rule reads is the paper's bar at every length, on the A100 80GB SXM4 (312 TFLOP/s)."""
    a100 = figures.data()["attention_prefill"]["training"]["a100"]
    assert [(s, int(v)) for s, v in a100["fwd_bwd_causal"]] == list(zip(LENGTHS, A100_FWD_BWD_CAUSAL))
    assert a100["card"] == "a100-80gb" and a100["head_dim"] == 128 and "a100-40gb" in a100["cards"]


def test_an_a100_core_keeps_the_papers_forward_and_backward_time():
    """FlashAttention-2 on an A100 at 8k tokens, by hand: a forward of F = 4·s²/2·128 FLOPs per head (the paper's
    causal count) and its backward (2.5 F) take 3.5 F at 182 TFLOP/s; read on the kernel's tiles
    (s²/2 + 64 s pairs) the same core runs (s²/2 + 64 s)/(s²/2) times the FLOPs in that time."""
    s, heads = 8192, 32
    paper = 4 * (s * s // 2) * 128 * heads
    on_tiles = Fraction(paper) * Fraction(s * s // 2 + 64 * s, s * s // 2)
    seconds = at.core_training_s(on_tiles, s, kernel="fa2_a100", peak=312 * 10 ** 12)
    assert seconds == Fraction(7, 2) * paper / (182 * 10 ** 12)


def test_a_bf16_torchtitan_step_by_hand(monkeypatch):
    """Llama 3.1 8B, one 8,192-token sequence, torchtitan on one H100 SXM (memory widened, nothing sent; its
    optimizer's passes left out): the step with the attention core less the step without it (the core's FLOPs
    taken out, core_training_s zeroed) is the core's time alone, FlashAttention-2's in the paper's convention:
    a forward of 4·32·128·(8192²/2)·32 FLOPs at 333 TFLOP/s, its backward 2.5 times those at 333 x 318/370."""
    monkeypatch.delitem(figures.data()["engines"]["torchtitan"], "optimizer_bytes")
    opts = dict(gpu="h100-sxm", gpu_memory=1000, batch=1, seq=8192, engine="torchtitan")
    step = symllm.workload("llama3.1-8b", **opts)["time"]["expected"]["training_step_s"]
    from symllm.costs import efficiency
    monkeypatch.setattr(efficiency, "core_training_s", lambda *a, **k: 0)
    without = symllm.workload("llama3.1-8b", **opts)["time"]["expected"]["training_step_s"]
    forward = 4 * 32 * 128 * (8192 ** 2 // 2) * 32
    assert step - without == pytest.approx((forward / 333e12 + 2.5 * forward / (333e12 * 318 / 370)), rel=1e-9)
    assert tiles.causal_tiles(8192) == 8192 ** 2 // 2 + 64 * 8192  # the pairs the rates are read on
