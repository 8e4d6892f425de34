"""Roofline time on named accelerators (symllm.costs.hardware; issue 11 part 4).

Expected numbers come from outside symllm: the vendors' datasheets (typed below as the sheets print
them, TFLOPS and TB/s or GB/s and "GB" of memory), the torch reference model (FlopCounterMode for
FLOPs; parameter numel, the KV-cache tensors it actually stores and the logits' shape for bytes moved),
published parameter totals (tests/data/published_params.json) and plain-Python formulas written here.
"""
import json
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.costs import accelerators, hardware
from symllm.arch.config import ModelConfig
from symllm.errors import SymllmError

from .conftest import PUBLISHED
from .strategies import configs

TERA, GIGA, GiB = 10 ** 12, 10 ** 9, 2 ** 30

#: name -> (dense bf16, fp16, fp8 TFLOPS, bandwidth bytes/s, memory bytes), as the vendor sheets print them
#: (NVIDIA prints sparse figures with "specifications 1/2 lower without sparsity"; the dense halves
#: here are the H100 architecture whitepaper's, the L40S and MI300X sheets print dense themselves)
VENDOR = {
    "h100-sxm": ("989.4", "989.4", "1978.9", Fraction("3.35") * TERA, 80 * GiB),
    "h100-pcie": ("756", "756", "1513", 2 * TERA, 80 * GiB),
    "h200": ("989.4", "989.4", "1978.9", Fraction("4.8") * TERA, 141 * GiB),
    "a100-40gb": ("312", "312", None, 1555 * GIGA, 40 * GiB),
    "a100-80gb": ("312", "312", None, 2039 * GIGA, 80 * GiB),
    "a100-80gb-pcie": ("312", "312", None, 1935 * GIGA, 80 * GiB),
    "l40s": ("362.05", "362.05", "733", 864 * GIGA, 48 * GiB),
    "mi300x": ("1307.4", "1307.4", "2614.9", Fraction("5.3") * TERA, 192 * GiB),
}


def tflops(text):
    return None if text is None else Fraction(text) * TERA


@pytest.mark.parametrize("name", VENDOR)
def test_table_holds_the_vendor_numbers(name):
    bf16, fp16, fp8, bandwidth, memory = VENDOR[name]
    g = accelerators.gpu(name)
    assert (g.bf16, g.fp16, g.fp8) == (tflops(bf16), tflops(fp16), tflops(fp8))
    assert (g.bandwidth, g.unified or g.memory) == (bandwidth, memory)  # an Apple GPU: its unified memory
    assert g.source and g.url.startswith("https://")
    assert all(type(x) is int for x in (g.bf16, g.fp16, g.bandwidth, g.memory))


def test_table_has_the_issues_accelerators():
    assert {"h100-sxm", "h100-pcie", "h200", "a100-40gb", "a100-80gb", "l40s", "mi300x"} <= set(accelerators.names())


@pytest.mark.parametrize("dtype, act_dtype, peak", [
    ("bf16", None, "bf16"), ("fp16", None, "fp16"), ("fp8", None, "fp8"),
    ("int8", None, "bf16"), ("int4", None, "bf16"), ("int4", "fp16", "fp16"),
])
def test_peak_follows_the_matmul_dtype(dtype, act_dtype, peak):
    """bf16/fp16/fp8 weights multiply in their dtype; int8/int4 weights are dequantised to act_dtype."""
    expected = tflops(VENDOR["h100-sxm"][("bf16", "fp16", "fp8").index(peak)])
    assert accelerators.peak_flops("h100-sxm", dtype, act_dtype) == expected
    work = symllm.Workload(gpu="h100-sxm", dtype=dtype, act_dtype=act_dtype)
    assert symllm.workload("llama3.2-1b", work)["time"]["peak_flops"] == expected


@pytest.mark.parametrize("options, field", [
    ({"gpu": "h100"}, "gpu"), ({"gpu": "a100-80gb", "dtype": "fp8"}, "dtype"),
    ({"gpu": "a100-40gb", "dtype": "int4", "act_dtype": "fp8"}, "dtype"),
    ({"gpu": "h100-sxm", "dtype": "fp32"}, "dtype"), ({"gpu": 3}, "gpu"),
])
def test_bad_gpu_options_are_one_line_errors(options, field):
    with pytest.raises(SymllmError) as e:
        symllm.Workload(**options)
    assert str(e.value).startswith(f"{field}: ") and "\n" not in str(e.value)


