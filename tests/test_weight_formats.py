"""Weight formats per engine (symllm.costs.weight_formats): which card each engine runs NVFP4 and FP8 weights on, the
one line refusing the others at every door, and NVFP4's GEMMs at the FP4 dense peak.

Expected values, by hand from the sources efficiency.json's ``weight_formats_source`` cites: TensorRT-LLM's
'Hardware Support Matrix' (docs/source/features/quantization.md at NVIDIA/TensorRT-LLM f53fb4c: NVFP4 on sm120 and
sm100 only; FP8 per tensor on sm120, sm100, Hopper and Ada; FP8 block scaling on sm100 and Hopper); SGLang 0.5.4's
ModelOptFp4Config.get_min_capability 100, enforced by its model loader; vLLM 0.33.0's NVFP4 kernels (CUTLASS FP4 from
capability 100, Marlin's weight-only FP4 from 7.5). Compute capabilities: NVIDIA's CUDA GPUs table (tests/
test_card_caps.py). Peaks: the datasheets gpus.json cites (H100 SXM bf16 989.4 TFLOPS dense; HGX B200 FP4 18 PFLOPS
with sparsity, 9 dense).
"""
from __future__ import annotations

import re

import pytest

import symllm
from symllm.errors import SymllmError
from tests.test_one_answer import _flags

#: (model, workload options, the line) refused, by hand from the sources above
REFUSED = [
    ("llama3.1-8b", {"gpu": "h100-sxm", "engine": "trtllm", "weight_format": "nvfp4"},
     "weight_format: nvfp4 under trtllm: h100-sxm is sm 9.0; it needs sm 10.0 or 12.0"),
    ("llama3.1-8b", {"gpu": "a100-80gb", "engine": "sglang", "weight_format": "nvfp4"},
     "weight_format: nvfp4 under sglang: a100-80gb is sm 8.0; it needs sm 10.0 or 12.0"),
    ("llama3.1-8b", {"gpu": "l40s", "engine": "trtllm", "weight_format": "fp8-block"},
     "weight_format: fp8-block under trtllm: l40s is sm 8.9; it needs sm 9.0 or 10.0"),
    ("llama3.1-8b", {"gpu": "a100-80gb", "engine": "trtllm", "weight_format": "fp8"},  # (the line's room)
     "weight_format: fp8 under trtllm: a100-80gb is sm 8.0; needs sm 8.9, 9.0, 10.0 or 12.0"),
    ("llama3.1-8b", {"gpu": "mi300x", "weight_format": "nvfp4"},  # no engine: none declaring it is on AMD
     "weight_format: nvfp4: not on mi300x; needs sm 7.5, 8.0, 8.6, 8.9, 9.0, 10.0 or 12.0"),
    ("llama3.1-8b", {"gpu_memory": 80, "gpu_bandwidth": 3000, "gpu_flops": 1000, "engine": "trtllm",
                     "weight_format": "nvfp4"},
     "weight_format: nvfp4 under trtllm: custom has no known sm; it needs sm 10.0 or 12.0"),
]


@pytest.mark.parametrize("model, options, line", REFUSED)
def test_a_weight_format_an_engine_cannot_run_on_a_card_is_refused_at_every_door(cli, model, options, line):
    for argv in (["count", model, *_flags(options)], ["count", model, *_flags(options), "--serve"]):
        r = cli(argv)
        assert (r.code, r.err, r.out) == (2, f"symllm: error: {line}\n", "")
    if "gpu" in options:
        rest = {k: v for k, v in options.items() if k != "gpu"}
        r = cli(["plan", model, "--gpus", f"2x{options['gpu']}", *_flags(rest)])
        assert (r.code, r.err) == (2, f"symllm: error: {line}\n")
    with pytest.raises(SymllmError) as e:
        symllm.workload(model, **options)
    assert str(e.value) == line


