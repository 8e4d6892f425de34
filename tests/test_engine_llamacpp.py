"""llama.cpp's conventions in the expected times (efficiency.json ``engines.llama.cpp``), by hand arithmetic
from sources independent of the published runs (tests/data/published_runs.json):

- its 2024 batch-1 fp16 mat-vec (ggml-cuda/dmmv.cu) reads with scalar loads; vectorising them gave 1.27x the
  tokens/s of Llama-3-8B F16 on an HBM card and 1.01x on GDDR cards (llama.cpp PR #9816), so fp16 weights
  stream 1.27x slower on HBM cards at batch 1, or, on a card whose SMs and boost clock are known, at the rate
  its SMs issue the loads (6.45 bytes a SM a clock, from llama-bench's A100 80GB PCIe run of Llama-3-8B F16,
  May 2024, a run the published table does not hold) where that is slower than the memory;
- a prompt runs in micro-batches of n_ubatch = 512 tokens (llama.cpp PR #6017), its fp16 GEMMs through
  cuBLAS with fp16 accumulation (ggml_cuda_op_mul_mat_cublas, CUBLAS_COMPUTE_16F), which a GeForce card runs at
  twice its fp32-accumulate peak (NVIDIA's Ada and GA102 whitepapers: 330.3 and 142 TFLOP/s dense).

Llama 3 8B (meta-llama/Meta-Llama-3-8B config.json): 32 layers, width 4,096, 32 query and 8 KV heads of 128,
MLP 14,336, vocabulary 128,256, untied output; 8,030,261,248 parameters."""
from __future__ import annotations

from fractions import Fraction

import pytest

import symllm
from symllm.costs import efficiency, figures

PARAMS, VOCAB, DIM, LAYERS = 8_030_261_248, 128_256, 4096, 32
KV_PER_TOKEN = 2 * LAYERS * 8 * 128 * 2        # K and V, 8 KV heads of 128, fp16
GRAPH, STEP = Fraction(49, 10 ** 7), Fraction(5, 10 ** 4)   # kernel.graph_s; llama.cpp's step_s
ETA = Fraction(88, 100)                          # memory_stream
#: a token's GEMM FLOPs over the linear layers (q, k, v, o; gate, up, down: 2 a weight), and a 1,024-token prompt's:
#: every linear layer over every position, the output head over the last (llama-bench asks the last position's logits)
TOKEN_FLOPS = 2 * LAYERS * (2 * DIM * DIM + 2 * DIM * 1024 + 3 * DIM * 14_336)
PROMPT_FLOPS = 1024 * TOKEN_FLOPS + 2 * VOCAB * DIM
#: bytes a token and layer a llama.cpp fp16 prompt moves beside its GEMMs: every GEMM's fp32 input and output
#: converted at 6 bytes an element (38,912 + 43,008), and its graph's fp32 element-wise nodes (norms, RoPE, cache
#: copies, the attention GEMMs' conversions, the heads' cont, residual adds, SiLU and its mul: 56·4,096 + 28·4,096 +
#: 20·1,024 + 20·14,336 = 651,264; under FlashAttention 20·4,096 fewer: no Q-to-fp16, KQV-to-fp32 or cont)
CONVERSIONS = (38_912 + 43_008) * 6
F32_NODES = 56 * DIM + 28 * DIM + 20 * 1024 + 20 * 14_336
#: the RTX 4090's GEMMs against the H200's (gemm_cards.square: zzc0721/torch-performance-test-data's bf16 torch.mm,
#: the median of the 4090's 162.39, 163.09, 170.06 and 173.31 TFLOP/s over its 165.2, the H200's 790.29 over 989.4)
SQUARE_4090 = (((Fraction("163.09") + Fraction("170.06")) / 2 / Fraction("165.2"))
               / (Fraction("790.29") / Fraction("989.4")))


def _expected(gpu: str, **options) -> dict:
    return symllm.workload("llama3-8b", gpu=gpu, engine="llama.cpp", **options)["time"]["expected"]