def test_no_gpu_no_time():
    assert "time" not in symllm.workload("llama3.2-1b")


# --- times against torch and plain formulas -------------------------------------------------------

def _bytes_and_flops(torch, reference, cfg, batch, seq):
    """(prefill FLOPs, prefill bytes, decode FLOPs, decode bytes) of the reference model in bf16 on the
    meta device: FLOPs by FlopCounterMode; bytes from the parameters a matmul reads (numel, without an
    untied embedding table), the KV-cache tensors the model stores, and the logits' shape."""
    from torch.utils.flop_counter import FlopCounterMode
    model = reference.build(cfg, device="meta", dtype=torch.bfloat16)
    two = torch.finfo(torch.bfloat16).bits // 8
    read = {id(p): p for p in model.parameters()}
    if not cfg.tie_embeddings:
        read.pop(id(model.tok_embeddings.weight))
    weights = sum(p.numel() * p.element_size() for p in read.values())
    tokens = torch.zeros(batch, seq, dtype=torch.long, device="meta")
    with torch.no_grad():
        with FlopCounterMode(display=False) as fc:  # the last position's logits (--logits last, the default)
            logits = model(tokens, use_cache=True, logits_to_keep=1)
        prefill_flops, written = fc.get_total_flops(), model.kv_cache_bytes()
        prefill_bytes = weights + written + logits.numel() * two
        with FlopCounterMode(display=False) as fc:
            logits = model(tokens[:, :1], start_pos=seq, use_cache=True)
        decode_flops = fc.get_total_flops()
        decode_bytes = weights + model.kv_cache_bytes() + logits.numel() * two  # cache read + new written
    return prefill_flops, prefill_bytes, decode_flops, decode_bytes


def _seconds(flops, moved, name):
    peak, bandwidth = tflops(VENDOR[name][0]), VENDOR[name][3]
    compute, memory = Fraction(flops) / peak, Fraction(moved) / bandwidth
    return max(compute, memory), "compute" if compute >= memory else "memory"


@given(configs(), st.integers(1, 4), st.integers(1, 12), st.sampled_from(list(VENDOR)),
       st.sampled_from([1, 10 ** 5]))
def test_times_equal_torch_flops_and_bytes(torch, reference, cfg, batch, seq, name, scale):
    """prefill_s, decode_token_s and tokens_per_s are max(FLOPs / peak, bytes / bandwidth) with the
    reference model's FlopCounterMode FLOPs and its stored bytes (``scale``: a large batch, so that
    both bounds are met)."""
    batch *= scale
    pf, pb, df, db = _bytes_and_flops(torch, reference, cfg, batch, seq)
    t = symllm.workload(cfg, batch=batch, seq=seq, gpu=name)["time"]
    prefill, prefill_bound = _seconds(pf, pb, name)
    decode, decode_bound = _seconds(df, db, name)
    assert (t["prefill_bytes"], t["decode_token_bytes"]) == (pb, db)
    assert (t["prefill_s"], t["prefill_bound"]) == (float(prefill), prefill_bound)
    assert (t["decode_token_s"], t["decode_token_bound"]) == (float(decode), decode_bound)
    assert t["tokens_per_s"] == float(batch / decode)


def test_llama31_8b_decode_on_h100_from_published_numbers():
    """llama3.1-8b, one sequence, decode at context 2048 on an H100 SXM: memory-bound, so the time is
    bytes / 3.35 TB/s with bytes = (published total - the untied 128,256 x 4,096 embedding) x 2 (bf16
    weights) + the KV cache read and written (2 x 32 layers x 8 heads x 128 x 2,049 tokens x 2 bytes)
    + the bf16 logits; the prefill is at least 2 N_read s / peak (the 2N-per-token estimate, a bound)."""
    n_read = PUBLISHED["llama3.1-8b"]["total"] - 128256 * 4096
    moved = 2 * n_read + 2 * 32 * 8 * 128 * 2049 * 2 + 128256 * 2
    t = symllm.workload("llama3.1-8b", gpu="h100-sxm")["time"]
    assert t["decode_token_bytes"] == moved
    assert t["decode_token_s"] == float(Fraction(moved) / (Fraction("3.35") * TERA))
    assert round(t["tokens_per_s"]) == 219
    assert t["prefill_s"] >= 2 * n_read * 2048 / (989.4 * TERA)
    assert t["prefill_bound"] == "compute"


