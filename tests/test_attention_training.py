"""A training step's attention core at its kernel's rates (symllm.costs.attention_training): the figures as
published, the lookup (causal figure, nearest head width, forward-only where recorded), the kernel each engine
runs, the backward's FLOPs as torch counts them, and the rule by hand."""
from __future__ import annotations

import math
from fractions import Fraction

import pytest

import symllm
from symllm.costs import attention_training as at, figures, tiles

LENGTHS = [512, 1024, 2048, 4096, 8192, 16384]

# FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608), figure 5 (forward, H100 80GB SXM5, FP16/BF16), the
# FlashAttention-2, cuDNN and FlashAttention-3 bars' printed TFLOP/s at 512 ... 16k, copied by hand from
# Dao-AILab/flash-attention assets/flash3_fp16_fwd.png (7ef24848, 2024-07-11), by mask and head width.
H100_FWD = {
    "causal": {"64": {"fa2": [180, 229, 262, 284, 295, 299], "cudnn": [225, 288, 334, 363, 379, 388],
                      "fa3": [197, 265, 371, 420, 460, 473]},
               "128": {"fa2": [191, 260, 298, 319, 333, 335], "cudnn": [315, 410, 484, 518, 529, 539],
                       "fa3": [292, 423, 521, 579, 602, 616]},
               "256": {"fa2": [208, 251, 278, 293, 297, 298], "cudnn": [308, 391, 450, 483, 497, 509],
                       "fa3": [286, 427, 537, 612, 628, 642]}},
    "full": {"64": {"fa2": [282, 306, 318, 321, 322, 324], "cudnn": [335, 373, 395, 408, 412, 413],
                    "fa3": [333, 392, 460, 476, 496, 497]},
             "128": {"fa2": [309, 350, 362, 368, 370, 370], "cudnn": [497, 574, 617, 609, 600, 595],
                     "fa3": [467, 565, 625, 638, 646, 648]}},
}
# The same paper's figure 6 (backward, no causal panel published), head width 128 and 64.
H100_BWD = {"128": {"fa2": [214, 260, 291, 310, 318, 322], "cudnn": [305, 408, 465, 499, 518, 516],
                    "fa3": [316, 424, 501, 542, 559, 561]},
            "64": {"fa2": [198, 238, 264, 279, 287, 291], "cudnn": [266, 348, 395, 417, 432, 433],
                   "fa3": [272, 363, 422, 453, 472, 474]}}
# FlashAttention-2 (Dao 2023, arXiv 2307.08691), forward + backward with the causal mask, FlashAttention-2's bars:
# figure 7(c)/(d) on the H100 80GB SXM5 (assets/flash2_h100_fwd_bwd_benchmark.png) and figure 4(c)/(d) on the
# A100 80GB SXM4 (assets/flash2_a100_fwd_bwd_benchmark.png), both added at 4f285b35 (2023-07-17), head 64 and 128.
H100_FA2_FWD_BWD = {"64": [141, 192, 232, 257, 273, 284], "128": [163, 221, 265, 294, 308, 328]}
A100_FWD_BWD = {"64": [88, 119, 140, 156, 165, 171], "128": [99, 133, 155, 173, 182, 189]}


def _points(values):
    return list(zip(LENGTHS, values))