def _decode_by_hand(bandwidth_gbs: int, gemv: Fraction) -> Fraction:
    """A batch-1 fp16 step at context 513 (514 positions cached): the weights but the embedding table at
    ``gemv`` x their streaming time, the cache and one position's logits at memory_stream, 16 kernels a layer
    at kernel.graph_s and the step's fixed cost."""
    weights = 2 * (PARAMS - VOCAB * DIM)
    rest = 514 * KV_PER_TOKEN + 2 * VOCAB
    bandwidth = ETA * bandwidth_gbs * 10 ** 9
    return (weights * gemv + rest) / bandwidth + LAYERS * 16 * GRAPH + STEP


ISSUE = Fraction(645, 100)                        # bytes a SM a clock (f16_gemv_issue)


def _prompt_passes_s(pairs: int, f32_nodes: int = F32_NODES, gbs: int = 1008) -> Fraction:
    """A 1,024-token fp16 prompt's memory passes at memory_stream of ``gbs`` GB/s (the RTX 4090's by default): its
    materialised scores, ``pairs`` a head (32) and layer at 24 bytes each, and every token's conversions and fp32
    element-wise nodes (``f32_nodes`` bytes a token and layer)."""
    return (32 * LAYERS * pairs * 24 + 1024 * LAYERS * (CONVERSIONS + f32_nodes)) / (ETA * gbs * 10 ** 9)


def _issue(gbs: int, sms: int, mhz: int) -> Fraction:
    """How much slower than memory_stream the loads issued by ``sms`` SMs at ``mhz`` read the weights (at least 1)."""
    return max(Fraction(1), ETA * gbs * 10 ** 9 / (ISSUE * sms * mhz * 10 ** 6))


@pytest.mark.parametrize("gpu,gbs,gemv", [("a100-80gb", 2039, _issue(2039, 108, 1410)),
                                          ("a100-80gb-pcie", 1935, _issue(1935, 108, 1410)),
                                          ("h100-pcie", 2000, _issue(2000, 114, 1755)),
                                          ("h100-sxm", 3350, Fraction(127, 100)),
                                          ("rtx4090", 1008, Fraction(1)),
                                          ("rtx3090", 936, Fraction(1))])
def test_fp16_decode_streams_slower_on_hbm_cards(gpu, gbs, gemv):
    """fp16 weights at batch 1: on the A100s and the H100 PCIe at 6.45 bytes a SM a clock (108 SMs at 1,410
    MHz: 0.982 TB/s; 114 at 1,755: 1.29 TB/s), slower than 0.88 of their bandwidth; on an H100 SXM (no SM entry)
    1.27x their streaming time (PR #9816's own card); on the GeForce cards at memory_stream (their SMs issue
    2.08 and 0.90 TB/s, above 0.89 and 0.82)."""
    e = _expected(gpu, dtype="fp16", batch=1, seq=1, context=513)
    assert e["decode_token_s"] == pytest.approx(float(_decode_by_hand(gbs, gemv)), rel=1e-12)


def test_the_issue_rate_reproduces_its_source():
    """llama-bench's A100 80GB PCIe run (build 8c570c94, May 2024): Llama-3-8B F16 tg 1024 at 54.56 t/s. The
    harness reads tg 1024 at context 513 (the mean); less the cache and logits at memory_stream and the fixed
    costs, its weights stream at 0.982 TB/s, 6.45 bytes a SM a clock at 108 SMs and 1,410 MHz. The kernel's own
    loads (24 sectors of 32 bytes for 128 weight bytes a warp iteration) at one sector a clock give 5.33, 17%
    under it."""
    weights = 2 * (PARAMS - VOCAB * DIM)
    rest = (514 * KV_PER_TOKEN + 2 * VOCAB) / (ETA * 1935 * 10 ** 9)
    rate = weights / (Fraction(100, 5456) - rest - LAYERS * 16 * GRAPH - STEP)
    assert float(rate / (108 * 1410 * 10 ** 6)) == pytest.approx(6.45, abs=0.005)
    issue = figures.data()["engines"]["llama.cpp"]["f16_gemv_issue"]
    assert Fraction(issue["bytes_per_sm_clock"]) == ISSUE
    assert issue["cards"]["a100-80gb-pcie"] == issue["cards"]["a100-80gb"] == [108, 1410]
    assert float(1 - Fraction(128, 24) / ISSUE) == pytest.approx(0.17, abs=0.005)