@pytest.mark.parametrize("context", [0, 128, 2048])
def test_compute_bound_batch_from_a_plain_formula(context):
    """llama3.1-8b on an H100 SXM: the smallest batch whose decode step is compute-bound, by scanning
    b with FLOPs b (2 (N_read - norms) + 4 L n_h d_h (t + 1)) and bytes 2 N_read + b (4 L n_kv d_h (t+1)
    + 2 V) (matmul FLOPs: 2 per weight and token, plus QK^T and AV over t + 1 keys)."""
    L, d, n_h, n_kv, d_h, V = 32, 4096, 32, 8, 128, 128256
    n_read = PUBLISHED["llama3.1-8b"]["total"] - V * d
    per_seq_flops = 2 * (n_read - (2 * L + 1) * d) + 4 * L * n_h * d_h * (context + 1)
    per_seq_bytes = 4 * L * n_kv * d_h * (context + 1) + 2 * V
    peak, bandwidth = tflops("989.4"), Fraction("3.35") * TERA

    def compute_bound(b):
        return b * per_seq_flops / peak >= (2 * n_read + b * per_seq_bytes) / bandwidth

    expected = next((b for b in range(1, 5000) if compute_bound(b)), None)
    t = symllm.workload("llama3.1-8b", seq=max(context, 1), context=context, gpu="h100-sxm")["time"]
    assert t["compute_bound_batch"] == expected
    if expected is not None:
        at = lambda b: symllm.workload("llama3.1-8b", batch=b, seq=max(context, 1), context=context,  # noqa: E731
                                       gpu="h100-sxm")["time"]["decode_token_bound"]
        assert (at(expected - 1) if expected > 1 else "memory", at(expected)) == ("memory", "compute")
    else:
        assert context == 2048  # GQA with 4 query heads per KV head cannot pass the ridge at 2k context


@pytest.mark.parametrize("model, name, options", [
    ("llama3.1-8b", "h100-sxm", {}), ("llama3.1-8b", "a100-40gb", {"seq": 8192, "gen": 512}),
    ("llama3.2-1b", "l40s", {"dtype": "int4", "kv_dtype": "fp8"}), ("llama3.1-70b", "mi300x", {"seq": 4096}),
    ("llama3.1-70b", "h200", {"dtype": "fp8"}),
])
def test_max_batch_is_the_last_that_fits(model, name, options):
    """The inference peak fits the vendor's capacity at max_batch and not at max_batch + 1."""
    capacity = VENDOR[name][4]
    t = symllm.workload(model, gpu=name, **options)["time"]
    peak = lambda b: symllm.workload(model, batch=b, **options)["memory"]["inference_peak"]  # noqa: E731
    assert t["capacity"] == capacity and t["max_batch"] >= 1
    assert peak(t["max_batch"]) <= capacity < peak(t["max_batch"] + 1)
    assert t["fits"] == (peak(1) <= capacity)


def test_a_model_that_does_not_fit():
    """llama3.1-70b's bf16 weights alone (published total x 2 bytes, 141 GB) exceed an L40S's 48 GiB."""
    assert PUBLISHED["llama3.1-70b"]["total"] * 2 > 48 * GiB
    t = symllm.workload("llama3.1-70b", gpu="l40s")["time"]
    assert (t["fits"], t["max_batch"]) == (False, 0)


# --- closed forms, mfu, the command line ------------------------------------------------------------

@pytest.mark.parametrize("name", VENDOR)
def test_ridge_point(name):
    expected = tflops(VENDOR[name][0]) / VENDOR[name][3]
    assert symllm.derive("model", "ridge", gpu=name).value == expected
    assert symllm.workload("llama3.2-1b", gpu=name)["time"]["ridge"] == float(expected)