def test_the_figures_are_the_papers():
    """Every figure the rule reads, at every published length, is the paper's bar; nothing else is recorded."""
    table = figures.data()["attention_prefill"]["training"]
    h100, a100 = table["h100"], table["a100"]
    for kernel in ("fa2", "cudnn", "fa3"):
        for mask, widths in H100_FWD.items():
            got = {w: [(s, int(v)) for s, v in points] for w, points in h100[kernel]["fwd"][mask].items()}
            assert got == {w: _points(k[kernel]) for w, k in widths.items()}, (kernel, mask)
        got = {w: [(s, int(v)) for s, v in points] for w, points in h100[kernel]["bwd"]["full"].items()}
        assert got == {w: _points(k[kernel]) for w, k in H100_BWD.items()}, kernel
        assert set(h100[kernel]["bwd"]) == {"full"}  # no causal backward is published
    got = {w: [(s, int(v)) for s, v in points] for w, points in h100["fa2"]["fwd_bwd"]["causal"].items()}
    assert got == {w: _points(v) for w, v in H100_FA2_FWD_BWD.items()}
    got = {w: [(s, int(v)) for s, v in points] for w, points in a100["fa2"]["fwd_bwd"]["causal"].items()}
    assert got == {w: _points(v) for w, v in A100_FWD_BWD.items()}
    assert set(a100["fa2"]) == {"fwd_bwd"}  # no forward-only A100 figure recorded
    assert h100["card"] == "h100-sxm" and a100["card"] == "a100-80gb" and "a100-40gb" in a100["cards"]
    assert set(h100["source"]) == {"fwd", "bwd", "fwd_bwd"} and set(a100["source"]) == {"fwd_bwd"}


def test_the_lookup_takes_the_nearest_head_width():
    """The nearest recorded head width (a tie the wider): forwards at 64, 128 and 256; backwards at 64 and 128;
    the A100 pair at 64 and 128."""
    assert [at.figure("fa3", "fwd", "causal", d)[0] for d in (32, 64, 80, 96, 128, 160, 192, 256, 512)] == \
        [64, 64, 64, 128, 128, 128, 256, 256, 256]
    assert [at.figure("cudnn", "bwd", "full", d)[0] for d in (64, 96, 256)] == [64, 128, 128]
    assert [at.figure("fa2_a100", "fwd_bwd", "causal", d)[0] for d in (64, 256)] == [64, 128]
    assert at.figure("cudnn", "fwd_bwd", "causal", 128) is None and at.figure("fa2_a100", "fwd", "causal", 128) is None


