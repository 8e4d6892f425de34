"""Which matmuls Megatron-Core runs in FP8 under --compute-dtype fp8 (issue 40; the megatron and nemo engines'
fp8_linears_only in efficiency.json), read at the versions the Megatron-Bridge rows' 25.11 container pins
(Megatron-Bridge v0.2.1, its 3rdparty/Megatron-LM at 0d8e071, Transformer Engine release_v2.9):

- megatron/core/transformer/transformer_block.py enters fp8_autocast around each transformer layer, with
  megatron/core/fp8_utils.py's Float8CurrentScaling(fp8_format, fp8_dpa=config.fp8_dot_product_attention);
- Transformer Engine's DotProductAttention runs its kernels with fp8=self.fp8 and
  self.fp8_meta["recipe"].fp8_dpa: QK^T and PV stay bf16 unless fp8_dpa (or fp8_mha) is set, and the
  performance recipes leave MixedPrecisionConfig.fp8_dot_product_attention at False
  (scripts/performance/utils/helpers.py get_precision_config("fp8_cs"), which also sets
  first_last_layers_bf16 = False: every layer's linears run FP8);
- gpt_model.py's output_layer is megatron.core.tensor_parallel.ColumnParallelLinear, whose forward and backward
  are torch.matmul calls in the weights' dtype (bf16), not a Transformer Engine module."""
from __future__ import annotations

from fractions import Fraction

import pytest

import symllm


def test_megatron_fp8_runs_the_layers_linears_only_at_the_fp8_peak():
    """Llama 3.1 8B on one H100 SXM (memory widened so the step fits, nothing sent), one 8,192-token sequence,
    --engine megatron --compute-dtype fp8, by hand: the blocks' linears, 3 x 2·8192·32·(4096·(4096 + 2·1024) +
    4096·4096 + 3·4096·14336) FLOPs, at the fp8 GEMM table and peak (1,978.9 TFLOP/s); the output head
    (3 x 2·8192·4096·128256) at bf16's (989.4 TFLOP/s); both at Megatron's train_factor 0.8 read on the step
    without its attention core (x 0.9645, attention_tiles.train_basis) and on the H100 SXM's memory (its
    x = 1/(0.8·0.9645) - 1 beyond the GEMMs, of which 0.43 streams 4,800/3,350 times as long as on the H200:
    train_bandwidth); the attention core, cuDNN's on an H100 (Transformer Engine's fused attention), in the FA3
    paper's convention: a forward of 4·32·128·(8192²/2)·32 FLOPs at its causal 529 TFLOP/s, the backward 2.5 times
    those FLOPs at 529 x 518/600 (its backward over forward at 8k); plus FP8 current
    scaling's quantization of each
    linear's input in forward (4096 + 4096 + 4096 + 14336 = 26,624 elements a row and layer) and of its output's
    gradient in backward ((4096 + 2·1024) + 4096 + 2·14336 + 4096 = 43,008), 6 bytes an element on Hopper at
    0.88 of 3.35 TB/s. NeMo runs Megatron-Core: the same step."""
    from symllm.costs.efficiency import gemm
    t, layers = 8192, 32
    linears = 3 * 2 * t * layers * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336)
    core, head = 3 * 4 * 32 * 128 * (t * t // 2 + 64 * t) * layers, 3 * 2 * t * 4096 * 128256
    fp8 = gemm("fp8", 16384, "h100-sxm") * 1_978_900_000_000_000
    bf16 = gemm("bf16", 16384, "h100-sxm") * 989_400_000_000_000
    forward, backward = 4096 + 4096 + 4096 + 14336, (4096 + 2 * 1024) + 4096 + 2 * 14336 + 4096
    assert (forward, backward) == (26624, 43008)
    cast = Fraction(t * layers * (forward + backward) * 6) / (Fraction(88, 100) * 3_350_000_000_000)
    x = 1 / (Fraction(4, 5) * Fraction("0.9645")) - 1
    factor = 1 / (1 + x * (1 - Fraction(43, 100) + Fraction(43, 100) * Fraction(4800, 3350)))
    paper = Fraction(4 * 32 * 128 * (t * t // 2) * layers)  # one forward on s²/2 pairs, as the figures count
    attention = (paper / 529 + Fraction(5, 2) * paper / (529 * Fraction(518, 600))) / 10 ** 12
    hand = (Fraction(linears) / (fp8 * factor) + Fraction(head) / (bf16 * factor) + attention + cast)
    opts = dict(gpu="h100-sxm", gpu_memory=1000, batch=1, seq=t, compute_dtype="fp8")
    for engine in ("megatron", "nemo"):
        got = symllm.workload("llama3.1-8b", engine=engine, **opts)["time"]["expected"]["training_step_s"]
        assert got == pytest.approx(float(hand), rel=1e-12), engine
    # every matmul at fp8 (the core at the GEMMs' rate too) would be faster: the core and the head are 1.31e14 of
    # the step's 4.74e14 FLOPs
    everything_fp8 = Fraction(linears + core + head) / (fp8 * factor) + cast
    assert float(everything_fp8) < float(hand)


def test_bf16_training_is_unchanged_by_the_filter(monkeypatch):
    """fp8_linears_only applies under --compute-dtype fp8 only: a bf16 Megatron step is the same without it."""
    from symllm.costs import figures
    opts = dict(gpu="h100-sxm", gpu_memory=1000, batch=1, seq=8192, engine="megatron")
    before = symllm.workload("llama3.1-8b", **opts)["time"]["expected"]["training_step_s"]
    monkeypatch.setitem(figures.data()["engines"]["megatron"], "fp8_linears_only", False)
    assert symllm.workload("llama3.1-8b", **opts)["time"]["expected"]["training_step_s"] == before