def test_decode_batch_derivation_matches_the_time_group():
    dv = symllm.derive("model", "decode_batch", config="llama3.1-8b", gpu="h100-sxm", seq=128)
    t = symllm.workload("llama3.1-8b", seq=128, gpu="h100-sxm")["time"]
    assert -(-dv.value.numerator // dv.value.denominator) == t["compute_bound_batch"] == 443


@pytest.mark.parametrize("context", [128, 390, 391, 2048, 100_000])
def test_decode_batch_says_memory_bound_where_no_batch_is_compute_bound(context, cli):
    """derive --quantity decode_batch printed a negative batch where none exists, then refused (exit 2), though
    "memory-bound at any batch" is the answer (issue 40). By the plain formula of
    test_compute_bound_batch_from_a_plain_formula, llama3.1-8b on an H100 SXM turns compute-bound only
    while f·B_mem > k·P per sequence (short contexts); past that derive prints the closed form and that answer
    (exit 0, no number), Python's Derivation has value None and the answer in note, and count's
    time.compute_bound_batch is null."""
    L, d, n_h, n_kv, d_h, V = 32, 4096, 32, 8, 128, 128256
    n_read = PUBLISHED["llama3.1-8b"]["total"] - V * d
    f = 2 * (n_read - (2 * L + 1) * d) + 4 * L * n_h * d_h * (context + 1)
    k = 4 * L * n_kv * d_h * (context + 1) + 2 * V
    exists = f * Fraction("3.35") * TERA > k * tflops("989.4")
    result = cli(["derive", "--quantity", "decode_batch", "--model", "llama3.1-8b", "--gpu", "h100-sxm",
                  "--seq", str(context)])
    t = symllm.workload("llama3.1-8b", seq=context, gpu="h100-sxm")["time"]
    dv = symllm.derive("model", "decode_batch", config="llama3.1-8b", gpu="h100-sxm", seq=context)
    assert result.code == 0 and result.err == ""
    answer = f"memory-bound at any batch on h100-sxm at t = {context:,}"
    if exists:
        assert t["compute_bound_batch"] is not None and dv.value > 0 and dv.note is None
        assert answer not in " ".join(result.out.split())
    else:
        assert answer in " ".join(result.out.split()) and t["compute_bound_batch"] is None
        assert dv.value is None and dv.note.startswith(answer) and not re.search(r"= -\d", result.out)
    assert exists == (context <= 390)  # the crossing disappears at 391 cached tokens (docs/hardware.md)


def test_mfu_takes_a_gpu_name():
    """mfu(..., "h100-sxm") divides by 989.4 TFLOPS (bf16), as the number itself does."""
    mfu = symllm.costs.utilisation.mfu
    by_name = mfu("llama3.1-8b", 4000, "h100-sxm", seq=8192)
    assert by_name == mfu("llama3.1-8b", 4000, 989.4e12, seq=8192)
    assert mfu("llama3.1-8b", 4000, "h100-sxm", seq=8192, dtype="fp8") == pytest.approx(by_name / 2, rel=1e-4)
    with pytest.raises(SymllmError, match="^gpu: unknown 'b300'"):
        mfu("llama3.1-8b", 4000, "b300", seq=8192)


def test_the_70b_example_has_one_mfu_for_one_step_time():
    """docs/hardware.md's llama3.1-70b example (tp 8 x dp 64, ZeRO 3, full recomputation, 8,192 tokens, one H100
    SXM each) expects the step its bound gives, 2.083 s: one time, so one MFU. It printed 23.9% bound and 22.3%
    expected, the bound counting the attention's whole rectangle. By hand, model FLOPs a token are 6N (N the
    matmul weights: the published 70,553,706,496 less the 128,256 x 8,192 embedding table and the 2·80 + 1 norms
    of 8,192) plus the causal attention core, 3 passes x 2 matmuls x 2 FLOPs x 64 heads x 128 x (s + 1)/2 pairs a
    token x 80 layers; a step is 64 x 8,192 tokens, over 512 GPUs x 989.4 TFLOP/s."""
    L, d, n_h, d_h, V, s = 80, 8192, 64, 128, 128256, 8192
    n = PUBLISHED["llama3.1-70b"]["total"] - V * d - (2 * L + 1) * d
    per_token = 6 * n + 3 * 2 * 2 * n_h * d_h * Fraction(s + 1, 2) * L
    assert (n, per_token) == (69_501_714_432, 449_226_473_472)
    t = symllm.workload("llama3.1-70b", tp=8, dp=64, zero_stage=3, recompute=True, seq=s, gpu="h100-sxm")["time"]
    e = t["expected"]
    assert e["training_step_s"] == t["training_step_s"]  # the expected step is its bound's (the floor)
    for step_s, mfu in ((t["training_step_s"], t["mfu"]), (e["training_step_s"], e["mfu"])):
        assert mfu == pytest.approx(float(per_token * 64 * s / Fraction(step_s) / (512 * tflops("989.4"))), rel=1e-12)
    assert t["mfu"] == e["mfu"]


def test_cli_count_json_has_time(cli):
    out = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--json"])
    assert out.code == 0
    t = json.loads(out.out)["time"]
    assert {"prefill_s", "decode_token_s", "tokens_per_s", "fits", "max_batch"} <= set(t)
    assert json.loads(out.out)["workload"]["gpu"] == "h100-sxm"
    text = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm"])
    assert text.code == 0 and "on h100-sxm (one GPU)" in text.out


@pytest.mark.parametrize("argv, start", [
    (["count", "llama3.1-8b", "--gpu", "h100"], "symllm: error: gpu: 'h100' is ambiguous (one of: h100-sxm, h100-pcie, h100-nvl, "),
    (["count", "llama3.1-8b", "--gpu", "a100-80gb", "--dtype", "fp8", "--json"],
     "symllm: error: dtype: a100-80gb has no fp8 tensor cores"),
    # the option that asked for fp8 matmuls is the one named, whole within the 100 columns (it said "dtype" and
    # was cut short: "... (its datasheet lists none); use...")
    (["count", "llama3.1-8b", "--gpu", "a100-80gb", "--compute-dtype", "fp8"],
     "symllm: error: compute_dtype: a100-80gb has no fp8 tensor cores; use bf16 or fp16\n"),
    (["derive", "--quantity", "ridge", "--gpu", "tpu"], "symllm: error: gpu: unknown 'tpu'"),
])
def test_cli_errors_are_one_line(cli, argv, start):
    out = cli(argv)
    assert out.code == 2 and out.err.startswith(start) and out.err.count("\n") == 1 and not out.out


def test_cli_derive_ridge(cli):
    out = cli(["derive", "--quantity", "ridge", "--gpu", "h100-sxm"])
    assert out.code == 0 and "= 19788/67 (295.343284)" in out.out


def test_decode_batch_is_for_the_model():
    with pytest.raises(SymllmError, match="^component: decode_batch"):
        symllm.derive("attention", "decode_batch")


def test_bytes_moved_by_a_tied_model_read_the_whole_matrix():
    """Tied embeddings: the lm_head multiplies by the whole table, so every parameter is read; the prefill
    writes the last position's 100 bf16 logits (``--logits all``: the 4 positions')."""
    cfg = ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4, hidden_dim=96, tie_embeddings=True)
    kv = 2 * 2 * 4 * 16 * 2  # K and V, 2 layers, 4 heads of 16, bf16
    for logits, rows in (("last", 1), ("all", 4)):
        t = symllm.workload(cfg, batch=1, seq=4, gpu="h100-sxm", logits=logits)["time"]
        assert t["prefill_bytes"] == 2 * symllm.params(cfg)["total"] + kv * 4 + rows * 100 * 2