def test_the_slow_fp16_gemv_is_llamacpps_at_batch_one_only():
    """Other engines, a batch of two (cuBLAS, not the mat-vec kernel) and quantized weights (MMVQ) stream at
    memory_stream alone."""
    by_hand = _decode_by_hand(2039, Fraction(1))
    assert efficiency.f16_gemv_factor(figures.engine("vllm"), "a100-80gb", 1) is None
    vllm = symllm.workload("llama3-8b", gpu="a100-80gb", engine="vllm", dtype="fp16", batch=1, seq=1,
                           context=513)["time"]["expected"]
    # vLLM: 14 kernels a layer and 0.3 ms a step, the same bytes at memory_stream
    assert vllm["decode_token_s"] == pytest.approx(
        float(by_hand - LAYERS * 2 * GRAPH - STEP + Fraction(3, 10 ** 4)), rel=1e-12)
    two = _expected("a100-80gb", dtype="fp16", batch=2, seq=1, context=513)
    one = _expected("a100-80gb", dtype="fp16", batch=1, seq=1, context=513)
    # a second sequence adds its cache and logits only, yet the step is faster: the weights at memory_stream
    assert two["decode_token_s"] < one["decode_token_s"]
    q4 = _expected("a100-80gb", weight_format="Q4_K_M", batch=1, seq=1, context=513)
    q4_gddr_like = symllm.workload("llama3-8b", gpu="a100-80gb", engine="vllm", weight_format="Q4_K_M", batch=1,
                                   seq=1, context=513)["time"]["expected"]
    assert q4["decode_token_s"] == pytest.approx(
        q4_gddr_like["decode_token_s"] + float(LAYERS * 2 * GRAPH + STEP - Fraction(3, 10 ** 4)), rel=1e-12)


def test_a_prompt_runs_in_micro_batches_at_the_fp16_accumulate_peak():
    """A 1,024-token fp16 prompt on an RTX 4090: its GEMMs (every linear layer over every
    position, the output head over the last: llama-bench asks the last position's logits) at the bf16 GEMM
    table's 512-row fraction (0.528) times the 4090's square-matmul scale (gemm_cards.square: the median of its
    four machines' bf16 torch.mm, 162.39, 163.09, 170.06 and 173.31 TFLOP/s, over its 165.2, against the H200's
    790.29 of 989.4: 1.262) of 330.3 TFLOP/s, the causal attention
    core without FlashAttention (llama-bench's default): each micro-batch's scores against every key so far
    (512·512 then 512·1,024 a head) moved at 24 bytes each, and every GEMM's fp32 input and output converted
    at 6 bytes an element (38,912 + 43,008 a token and layer), and its graph's fp32 element-wise nodes (norms,
    RoPE, cache copies, the attention GEMMs' conversions, the heads' cont, residual adds, SiLU and its mul:
    56·4,096 + 28·4,096 + 20·1,024 + 20·14,336 = 651,264 bytes a token and layer), at 0.88 of 1,008 GB/s (slower
    than the scores' FLOPs at the GEMM fraction: 4.1e11 at 0.666 of 165.2, 3.7 ms); plus 16 kernels a layer and
    the step's fixed cost."""
    assert F32_NODES == 651_264
    gemm_s = Fraction(PROMPT_FLOPS) / (Fraction(528, 1000) * SQUARE_4090 * Fraction(3303, 10) * 10 ** 12)
    attn_s = _prompt_passes_s(512 * 512 + 512 * 1024)
    by_hand = gemm_s + attn_s + LAYERS * 16 * GRAPH + STEP
    e = _expected("rtx4090", dtype="fp16", batch=1, seq=1024)
    assert e["prefill_compute_s"] == pytest.approx(float(gemm_s + attn_s), rel=1e-9)
    assert e["prefill_s"] == pytest.approx(float(by_hand), rel=1e-9)


