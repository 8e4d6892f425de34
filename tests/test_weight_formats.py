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

import pytest

import symllm
from symllm.errors import SymllmError

#: (model, options, the line) refused, by hand from the sources above
REFUSED = [
    ("llama3.1-8b", ["--gpu", "h100-sxm", "--engine", "trtllm", "--weight-format", "nvfp4"],
     "weight_format: nvfp4 under trtllm: h100-sxm is sm 9.0; it needs sm 10.0 or 12.0"),
    ("llama3.1-8b", ["--gpu", "a100-80gb", "--engine", "sglang", "--weight-format", "nvfp4"],
     "weight_format: nvfp4 under sglang: a100-80gb is sm 8.0; it needs sm 10.0 or 12.0"),
    ("llama3.1-8b", ["--gpu", "l40s", "--engine", "trtllm", "--weight-format", "fp8-block"],
     "weight_format: fp8-block under trtllm: l40s is sm 8.9; it needs sm 9.0 or 10.0"),
    ("llama3.1-8b", ["--gpu", "a100-80gb", "--engine", "trtllm", "--weight-format", "fp8"],  # (the line's room)
     "weight_format: fp8 under trtllm: a100-80gb is sm 8.0; needs sm 8.9, 9.0, 10.0 or 12.0"),
    ("llama3.1-8b", ["--gpu", "mi300x", "--weight-format", "nvfp4"],  # no engine: none declaring it is on AMD
     "weight_format: nvfp4: not on mi300x; needs sm 7.5, 8.0, 8.6, 8.9, 9.0, 10.0 or 12.0"),
    ("llama3.1-8b", ["--gpu-memory", "80", "--gpu-bandwidth", "3000", "--gpu-flops", "1000", "--engine", "trtllm",
                     "--weight-format", "nvfp4"],
     "weight_format: nvfp4 under trtllm: custom has no known sm; it needs sm 10.0 or 12.0"),
]


@pytest.mark.parametrize("model, options, line", REFUSED)
def test_a_weight_format_an_engine_cannot_run_on_a_card_is_refused_at_every_door(cli, model, options, line):
    for argv in (["count", model, *options], ["count", model, *options, "--serve"]):
        r = cli(argv)
        assert (r.code, r.err, r.out) == (2, f"symllm: error: {line}\n", "")
    if "--gpu" in options:
        at = options.index("--gpu")
        plan = [*options[:at], "--gpus", f"2x{options[at + 1]}", *options[at + 2:]]
        r = cli(["plan", model, *plan])
        assert (r.code, r.err) == (2, f"symllm: error: {line}\n")
    kwargs = {options[i].lstrip("-").replace("-", "_"): options[i + 1] for i in range(0, len(options), 2)}
    kwargs = {k: int(v) if v.isdigit() else v for k, v in kwargs.items()}  # (the custom card's figures: numbers)
    with pytest.raises(SymllmError) as e:
        symllm.workload(model, **kwargs)
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