def test_sweep_warns_that_gpu_does_not_apply(cli):
    out = cli(["sweep", "--base", "llama3.2-1b", "--seq", "128", "--gpu", "h100-sxm"])
    assert out.code == 0 and "symllm: warning: --gpu does not apply to a sweep" in out.err


# --- the catalogue (issue 22 item 3) and fit and time under a layout (item 2) -----------------------------

#: more vendor figures, typed as the sheets print them (dense bf16, fp16, fp8 TFLOPS; int8 TOPS; bandwidth;
#: memory "GB"); sources: the url each catalogue entry names (NVIDIA prints sparse figures, halved here)
MORE = {
    "l4": ("121", "121", "242.5", "242.5", 300 * GIGA, 24 * GiB),  # 242 / 485 / 485 with sparsity
    "t4": (None, "65", None, "130", 320 * GIGA, 16 * GiB),  # Turing: no bf16, no fp8, no sparsity
    "a10": ("125", "125", None, "250", 600 * GIGA, 24 * GiB),
    "h100-nvl": ("835.5", "835.5", "1670.5", "1670.5", Fraction("3.9") * TERA, 94 * GiB),  # 1,671 / 3,341 sparse
    "b200": ("2250", "2250", "4500", "4500", Fraction("7.7") * TERA, 180 * GiB),  # 4.5 / 9 / 9 PFLOPS sparse
    "gb200": ("2500", "2500", "5000", "5000", 8 * TERA, 186 * GiB),  # 5 / 10 / 10 PFLOPS sparse
    "mi250x": ("383", "383", None, "383", Fraction("3.2768") * TERA, 128 * GiB),
    "mi325x": ("1307.4", "1307.4", "2614.9", "2614.9", 6 * TERA, 256 * GiB),
    "rtx3090": ("71", "71", None, "284", 936 * GIGA, 24 * GiB),  # FP32 accumulate
    "rtx4090": ("165.2", "165.2", "330.3", "660.6", 1008 * GIGA, 24 * GiB),
    "rtx5090": ("209.5", "209.5", "419", "838", 1792 * GIGA, 32 * GiB),
    "apple-m2-ultra": ("27.2", "27.2", None, None, 800 * GIGA, 192 * GiB),
    # torchtitan's benchmark page: 96GB HBM2e at 2.4 TB/s, 500 W; no NVIDIA sheet: the H100 SXM's peaks
    "h100-sxm-hbm2e": ("989.4", "989.4", "1978.9", "1978.9", Fraction("2.4") * TERA, 96 * GiB),
}