@pytest.mark.parametrize("ubatch, eta, pairs", [
    (256, Fraction(401, 1000), 256 * 256 + 256 * 512 + 256 * 768 + 256 * 1024),   # four micro-batches: 655,360
    (1024, Fraction(620, 1000), 1024 * 1024),                                       # one: 1,048,576
])
def test_ubatch_sets_the_prompts_micro_batches(ubatch, eta, pairs):
    """llama.cpp's -ub (``--ubatch``: n_ubatch) is the prompt's micro-batch in its expected time too, not only in
    its compute buffer (one resolution, engine_memory.rule): the 1,024-token fp16 prompt of
    test_a_prompt_runs_in_micro_batches_at_the_fp16_accumulate_peak, by the same hand arithmetic, at -ub 256 runs
    its GEMMs at 256 rows (the bf16 table's 0.401) in four micro-batches whose scores are 256 queries against 256,
    512, 768 and 1,024 keys a head, at -ub 1024 at 1,024 rows (0.620) in one of 1,024 x 1,024; the conversions
    and fp32 nodes are a token's whatever the micro-batch. The scores stay memory-bound (24 bytes at 0.88 of
    1,008 GB/s, slower than their FLOPs at either GEMM fraction)."""
    gemm_s = Fraction(PROMPT_FLOPS) / (eta * SQUARE_4090 * Fraction(3303, 10) * 10 ** 12)
    attn_s = _prompt_passes_s(pairs)
    e = _expected("rtx4090", dtype="fp16", batch=1, seq=1024, ubatch=ubatch)
    assert e["prefill_gemm_s"] == pytest.approx(float(gemm_s), rel=1e-9)
    assert e["prefill_compute_s"] == pytest.approx(float(gemm_s + attn_s), rel=1e-9)