@pytest.mark.parametrize("gpu, engine, fmt, dtype, peak", [
    ("b200", "trtllm", "nvfp4", "fp4", 9000e12),  # FP4 GEMMs on sm100
    ("rtx5090", "vllm", "nvfp4", "fp4", 1676e12),  # vLLM's CUTLASS FP4 on sm120: the whitepaper's dense FP4
    ("b200", None, "nvfp4", "fp4", 9000e12),
    ("h100-sxm", "vllm", "nvfp4", "bf16", 989.4e12),  # Marlin's weight-only FP4 on Hopper: the activations' peak
    ("a100-80gb", "vllm", "fp8", "bf16", 312e12),  # Marlin's weight-only FP8 on Ampere
    ("a100-80gb", "sglang", "fp8-block", "bf16", 312e12),  # SGLang's Marlin FP8 on 8.0
])
def test_each_path_runs_at_its_peak(gpu, engine, fmt, dtype, peak):
    t = symllm.workload("llama3.1-8b", gpu=gpu, engine=engine, weight_format=fmt)["time"]
    assert (t["peak_dtype"], t["peak_flops"]) == (dtype, peak)


def test_an_nvfp4_70b_prefill_on_a_b200_is_bound_at_the_fp4_peak():
    """Llama-3.1-70B (d 8192, 80 layers, 64 query and 8 KV heads of 128, d_ff 28672, vocabulary 128256), one prompt
    of 2048 tokens, NVFP4 weights on a B200: FLOPs by hand, 2 a multiply-add; the logits of the last position only
    (the default), every pair of positions' attention scores (``attention`` dense, the default)."""
    d, layers, kv, d_ff, vocab, s = 8192, 80, 1024, 28672, 128256, 2048
    linear = layers * (d * d + 2 * d * kv + d * d + 3 * d * d_ff)  # q, k, v, o, gate, up, down
    assert linear == 68_451_041_280
    flops = 2 * s * linear + 2 * d * vocab + layers * 2 * (2 * s * s * d)  # linears, the head, QK^T and PV
    assert flops == 291_372_682_706_944
    t = symllm.workload("llama3.1-70b", gpu="b200", weight_format="nvfp4", seq=s)["time"]
    assert t["prefill_bound"] == "compute"
    assert t["prefill_s"] == pytest.approx(flops / 9000e12, rel=1e-12)  # 0.03237 s; bf16 weights: four times that
    bf16 = symllm.workload("llama3.1-70b", gpu="b200", seq=s)["time"]
    assert bf16["prefill_s"] == pytest.approx(flops / 2250e12, rel=1e-12)


def test_the_weight_only_path_streams_its_weights_unpacked_as_int4_is():
    """Marlin's weight-only FP4 (vLLM on an H100) reads its packed weights at efficiency.json's 4-bit ``dequant``
    fraction of the stream, as ``--dtype int4`` does; on a B200 the FP4 GEMM reads them as they are."""
    from symllm.costs import efficiency, figures
    from symllm.costs.weight_formats import stream_dtype
    from symllm.costs.workloads import Workload
    assert stream_dtype(Workload(gpu="h100-sxm", weight_format="nvfp4", engine="vllm")) == "int4"
    assert stream_dtype(Workload(gpu="b200", weight_format="nvfp4", engine="vllm")) == "bf16"
    assert stream_dtype(Workload(gpu="a100-80gb", weight_format="fp8-channel", engine="vllm")) == "int8"
    unpacked = figures.fraction(figures.data()["dequant"]["int4"])
    assert efficiency.stream("int4") == efficiency.stream() * unpacked


def test_formats_an_engine_does_not_declare_are_priced_as_before():
    """AWQ (not declared: its Marlin and GEMM kernels are not this table's) and a GGUF file keep the weights' --dtype
    peak, and llama.cpp, declaring nothing, refuses no NVFP4 card here (its own formats are GGUF's)."""
    for fmt in ("awq", "Q4_K_M"):
        t = symllm.workload("llama3.1-8b", gpu="b200", weight_format=fmt)["time"]
        assert t["peak_dtype"] == "bf16"
    assert symllm.workload("llama3.1-8b", gpu="b200", weight_format="mxfp4")["time"]["peak_dtype"] == "bf16"