@pytest.mark.parametrize("name", MORE)
def test_catalogue_holds_the_vendor_numbers(name):
    """Every catalogue entry: the dense peaks, int8, bandwidth and memory its source prints, exact ints."""
    bf16, fp16, fp8, int8, bandwidth, memory = MORE[name]
    g = accelerators.gpu(name)
    assert (g.bf16, g.fp16, g.fp8, g.int8) == tuple(tflops(x) for x in (bf16, fp16, fp8, int8))
    assert (g.bandwidth, g.unified or g.memory) == (bandwidth, memory)  # an Apple GPU: its unified memory
    assert g.source and g.url.startswith("https://") and g.note


def test_every_catalogue_entry_has_a_source_and_the_issues_cards():
    """The issue's list is in the catalogue, each with a source address, a memory and a bandwidth."""
    wanted = {"a10", "a10g", "l4", "l40s", "t4", "a100-40gb", "a100-80gb", "h100-pcie", "h100-sxm", "h100-nvl",
              "h200", "b200", "gb200", "mi250x", "mi300x", "mi325x", "rtx3090", "rtx4090", "rtx5090"}
    assert wanted <= set(accelerators.names())
    assert any(n.startswith("apple-") for n in accelerators.names())
    for g in accelerators.GPUS.values():
        assert g.url.startswith("https://") and g.memory > 0 and g.bandwidth > 0
        assert g.link is None or g.link_bandwidth > 0


def test_gpu_flags_describe_any_card(cli):
    """--gpu-memory (GiB), --gpu-bandwidth (GB/s) and --gpu-flops (dense TFLOPS) make an accelerator outside
    the catalogue, or change a catalogue one; one given alone without --gpu is refused in one line."""
    w = symllm.workload("llama3.1-8b", gpu_memory=24, gpu_bandwidth=1008, gpu_flops=165.2)["time"]
    assert (w["capacity"], w["bandwidth"], w["peak_flops"]) == (24 * GiB, 1008 * GIGA, Fraction("165.2") * TERA)
    assert symllm.workload("llama3.1-8b", gpu="rtx4090", gpu_memory=48)["time"]["capacity"] == 48 * GiB
    r = cli(["count", "llama3.1-8b", "--gpu-memory", "24"])
    assert r.code == 2 and r.err.startswith("symllm: error: gpu_bandwidth:")
    r = cli(["count", "llama3.1-8b", "--gpu", "t4"])  # no bf16 tensor cores on a T4
    assert r.code == 2 and "t4 has no bf16" in r.err
    assert cli(["count", "llama3.1-8b", "--gpu", "t4", "--dtype", "fp16"]).code == 0


def test_fit_is_per_gpu_of_the_layout_and_one_verdict():
    """Under --tp 8 the decode step reads an eighth of the weights and the fit is per GPU: the 70B fits
    where on one GPU it does not; the verdicts are the per-GPU peaks (memory_per_gpu) against the capacity."""
    one = symllm.workload("llama3.1-70b", gpu="h100-sxm")
    tp8 = symllm.workload("llama3.1-70b", gpu="h100-sxm", tp=8)
    assert not one["time"]["fits"] and one["time"]["max_batch"] == 0
    assert tp8["time"]["fits"] and tp8["time"]["max_batch"] > 0
    assert tp8["time"]["decode_token_bytes"] < one["time"]["decode_token_bytes"] / 4
    assert one["time"]["decode_token_s"] is None  # nothing is timed that does not fit
    cap = 80 * GiB
    for w in (one, tp8):
        t, m = w["time"], w["memory_per_gpu"]
        assert (t["fits"], t["training_fits"]) == (m["inference_peak"] <= cap, m["training_peak"] <= cap)
    # weights per GPU: rank 0 holds the tensor-split matrices' eighth (plus the replicated norms)
    assert tp8["memory_per_gpu"]["weights"] < one["memory"]["weights"] / 7.9