def test_flash_attn_runs_the_prompts_rectangles_without_scores_in_memory():
    """Under -fa (``--flash-attn on``, or a q8_0 cache, which llama.cpp runs only so) the prompt's attention is
    ggml_flash_attn_ext over each micro-batch's rectangle (512 x 512, then 512 x 1,024 keys a head: every cell,
    masked), 4·128 FLOPs a pair, at the attention kernels' efficiency on the tiles they run at the prompt's 1,024
    tokens (the table's 0.153 of the peak on a causal prefill's 524,800 unmasked pairs, read on FlashAttention-2's
    128 x 64 tiles: 8 query blocks over 2, 4, ..., 16 key blocks, 589,824 pairs) of 165.2 TFLOP/s, with no scores
    through memory and no Q-to-fp16, KQV-to-fp32 or cont of the heads: the fp32 nodes lose 20 q bytes a token and
    layer (56·4,096 + 8·4,096 + 20·1,024 + 20·14,336). The GEMMs do not move."""
    eta = Fraction(153, 1000) * Fraction(128 * 64 * 2 * 36, 1024 * 1025 // 2)
    off = _expected("rtx4090", dtype="fp16", seq=1024)
    on = _expected("rtx4090", dtype="fp16", seq=1024, flash_attn="on")
    assert on["prefill_gemm_s"] == off["prefill_gemm_s"]
    core = Fraction(4 * 128 * 32 * LAYERS * (512 * 512 + 512 * 1024))
    attn_s = core / (eta * Fraction(1652, 10) * 10 ** 12) + _prompt_passes_s(0, F32_NODES - 20 * DIM)
    assert on["prefill_compute_s"] - on["prefill_gemm_s"] == pytest.approx(float(attn_s), rel=1e-9)
    q8 = _expected("rtx4090", dtype="fp16", seq=1024, kv_format="q8_0")
    assert q8["prefill_compute_s"] == on["prefill_compute_s"]


def test_micro_batches_and_fp16_accumulation_are_llamacpps():
    """vLLM's prompt of 1,024 tokens on an RTX 4090 runs its GEMMs at 1,024 rows (0.620, times the 4090's square-matmul
    scale, 1.262) of the catalogue's 165.2 TFLOP/s;
    llama.cpp's on an A100 at 512 rows (0.528, times the A100's MAMF scale) of 312 (one rate for both
    accumulations). vLLM's attention core runs its causal pairs at the flash fraction (0.153); llama.cpp's
    moves its scores, conversions and fp32 element-wise nodes (35.4 + 21.3 GB) at 0.88 of the A100 SXM's 2,039 GB/s."""
    flops = Fraction(PROMPT_FLOPS)
    vllm = symllm.workload("llama3-8b", gpu="rtx4090", engine="vllm", dtype="fp16", seq=1024)["time"]["expected"]
    causal = 4 * LAYERS * 32 * 128 * 1024 * 1024 * Fraction(1025, 2048)   # QK^T and PV over the causal pairs
    attn = float(causal / (Fraction(153, 1000) * Fraction(1652, 10) * 10 ** 12))
    assert vllm["prefill_compute_s"] == pytest.approx(
        float(flops / (Fraction(62, 100) * SQUARE_4090 * Fraction(1652, 10) * 10 ** 12)) + attn, rel=1e-9)
    a100 = _expected("a100-80gb", dtype="fp16", seq=1024)
    a100_attn = float(_prompt_passes_s(512 * 512 + 512 * 1024, gbs=2039))
    # the A100 SXM's GEMMs: its MAMF efficiency over the H200's (ml-engineering's table: 271.2 of 312, 794.5 of 989)
    mamf = (Fraction(2712, 10) / 312) / (Fraction(7945, 10) / 989)
    assert a100["prefill_compute_s"] == pytest.approx(
        float(flops / (Fraction(528, 1000) * mamf * 312 * 10 ** 12)) + a100_attn, rel=1e-9)


@pytest.mark.parametrize("kind,cards", [
    ("hbm", ["h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200", "a100-40gb", "a100-80gb",
             "a100-80gb-pcie", "mi250x", "mi300x", "mi325x"]),
    ("gddr", ["l40s", "l4", "a10", "t4", "rtx3090", "rtx4090", "rtx5090"]),
    ("unified", ["apple-m2-ultra", "apple-m4-max"])])
def test_memory_kind_is_the_datasheets(kind, cards):
    """HBM on the data-centre accelerators, GDDR6/6X/7 on the GeForce and L-series cards, Apple's unified
    memory: as their datasheets state (each card's catalogue note quotes its datasheet)."""
    assert {c: efficiency.memory_kind(c) for c in cards} == {c: kind for c in cards}


def test_fp16_accumulate_peaks_are_the_whitepapers():
    """330.3 (RTX 4090) and 142 (RTX 3090) dense TFLOP/s with fp16 accumulation, twice the catalogue's
    fp32-accumulate peaks; none for a card that lists one rate."""
    from symllm.costs.accelerators import gpu
    assert efficiency.fp16_accumulate_peak("rtx4090") == 330_300 * 10 ** 9
    assert efficiency.fp16_accumulate_peak("rtx4090") / gpu("rtx4090").fp16 == pytest.approx(2, rel=1e-3)
    assert efficiency.fp16_accumulate_peak("rtx3090") == 142 * 10 ** 12 == 2 * gpu("rtx3090").fp16
    assert efficiency.fp16_accumulate_peak("l40s") is None


def test_apple_decode_streams_at_the_unified_figure_with_a_cost_a_layer():
    """On an M2 Ultra (800 GB/s): the fp16 weights but the embedding table, the cache and one position's
    logits at 0.85 of 800 GB/s (llama.cpp's Metal decode of LLaMA 7B in three quantizations, PR #2917: 679
    GB/s), no 1.27x (not HBM), and 0.165 ms a layer in place of 16 kernels at kernel.graph_s."""
    weights = 2 * (PARAMS - VOCAB * DIM)
    rest = 514 * KV_PER_TOKEN + 2 * VOCAB
    by_hand = Fraction(weights + rest) / (Fraction(85, 100) * 800 * 10 ** 9) + LAYERS * Fraction(165, 10 ** 6) + STEP
    e = _expected("apple-m2-ultra", dtype="fp16", batch=1, seq=1, context=513)
    assert e["decode_token_s"] == pytest.approx(float(by_hand), rel=1e-12)
    # another engine on the same card streams at the same figure, with its own kernels' cost
    # (torch on PyTorch's MPS backend: vLLM has no Metal backend, refused: efficiency.json backends)
    torch = symllm.workload("llama3-8b", gpu="apple-m2-ultra", engine="torch", dtype="fp16", batch=1, seq=1,
                            context=513)["time"]["expected"]
    assert torch["decode_token_s"] == pytest.approx(
        float(by_hand - LAYERS * Fraction(165, 10 ** 6) - STEP + LAYERS * 14 * GRAPH), rel=1e-12)


def test_the_unified_figure_reproduces_its_source():
    """PR #2917's three M2 Ultra rows (LLaMA 7B, 32,000 x 4,096 embeddings at the file's type: Q8_0 34 bytes,
    Q4_0 18, Q4_1 20 a block of 32): 679 GB/s and 5.77 ms from Q8_0 and Q4_0 put Q4_1 within 1% of its
    11.96 ms; efficiency.json keeps 0.85 of 800 GB/s and (5.77 - 0.5) / 32 = 0.165 ms a layer."""
    gib, emb = 2 ** 30, 32_000 * 4096
    rows = [(Fraction(667, 100) * gib - emb * Fraction(34, 32), Fraction(100, 6205)),
            (Fraction(356, 100) * gib - emb * Fraction(18, 32), Fraction(100, 8854)),
            (Fraction(395, 100) * gib - emb * Fraction(20, 32), Fraction(100, 8363))]
    (b1, t1), (b2, t2), (b3, t3) = rows
    bandwidth = (b1 - b2) / (t1 - t2)
    fixed = t2 - b2 / bandwidth
    assert float(b3 / bandwidth + fixed) == pytest.approx(float(t3), rel=0.01)
    assert float(bandwidth / (800 * 10 ** 9)) == pytest.approx(float(efficiency.stream(kind="unified")), abs=0.005)
    layer = Fraction(figures.data()["engines"]["llama.cpp"]["metal_layer_s"])
    assert float((fixed - STEP) / 32) == pytest.approx(float(layer), abs=5e-7)


#: llama-bench's Llama-3-8B F16 prompt runs (tokens/s at pp 512, 1024 and 4096) in the notebooks the published
#: rows come from, none of them fitted on: XiongjieDai/GPU-Benchmarks-on-LLM-Inference, 'LLaMA 3/Professional
#: GPUs/H100_PCIe_v3.ipynb' (build e8496488, 2843), 'A100_PCIe_v3.ipynb' (8c570c94, 2836), 'LLaMA 3/Gaming
#: GPUs/4090_v3.ipynb' and '3090_v3.ipynb' (4426e298, 2824); May 2024, read 2026-11-29 at the repository's aa72e0e
NOTEBOOK_PP = {"h100-pcie": {512: 10815.51, 1024: 10342.63, 4096: 8106.53},
               "a100-80gb-pcie": {512: 7741.34, 1024: 7504.24, 4096: 6137.54},
               "rtx4090": {512: 9382.00, 1024: 9056.26, 4096: 6531.36},
               "rtx3090": {512: 4444.65, 1024: 4239.64, 4096: 3410.47}}


def test_prompt_f32_passes_against_the_notebooks_prompt_runs(monkeypatch, capsys):
    """The fp32 element-wise nodes (cuda_prompt.f32_passes: ggml.PROMPT_F32_OPS, read in llama.cpp's graph) on
    the twelve prompt runs of the published rows' notebooks: the worst error falls (the H100 PCIe's, about -40%
    without them) and the RTX 3090, whose 6 MB of L2 holds none of a micro-batch's 8-29 MB activations, is
    within 15% at every length, as is the A100 80GB PCIe; printed beside the errors without them (the RTX 4090,
    72 MB of L2, goes over: docs/efficiency.md)."""
    prompt = figures.engine("llama.cpp")["cuda_prompt"]
    assert prompt["f32_passes"] == "1"

    def errors() -> dict:
        return {(gpu, n): _expected(gpu, dtype="fp16", seq=n)["prefill_s"] / (n / tps) - 1
                for gpu, runs in NOTEBOOK_PP.items() for n, tps in runs.items()}
    counted = errors()
    monkeypatch.setitem(prompt, "f32_passes", "0")
    without = errors()
    with capsys.disabled():
        for key, error in counted.items():
            print(f"\n{key[0]:15} pp {key[1]:<5} {without[key]:+7.1%} -> {error:+7.1%}", end="")
        print()
    assert max(map(abs, counted.values())) < max(map(abs, without.values())) - 0.05
    for n in (512, 1024, 4096):
        for gpu in ("rtx3090", "a100-80gb-pcie"):
            assert abs(counted[gpu, n]) < 0.15, (gpu, n)
        assert counted["h100-pcie", n] > without["h100-pcie", n]  # slower, toward the measured time


def _pairs(seq: int, ubatch: int = 512) -> int:
    """Query-key pairs a head and layer of a ``seq``-token prompt materialises in micro-batches of ``ubatch``:
    each micro-batch's queries against every key cached so far (512·512, then 512·1,024, ...)."""
    return sum(min(ubatch, seq - start) * min(start + ubatch, seq) for start in range(0, seq, ubatch))


def _split(t512: Fraction, t4096: Fraction) -> tuple[Fraction, Fraction]:
    """``(per token, per pair)`` of ``t(n) = a·n + b·pairs(n)`` through pp 512 and pp 4096 (two equations)."""
    b = (t4096 - 8 * t512) / (_pairs(4096) - 8 * _pairs(512))
    return (t512 - b * _pairs(512)) / 512, b


#: the notebooks' cards: bandwidth (GB/s) and dense fp16 tensor peak with the accumulation llama.cpp's cuBLAS
#: call uses (CUBLAS_COMPUTE_16F: the GeForce cards' fp16-accumulate rates, one rate on the others), from NVIDIA's
#: H100 PCIe and A100 80GB PCIe product briefs and the Ada and GA102 whitepapers
NOTEBOOK_CARDS = {"h100-pcie": (2000, 756), "a100-80gb-pcie": (1935, 312), "rtx4090": (1008, Fraction(3303, 10)),
                  "rtx3090": (936, 142)}


def test_notebook_prompt_runs_split_into_tokens_and_materialised_scores(capsys):
    """Each card's three notebook prompt runs (NOTEBOOK_PP) are a time a token plus a time a materialised score
    pair: solved through pp 512 and pp 4,096, the two terms give pp 1,024 within 3% on all four cards, so the
    prompt's time grows with the micro-batches' pairs (n_ubatch 512, every cached key: cuda_prompt's scores) and
    nothing else beyond the tokens. A score costs 17-37 ps (a pair over 32 heads and 32 layers): 22-31 bytes at
    memory_stream's 0.88 of the bandwidth, within 35% of the 24 read in ggml-cuda.cu (cuda_prompt.scores_bytes),
    and ten times or more what FlashAttention's 512 FLOPs a score would take at the card's full tensor peak: the
    scores went through memory (llama-bench's flash_attn off). Printed: the measured terms beside symllm's, split
    the same way (docs/efficiency.md reads them), and the GEMM rate the token term leaves once its conversions
    and fp32 nodes (36.5 MB a token at memory_stream) are taken out."""
    passes = LAYERS * (CONVERSIONS + F32_NODES)                                     # bytes a token beside GEMMs
    rows = []
    for gpu, runs in NOTEBOOK_PP.items():
        gbs, peak = NOTEBOOK_CARDS[gpu]
        measured = {n: Fraction(n) / Fraction(str(tps)) for n, tps in runs.items()}
        token, pair = _split(measured[512], measured[4096])
        assert abs(float((token * 1024 + pair * _pairs(1024)) / measured[1024] - 1)) < 0.03, gpu
        score = pair / (32 * LAYERS)                                                  # seconds a score
        score_bytes = score * ETA * gbs * 10 ** 9
        assert abs(float(score_bytes / 24 - 1)) < 0.35, (gpu, float(score_bytes))
        assert score > 10 * Fraction(512) / (peak * 10 ** 12), gpu
        expected = {n: Fraction(_expected(gpu, dtype="fp16", seq=n)["prefill_s"]) for n in (512, 4096)}
        e_token, e_pair = _split(expected[512], expected[4096])
        gemm_rate = TOKEN_FLOPS / (token - passes / (ETA * gbs * 10 ** 9)) / 10 ** 12
        rows.append(f"{gpu:15} a token {float(token) * 1e6:6.1f} us (symllm {float(e_token / token - 1):+6.1%}); "
                    f"a score {float(score) * 1e12:5.1f} ps = {float(score_bytes):4.1f} B (symllm "
                    f"{float(e_pair / pair - 1):+6.1%}); GEMMs {float(gemm_rate):5.1f} TFLOP/s, "
                    f"{float(gemm_rate / peak):.2f} of {float(peak)}")
    with capsys.disabled():
        print("\n" + "\n".join(rows))


#: held-out llama-bench prompt runs that state -ub and -fa (not in tests/data/published_runs.json, nothing fitted on
#: them): Gemma 2B F16 on one RTX 3090, FlashAttention on, (prompt tokens, -ub) -> tokens/s.
#: ggml-org/llama.cpp PR #6646 (JohannesGaessler, "CUDA: faster FlashAttention for batch sizes > 1", April 2024, the
#: opening table's PR column, its "batch size" llama-bench's -ub): pp4096 at -ub 512 13,149.46, at -ub 2048
#: 13,651.72; PR #11583 ("CUDA: use mma PTX instructions for FlashAttention", February 2025, build 60958f60, its
#: "Microbatch size" column): pp16384 at -ub 512 11,162.57, at -ub 2048 11,861.19 (both read 2026-11-29)
UB_FA_RUNS = {(4096, 512): "13149.46", (4096, 2048): "13651.72", (16384, 512): "11162.57", (16384, 2048): "11861.19"}


@pytest.mark.filterwarnings("ignore::symllm.errors.ContextWarning")  # pp16384 past Gemma's 8,192 positions, as run
def test_ubatch_and_flash_attn_against_held_out_prompt_runs(capsys):
    """Each held-out run (UB_FA_RUNS) at its -ub with -fa on: within 15% of the measured tokens/s, and a larger
    micro-batch never predicted slower, as measured (pp4096: 1.04x from -ub 512 to 2048; pp16384: 1.06x). Printed
    beside what the expected time gave before it read --ubatch and --flash-attn (-ub 512 without FlashAttention,
    whatever the run stated)."""
    def rate(seq, **options):
        e = symllm.workload("gemma-2b", gpu="rtx3090", engine="llama.cpp", dtype="fp16", seq=seq, **options)
        return seq / e["time"]["expected"]["prefill_s"]
    rows, got, before = [], {}, {seq: rate(seq) for seq in {seq for seq, _ in UB_FA_RUNS}}
    for (seq, ub), tps in UB_FA_RUNS.items():
        got[seq, ub] = rate(seq, ubatch=ub, flash_attn="on")
        error = got[seq, ub] / float(tps) - 1
        assert abs(error) < 0.15, (seq, ub, error)
        rows.append(f"gemma-2b F16 rtx3090 pp{seq} -ub {ub} -fa 1: measured {float(tps):9,.0f} t/s, symllm "
                    f"{got[seq, ub]:9,.0f} ({error:+.1%}; before {before[seq]:,.0f}, "
                    f"{before[seq] / float(tps) - 1:+.1%})")
    for seq in (4096, 16384):
        assert got[seq, 2048] >= got[seq, 512]
    with capsys.disabled():
        print("\n" + "\n".join(rows))