#: DeepSeek-V3 by hand (its config.json: d 7168, 61 layers, the first 3 dense of width 18432, 58 of 256 routed experts,
#: 8 a token, and 1 shared, each of width 2048; MLA: 128 heads, q_lora_rank 1536, kv_lora_rank 512, query and key
#: widths 128 + 64 (RoPE), values 128; vocabulary 129280), one prompt of 2048 tokens, multiply-adds per token
DSV3 = {"d": 7168, "layers": 61, "moe_layers": 58, "vocab": 129280, "s": 2048,
        "wq_a": 7168 * 1536, "wq_b": 1536 * 128 * (128 + 64), "wkv_a": 7168 * (512 + 64),
        "wkv_b": 512 * 128 * (128 + 128),
        "wo": 128 * 128 * 7168, "mlp": 3 * 7168 * 18432, "experts": (8 + 1) * 3 * 7168 * 2048, "router": 7168 * 256}


def test_a_deepseek_v3_fp8_prefill_on_8_h200s_under_vllm_is_bound_at_the_fp8_peak():
    """DeepSeek-V3's block-scaled FP8 checkpoint (``fp8-block``) under vLLM on 8 H200s, tensor-parallel: vLLM's
    Fp8LinearMethod runs its linears through W8A8BlockFp8LinearOp (activations quantized per token and 128-group,
    FP8 GEMMs: efficiency.json's vllm ``weight_formats_source``), so the bound is at the H200's dense FP8 peak, 1,978.9
    TFLOP/s (datasheet: 3,958 with sparsity), however ``--dtype`` reads the activations, not bf16's 989.4 as before.

    By hand: a rank computes its share of the split linears (wq_b, wkv_b, wo, the MLPs and experts, the head of the
    last position) and of the attention core (every pair of positions, ``attention`` dense), and the whole of the
    replicated ones (wq_a, wkv_a, the router: transformers' tensor-parallel plan, which symllm's layout follows);
    then 2 all-reduces a layer and the embedding's, each of the 2048 x 7168 bf16 residual stream, a ring sending
    2 x 7/8 of it, and the logits' all-gather (7/8 of one position's 129280 bf16), at NVLink 4's 450 GB/s a way."""
    h = DSV3
    s, layers = h["s"], h["layers"]
    assert h["experts"] == h["mlp"]  # 9 experts of 2048 are one MLP of 18432: every layer's split linears the same
    split = layers * (h["wq_b"] + h["wkv_b"] + h["wo"] + h["mlp"])
    replicated = layers * (h["wq_a"] + h["wkv_a"]) + h["moe_layers"] * h["router"]
    core = layers * 2 * s * s * 128 * (192 + 128)  # QK^T over 192 widths, PV over 128, 128 heads
    head = 2 * h["d"] * h["vocab"]
    assert 2 * s * (split + replicated) + core + head == 167_179_965_693_952  # the prompt's FLOPs, every rank's
    rank = (2 * s * split + core + head) / 8 + 2 * s * replicated
    assert rank == 24_588_651_003_904
    sent = (2 * layers + 1) * 2 * s * h["d"] * 2 * 7 / 8 + h["vocab"] * 2 * 7 / 8
    assert sent == 6_319_993_792
    t = symllm.workload("deepseek-v3", gpu="h200", tp=8, engine="vllm", weight_format="fp8-block")["time"]
    assert (t["peak_dtype"], t["peak_flops"], t["prefill_bound"]) == ("fp8", 1978.9e12, "compute")
    assert t["prefill_s"] == pytest.approx(rank / 1978.9e12 + sent / 450e9, rel=1e-12)  # 0.02647 s
    assert t["prefill_comm_s"] == pytest.approx(sent / 450e9, rel=1e-12)
    # under a training engine (no weight formats declared) the same checkpoint's matmuls stay at bf16's peak
    bf16 = symllm.workload("deepseek-v3", gpu="h200", tp=8, engine="megatron", weight_format="fp8-block")["time"]
    assert bf16["peak_dtype"] == "bf16"
    assert bf16["prefill_s"] == pytest.approx(rank / 989.4e12 + sent / 450e9, rel=1e-12)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_fp8_weights_on_ampere_stay_weight_only_at_the_activations_peak(engine):
    """On an A100 (sm 8.0, no FP8 tensor cores) vLLM and SGLang run FP8 weights by Marlin's weight-only kernel: the
    matmuls at bf16's 312 TFLOP/s, the weights streamed at efficiency.json's 8-bit ``dequant``; on an H100 (sm 9.0)
    the same checkpoint runs FP8 GEMMs at 1,978.9 TFLOP/s (H100 SXM datasheet: 3,958 with sparsity). Llama-3.1-8B
    (d 4096, 32 layers, 32 query and 8 KV heads of 128, d_ff 14336, vocabulary 128256), a prompt of 2048 tokens:
    FLOPs by hand, every pair of positions' scores (``attention`` dense), the last position's logits."""
    from symllm.costs.weight_formats import stream_dtype
    from symllm.costs.workloads import Workload
    d, layers, kv, d_ff, vocab, s = 4096, 32, 1024, 14336, 128256, 2048
    flops = 2 * s * layers * (2 * d * d + 2 * d * kv + 3 * d * d_ff) + 2 * d * vocab + layers * 2 * (2 * s * s * d)
    assert flops == 30_787_376_250_880
    for gpu, dtype, peak, stream in (("a100-80gb", "bf16", 312e12, "int8"), ("h100-sxm", "fp8", 1978.9e12, "bf16")):
        t = symllm.workload("llama3.1-8b", gpu=gpu, engine=engine, weight_format="fp8-block")["time"]
        assert (t["peak_dtype"], t["peak_flops"], t["prefill_bound"]) == (dtype, peak, "compute")
        assert t["prefill_s"] == pytest.approx(flops / peak, rel=1e-12)
        assert stream_dtype(Workload(gpu=gpu, engine=engine, weight_format="fp8-block")) == stream