#: a layout on which a training step of llama3.1-70b fits an H100 (tests/test_parallel.py's report of it: the
#: text is rendered once, through symllm.present.rendered) and one on which it does not (35B parameters a GPU)
VERDICT_LAYOUTS = (dict(tp=8, pp=4, dp=2, sp=True, zero_stage=1, seq=4096), dict(tp=2))


def test_report_has_one_training_verdict_per_layout():
    """A report of a layout on an H100 says the same thing about a training step in its roofline table and in
    its parallel section (issue 22: they once disagreed), where it fits and where it does not."""
    from symllm.present import rendered
    verdicts = []
    for options in VERDICT_LAYOUTS:
        md = rendered.report("llama3.1-70b", fmt="markdown", gpu="h100-sxm", **options)
        fits = symllm.workload("llama3.1-70b", gpu="h100-sxm", **options)["time"]["training_fits"]
        gpus = options["tp"] * options.get("pp", 1) * options.get("dp", 1)
        assert f"| training peak fits (per GPU of {gpus}) | {'yes' if fits else 'no'}" in md
        assert f"a training step **{'fits' if fits else 'does not fit'}**" in md
        verdicts.append(fits)
    assert verdicts == [True, False]  # both verdicts are shown


def test_report_gives_a_token_budget_bound_and_expected():
    """A report's row for --tokens gives the days, GPU-hours and cost as a bound and as expected (it gave the
    bound alone): by hand, D tokens at the expected tokens/s per GPU on one GPU take D / that seconds, an
    hour's price each GPU-hour."""
    from symllm.present import rendered
    D, price = 10 ** 9, 2
    md = rendered.report("llama3.2-1b", fmt="markdown", gpu="h100-sxm", seq=4096, tokens=D, price=price)
    e = symllm.workload("llama3.2-1b", gpu="h100-sxm", seq=4096)["time"]["expected"]
    seconds = D / e["training_tokens_per_s_per_gpu"]
    row = next(line for line in md.splitlines() if line.startswith(f"| {D:,} training tokens |"))
    assert row.endswith(f"; expected {seconds / 86400:,.2f} days, {seconds / 3600:,.0f} GPU-hours, "
                        f"cost {seconds / 3600 * price:,.2f} |")


