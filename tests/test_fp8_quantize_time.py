"""FP8 training's quantization passes in an expected training step (symllm.costs.fp8_casts.fp8_quantize_s;
issue 40's Megatron-Bridge FP8-CS and torchtitan Float8 rows): each figure by hand arithmetic from Transformer
Engine's docs ('FP8 Current Scaling': two reads of the bf16 tensor, amax then scale and cast, one FP8 byte
written, and on Hopper one more for the transposed copy the backward pass needs; none on Blackwell) and from
torchao's own roofline of its tensorwise Float8Linear (torchao eab345c, torchao/float8/roofline_utils.py: an
amax read of the bf16 tensor, a cast that reads it again and writes FP8 row-major and column-major; the weight
likewise every forward, saved in FP8 for the backward)."""
from __future__ import annotations

from fractions import Fraction

import pytest

import symllm
from symllm.costs import figures, fp8_casts

H100_BW = 3350 * 10 ** 9  # bytes/s, the H100 SXM datasheet
STREAM = Fraction(88, 100)  # memory_stream, measured on the H200


def test_qwen3_30b_a3b_micro_batch_by_hand():
    """Megatron-Bridge's Qwen3-30B-A3B micro-batch (2 x 4096 tokens) on one pipeline stage of 24 MoE layers
    (d 2048, 32 query heads and 4 KV heads of 128, 8 of the experts' gated 768-wide MLPs a token), on an H100:
    forward quantizes the inputs of QKV (2048), O (4096) and, for 8 routed copies, of the gate-and-up (2048)
    and down (768) projections; backward the gradients of QKV's output (4096 + 2 x 512), O's (2048) and, for 8
    copies, the gate-and-up's (2 x 768) and the down's (2048): 6 bytes an element at 0.88 of 3.35 TB/s."""
    rows, layers = 8192, 24
    forward = (2048 + 4096) + 8 * (2048 + 768)
    backward = (4096 + 2 * 512 + 2048) + 8 * (2 * 768 + 2048)
    assert (forward, backward) == (28672, 35840)
    elements = rows * layers * (forward + backward)
    assert elements == 12_683_575_296
    hand = Fraction(elements * 6) / (STREAM * H100_BW)  # 25.8 ms a micro-batch, 1.08 ms a layer
    got = fp8_casts.fp8_quantize_s(rows=rows, layers=layers, moe_layers=layers, k=8, d=2048, d_ff=768,
                                    q=4096, kv=512, rate=STREAM * H100_BW, card="h100-sxm")
    assert got == hand
    assert 0.0257 < float(got) < 0.0259


def test_blackwell_writes_no_transpose_and_recomputation_quantizes_the_forward_again():
    """On a B200 (Blackwell: no explicit transpose) an element costs 5 bytes, not 6; with full recomputation the
    forward's quantizations run twice; tensor parallelism splits every width over its ranks."""
    args = dict(rows=1000, layers=2, d=1024, d_ff=4096, q=1024, kv=256, rate=STREAM * 10 ** 12)
    forward = 1000 * 2 * ((1024 + 1024) + (1024 + 4096))
    backward = 1000 * 2 * ((1024 + 512 + 1024) + (8192 + 1024))
    assert fp8_casts.fp8_quantize_s(**args, card="b200") == Fraction((forward + backward) * 5) / (STREAM * 10 ** 12)
    assert (fp8_casts.fp8_quantize_s(**args, recompute=True)
            == Fraction((2 * forward + backward) * 6) / (STREAM * 10 ** 12))
    assert fp8_casts.fp8_quantize_s(**args, tp=4) == Fraction((forward + backward) * 6, 4) / (STREAM * 10 ** 12)