def test_training_engines_price_fp8_weights_as_the_dtype_says():
    """A training engine declares no weight formats (symllm.costs.weight_formats.declared): Megatron's and
    torchtitan's matmuls stay at ``--dtype``'s peak (bf16: 989.4 TFLOP/s on an H100 SXM) under an FP8 checkpoint."""
    for engine in ("megatron", "torchtitan"):
        t = symllm.workload("llama3.1-8b", gpu="h100-sxm", engine=engine, weight_format="fp8-block")["time"]
        assert (t["peak_dtype"], t["peak_flops"]) == ("bf16", 989.4e12)


def test_every_door_prices_fp8_weights_at_the_fp8_peak(cli):
    """count (its lines and --json), count --serve --json, plan (the CLI's and Python's) and symllm.workload read one
    matmul dtype for DeepSeek-V3's FP8 checkpoint under vLLM on H200s: the same prefill (the hand figure above) and
    the same decode step at plan's batch, compute-bound there, so at the FP8 peak."""
    import json
    from symllm.studies.plans import plan
    argv = ["count", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--engine", "vllm", "--weight-format", "fp8-block"]
    py = symllm.workload("deepseek-v3", gpu="h200", tp=8, engine="vllm", weight_format="fp8-block")["time"]
    for extra in ([], ["--serve"]):
        t = json.loads(cli([*argv, *extra, "--json"]).out)["time"]
        assert (t["peak_dtype"], t["prefill_s"], t["decode_token_s"]) == ("fp8", py["prefill_s"], py["decode_token_s"])
    text = " ".join(cli(argv).out.split())  # (count's tables wrap)
    assert "NVIDIA H200 SXM 141GB: 1,978.9 TFLOP/s dense fp8" in text
    assert re.search(rf"prefill {py['prefill_s']:.4g} s {py['expected']['prefill_s']:.4g} s compute-bound", text)
    row = next(r for r in json.loads(cli(["plan", "deepseek-v3", "--gpus", "8xh200", "--engine", "vllm",
                                          "--weight-format", "fp8-block", "--json"]).out)["rows"]
               if (r["tp"], r["pp"], r["dp"]) == (8, 1, 1))
    at = symllm.workload("deepseek-v3", gpu="h200", tp=8, engine="vllm", weight_format="fp8-block",
                         batch=row["batch"])["time"]
    assert (at["peak_dtype"], at["decode_token_bound"]) == ("fp8", "compute")  # (the step at the FP8 peak)
    assert row["decode_token_s"] == pytest.approx(at["decode_token_s"], rel=1e-12)
    same = next(r for r in plan("deepseek-v3", 8, "h200", engine="vllm", weight_format="fp8-block").rows
                if (r["tp"], r["pp"], r["dp"]) == (8, 1, 1))
    assert (same["batch"], same["decode_token_s"]) == (row["batch"], row["decode_token_s"])