def test_training_time_tokens_and_cost_by_hand():
    """One H100, compute-bound: the step is 3 × the forward's FLOPs / peak (FlopCounterMode's count of a
    forward is what test_flops checks), the forward computing every position's logits (the loss reads them:
    the default prefill's, for the last position, plus the lm_head over the other 4,095, 2·4095·d·V by hand);
    D tokens take D / (b·s) steps; GPU-hours and cost follow."""
    w = symllm.workload("llama3.2-1b", gpu="h100-sxm", seq=4096, tokens=10 ** 9, price=2)
    forward = w["flops"]["prefill"] + 2 * 4095 * 2048 * 128256
    assert symllm.workload("llama3.2-1b", seq=4096, logits="all")["flops"]["prefill"] == forward
    step = Fraction(3 * forward, 989_400 * TERA // 1000)
    assert w["time"]["training_step_s"] == pytest.approx(float(step))
    assert w["time"]["training_s"] == pytest.approx(float(step * 10 ** 9 / 4096))
    assert w["time"]["gpu_hours"] == pytest.approx(float(step * 10 ** 9 / 4096 / 3600))
    assert w["time"]["cost"] == pytest.approx(2 * w["time"]["gpu_hours"])


def test_links_name_the_topology():
    """tp within a node rides the node's link; groups spanning nodes the network (--network)."""
    work = symllm.Workload(tp=8, dp=2, gpu="h100-sxm", network="eth-100g")
    route = hardware.links(work, accelerators.gpu("h100-sxm"))
    assert route["tp"] == ("NVLink 4", 450 * GIGA)  # 900 GB/s both ways
    assert route["dp"][1] == Fraction("12.5") * GIGA
    assert hardware.links(symllm.Workload(tp=2), accelerators.gpu("rtx4090"))["tp"] == ("PCIe Gen4 x16", 32 * GIGA)


def test_a_ring_across_nodes_adds_the_nics_of_its_ranks_in_a_node():
    """Ring collectives (tp, dp) between nodes run at the NICs of the ring's ranks in one node together, one
    400 Gb/s (50 GB/s) ConnectX-7 a GPU as in a DGX H100 (NCCL's maintainer, NVIDIA/nccl issue #530: "Ring and
    Tree both use all NICs in parallel"); an all-to-all (ep) and a pipeline send (pp) keep one NIC a GPU
    (NVIDIA/nccl-tests issue #267: "Alltoall cannot aggregate the bandwidth of multiple NICs"). By hand, 8
    H100s a node: FSDP over 128 ranks puts 8 of the ring's ranks in a node, 8 x 50 = 400 GB/s (under NVLink
    4's 450); at tp 2, 8 // 2 = 4 of a data-parallel ring's ranks a node, 200 GB/s; at tp 8, one, 50 GB/s; a
    tensor-parallel group of 16 spans two nodes with 8 ranks in each, 400 GB/s. One PCIe GPU node of 8 RTX
    4090s: 8 x 50 = 400 GB/s, capped at the node's PCIe Gen4 x16 (32 GB/s one way), which each hop inside the
    node crosses. 100 GbE: 8 x 12.5 = 100 GB/s."""
    h100, gb = accelerators.gpu("h100-sxm"), GIGA
    fsdp = hardware.links(symllm.Workload(dp=128, ep=16, pp=2), h100)
    assert fsdp["dp"] == ("InfiniBand NDR, 400 Gb/s per GPU, 8 NICs a ring", 400 * gb)
    assert fsdp["ep"] == ("InfiniBand NDR, 400 Gb/s per GPU", 50 * gb) and fsdp["pp"][1] == 50 * gb
    assert hardware.links(symllm.Workload(tp=2, dp=64), h100)["dp"][1] == 200 * gb
    assert hardware.links(symllm.Workload(tp=8, dp=16), h100)["dp"][1] == 50 * gb
    assert hardware.links(symllm.Workload(tp=16), h100)["tp"][1] == 400 * gb
    assert hardware.links(symllm.Workload(dp=16), accelerators.gpu("rtx4090"))["dp"][1] == 32 * gb
    assert hardware.links(symllm.Workload(dp=16, network="eth-100g"), h100)["dp"][1] == 100 * gb


def test_fsdp_gradient_traffic_times_at_the_nodes_nics():
    """The expected step's data-parallel all-reduce (symllm.costs.collectives.allreduce_s) over 16 H100 nodes
    at dp 128 runs at the node's 8 NICs: 20 us latency plus the bytes at 0.7 (efficiency.json, network) of
    8 x 50 GB/s, by hand 1 GB in 20 us + 10**9 / (0.7 x 4 x 10**11) s = 3.5914 ms; one NIC's 50 GB/s would
    take 8 times the bandwidth term (28.59 ms)."""
    from symllm.costs import collectives
    link = hardware.links(symllm.Workload(dp=128), accelerators.gpu("h100-sxm"))["dp"]
    assert float(collectives.allreduce_s(1, 10 ** 9, link)) == pytest.approx(20e-6 + 1e9 / (0.7 * 400e9), rel=1e-12)


def test_a_plan_reads_each_layouts_links_from_the_one_rule():
    """A plan's layouts cross the links hardware.links gives a workload of the same ranks: 8 H100s a node
    (gpus.json), so at tp=4 the data-parallel group of dp=2 (8 ranks) stays on NVLink 4 and dp=4 (16 ranks)
    crosses InfiniBand NDR, a ring with 8 // 4 = 2 of its ranks a node: 2 x 50 GB/s; the pipeline's sends keep
    one NIC (50 GB/s); every rank count the rule reads is a column of the plan."""
    from symllm.studies import plans
    g = accelerators.gpu("h100-sxm")
    cols = {k: np.asarray(v) for k, v in {"tp": [4, 4], "dp": [2, 4], "ep": [1, 1], "pp": [1, 2]}.items()}
    bw = plans._links(cols, symllm.Workload(), g)
    assert bw["dp"].tolist() == [450 * GIGA, 2 * 50 * GIGA] and bw["tp"].tolist() == [450 * GIGA, 450 * GIGA]
    assert bw["pp"].tolist() == [450 * GIGA, 50 * GIGA]
    for i in range(2):
        work = symllm.Workload(**{k: int(v[i]) for k, v in cols.items()})
        assert {k: b[i] for k, b in bw.items()} == {k: v[1] for k, v in hardware.links(work, g).items()}
    assert set(hardware.LINK_RANKS) <= set(plans._KEYS)