def test_the_causal_backward_is_the_pairs_remainder():
    """FlashAttention-2 on an H100, causal, head 128 at 4k by hand: the pair's 3.5 forwards' FLOPs at 294
    TFLOP/s less one forward at 319 leave 2.5 forwards' FLOPs for the backward: 2.5/(3.5/294 - 1/319) = 285.06
    TFLOP/s, 0.894 of the forward (without the mask the paper's ratio is 310/368 = 0.842). Head 64 reads its own
    pair (257 and 284 at 4k); head 256 the forward of its panel (293 at 4k) and head 128's ratio."""
    backward = 2.5 / (3.5 / 294 - 1 / 319)
    assert backward == pytest.approx(285.0638, rel=1e-6)
    assert float(at.backward_ratio(4096)) == pytest.approx(backward / 319, rel=1e-12)
    assert float(at.backward_ratio(4096, head_dim=64)) == pytest.approx(2.5 / (3.5 / 257 - 1 / 284) / 284, rel=1e-12)
    assert at.backward_ratio(4096, head_dim=256) == at.backward_ratio(4096)
    assert at.backward_ratio(4096, causal=False) == Fraction(310, 368)
    pairs = Fraction(4096 ** 2 // 2 + 64 * 4096, 4096 ** 2 // 2)  # the tiles' pairs over the paper's s²/2
    f, b = at.core_rates(4096, kernel="fa2")
    assert f == Fraction(319_000, 989_400) * pairs and float(b) == pytest.approx(backward / 989.4 * float(pairs))
    assert at.core_rates(4096, 256, "fa2")[0] == Fraction(293_000, 989_400) * pairs


def test_cudnn_and_fa3_backwards_take_the_unmasked_ratio_at_their_head_width():
    """No causal backward is published for cuDNN or FlashAttention-3: the causal forward times the backward over
    the forward without the mask, at the head width's panel (64: 432/412 for cuDNN at 8k; 128: 518/600), read
    linearly in log2(s) between lengths (6,144 tokens: 0.585 of the way from 4k to 8k) and flat beyond 16k."""
    assert at.backward_ratio(8192, "cudnn", 64) == Fraction(432, 412)
    assert at.backward_ratio(8192, "cudnn") == Fraction(518, 600)
    assert at.backward_ratio(65536, "fa3") == Fraction(561, 648)
    w = math.log2(6144 / 4096)
    fwd, bwd = 638 + (646 - 638) * w, 542 + (559 - 542) * w
    assert float(at.backward_ratio(6144, "fa3")) == pytest.approx(bwd / fwd, rel=1e-12)
    f, b = at.core_rates(8192, 64, "cudnn")   # 379 TFLOP/s causal, head 64, on its tiles (128 x 128 at head 64)
    pairs = Fraction(tiles.causal_tiles(8192, tile=tiles.tile(64)), 8192 ** 2 // 2)
    assert f == Fraction(379_000, 989_400) * pairs and b == f * Fraction(432, 412)


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


def test_torchs_kernel_keeps_the_unmasked_ratio_it_was_read_on():
    """Off the papers' kernels the backward is torch's measured forward times FlashAttention-2's H100 backward over
    forward without the mask at head width 128 (attention_tiles.train_basis was read on it), at every width."""
    for d in (64, 128):
        f, b = at.core_rates(4096, d)
        assert f == tiles.attention_prefill(4096, d, tiles=True) and b == f * Fraction(310, 368)


@pytest.mark.parametrize("head, bar", [(128, 182), (64, 165)])
def test_an_a100_core_keeps_the_papers_forward_and_backward_time(head, bar):
    """FlashAttention-2 on an A100 at 8k tokens, by hand: a forward of F = 4·s²/2·d FLOPs per head (the paper's
    causal count) and its backward (2.5 F) take 3.5 F at the head width's bar (figure 4(d) 182, 4(c) 165 TFLOP/s);
    read on the kernel's tiles the same core runs (tiles' pairs)/(s²/2) times the FLOPs in that time."""
    s, heads = 8192, 4096 // head
    paper = 4 * (s * s // 2) * head * heads
    on_tiles = Fraction(paper) * Fraction(tiles.causal_tiles(s, tile=tiles.tile(head)), s * s // 2)
    seconds = at.core_training_s(on_tiles, s, head, kernel="fa2_a100", peak=312 * 10 ** 12)
    assert seconds == Fraction(7, 2) * paper / (bar * 10 ** 12)


def test_a_bf16_torchtitan_step_by_hand(monkeypatch):
    """Llama 3.1 8B, one 8,192-token sequence, torchtitan on one H100 SXM (memory widened, nothing sent; its
    optimizer's passes left out): the step with the attention core less the step without it (the core's FLOPs
    taken out, core_training_s zeroed) is the core's time alone, FlashAttention-2's in the paper's convention:
    a forward of F = 4·32·128·(8192²/2)·32 FLOPs at 333 TFLOP/s (FA3 paper, figure 5(d)) and its backward, the
    rest of the causal pair's 3.5 F at 308 TFLOP/s (FA2 paper, figure 7(d)): 3.5 F / 308 TFLOP/s in all."""
    monkeypatch.delitem(figures.data()["engines"]["torchtitan"], "optimizer_bytes")
    opts = dict(gpu="h100-sxm", gpu_memory=1000, batch=1, seq=8192, engine="torchtitan")
    step = symllm.workload("llama3.1-8b", **opts)["time"]["expected"]["training_step_s"]
    from symllm.costs import efficiency
    monkeypatch.setattr(efficiency, "core_training_s", lambda *a, **k: 0)
    without = symllm.workload("llama3.1-8b", **opts)["time"]["expected"]["training_step_s"]
    forward = 4 * 32 * 128 * (8192 ** 2 // 2) * 32
    assert step - without == pytest.approx(3.5 * forward / 308e12, rel=1e-9)
    assert tiles.causal_tiles(8192) == 8192 ** 2 // 2 + 64 * 8192  # the pairs the rates are read on