def test_a_megatron_fp8_step_adds_the_passes_and_nothing_else(monkeypatch):
    """Llama 3.2 1B under --engine megatron --compute-dtype fp8 (one H100, 4 micro-batches of one 4096-token
    sequence): the step is longer than the same step without the engine's FP8 recipe by exactly 4 x the passes
    of 16 layers (d 2048, 32 query heads and 8 KV heads of 64, d_ff 8192: 14,336 elements a row forward,
    23,552 backward)."""
    opts = dict(gpu="h100-sxm", compute_dtype="fp8", engine="megatron", seq=4096, batch=1, micro_batches=4)
    with_passes = symllm.workload("llama3.2-1b", **opts)["time"]["expected"]["training_step_s"]
    monkeypatch.setitem(figures.data()["engines"]["megatron"], "fp8_recipe", None)
    without = symllm.workload("llama3.2-1b", **opts)["time"]["expected"]["training_step_s"]
    forward = (2048 + 2048) + (2048 + 8192)
    backward = (2048 + 2 * 512 + 2048) + (2 * 8192 + 2048)
    assert (forward, backward) == (14336, 23552)
    hand = 4 * 4096 * 16 * (forward + backward) * 6 / (0.88 * 3350e9)
    assert without is not None and with_passes - without == pytest.approx(hand, rel=1e-9)


def test_torchtitan_float8_step_adds_activation_and_weight_casts(monkeypatch):
    """Llama 3.2 1B under --engine torchtitan --compute-dtype fp8 (one H100, 4 micro-batches of one 4096-token
    sequence): torchao's tensorwise Float8Linear casts each linear's input and output gradient at 2 + 2 bf16
    bytes read and 2 FP8 bytes written an element (the activations of the megatron test above), and every
    weight every micro-batch at the same 6 bytes: 16 layers of wq and wo (2048 x 2048), wk and wv (2048 x 512),
    w1, w3 and w2 (2048 x 8192)."""
    opts = dict(gpu="h100-sxm", compute_dtype="fp8", engine="torchtitan", seq=4096, batch=1, micro_batches=4)
    with_passes = symllm.workload("llama3.2-1b", **opts)["time"]["expected"]["training_step_s"]
    monkeypatch.setitem(figures.data()["engines"]["torchtitan"], "fp8_recipe", None)
    without = symllm.workload("llama3.2-1b", **opts)["time"]["expected"]["training_step_s"]
    activations = 4096 * 16 * ((2048 + 2048) + (2048 + 8192) + (2048 + 2 * 512 + 2048) + (2 * 8192 + 2048))
    weights = 16 * (2 * 2048 * 2048 + 2 * 2048 * 512 + 3 * 2048 * 8192)
    assert weights == 973_078_528
    hand = 4 * (activations + weights) * 6 / (0.88 * 3350e9)  # about 36 ms
    assert without is not None and with_passes - without == pytest.approx(hand, rel=1e-9)


def test_torchao_writes_both_layouts_on_blackwell_too():
    """torchao's tensorwise cast writes the column-major copy on every card (its roofline's B200 entry keeps
    both writes): 6 bytes an element on a B200, where Transformer Engine writes 5."""
    args = dict(rows=1000, layers=2, d=1024, d_ff=4096, q=1024, kv=256, rate=STREAM * 10 ** 12, card="b200")
    forward = 1000 * 2 * ((1024 + 1024) + (1024 + 4096))
    backward = 1000 * 2 * ((1024 + 512 + 1024) + (8192 + 1024))
    weights = 2 * (1024 * 1024 + 2 * 1024 * 256 + 1024 * 1024 + 3 * 1024 * 4096)
    got = fp8_casts.fp8_quantize_s(**args, recipe="torchao-tensorwise")
    assert got == Fraction((forward + backward + weights) * 6) / (STREAM * 10 ** 12)
    assert fp8_casts.fp8_quantize_s(**args) == Fraction((forward + backward) * 5) / (STREAM * 10 ** 12)


def test_bf16_and_other_engines_add_no_passes(monkeypatch):
    """A bf16 step, and an fp8 step under an engine with another fp8_recipe (torchtitan's Float8 is torchao's,
    not Transformer Engine's), do not change when the megatron entry's recipe is removed."""
    for opts in (dict(compute_dtype="bf16", engine="megatron"), dict(compute_dtype="fp8", engine="torchtitan")):
        before = symllm.workload("llama3.2-1b", gpu="h100-sxm", seq=4096, **opts)["time"]["expected"]
        with monkeypatch.context() as m:
            m.setitem(figures.data()["engines"]["megatron"], "fp8_recipe", None)
            after = symllm.workload("llama3.2-1b", gpu="h100-sxm", seq=4096, **opts)["time"]["expected"]
        assert before["training_step_s"] is not None and before["training_step_s"] == after["training_step_s"]
