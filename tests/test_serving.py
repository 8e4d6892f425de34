"""Serving capacity as vLLM allocates it (symllm.costs.serving), and the weight and KV-cache formats in
the memory figures (symllm.costs.phases), against published vLLM start-up logs
(tests/data/vllm_serving_logs.json: each source, its settings, what was inferred, the tolerance and why)
and hand arithmetic."""
import json
import re
from fractions import Fraction
from math import ceil, floor
from pathlib import Path

import pytest

import symllm
from symllm.costs import batching, serving
from symllm.costs.workloads import Workload
from symllm.errors import SymllmError

LOGS = json.loads((Path(__file__).parent / "data" / "vllm_serving_logs.json").read_text())
GiB = 2**30
#: bytes of one token's K and V, by hand: 2 (K, V) x layers x KV heads x head width x 2 bytes (bf16)
PER_TOKEN = {"llama3.1-8b": 2 * 32 * 8 * 128 * 2, "llama3.1-70b": 2 * 80 * 8 * 128 * 2}


def _log(model):
    return next(x for x in LOGS["logs"] if x["model"] == model)


def _settings(log) -> dict:
    s = dict(log["settings"])
    if "gpu_memory_utilization" in s:
        s["gpu_memory_utilization"] = Fraction(s["gpu_memory_utilization"])
    return s


@pytest.mark.parametrize("model", ["llama3.1-8b", "llama3.1-70b"])
def test_logged_kv_memory_gives_the_logged_tokens_and_concurrency(model):
    """Given the KV-cache memory a log reports, blocks of 16 tokens of the hand-counted bytes per token
    give its "GPU KV cache size" (8B: per 32 of its 33 layers, the EAGLE drafter's one aside; 0.01 GiB of
    rounding is 41 tokens) and tokens / context its "Maximum concurrency" to two decimals."""
    log = _log(model)
    per_layer = PER_TOKEN[model] // (32 if model == "llama3.1-8b" else 80)
    if "available_kv_gib" in log:
        memory = Fraction(log["available_kv_gib"]) * GiB
    else:
        memory = log["blocks"] * 16 * per_layer * log["kv_layers"]
    r = serving.capacity(model, kv_cache_bytes=memory, **_settings(log))
    assert r["kv_bytes_per_token"] == PER_TOKEN[model] and r["block_size"] == 16 and r["kv_tokens"] % 16 == 0
    alone = Fraction(log["kv_tokens"] * log["kv_layers"], PER_TOKEN[model] // per_layer)  # the model's own layers
    assert abs(r["kv_tokens"] - alone) <= Fraction(GiB, 200 * PER_TOKEN[model]) + 16
    assert f"{log['kv_tokens'] / log['context']:.2f}" == log["concurrency"]
    if model == "llama3.1-70b":
        assert r["blocks"] == log["blocks"] and f"{float(r['max_concurrency']):.2f}" == log["concurrency"]


@pytest.mark.parametrize("model", ["llama3.1-8b", "llama3.1-70b"])
def test_predicted_kv_cache_within_the_stated_tolerance(model):
    """Predicted from the settings alone (vLLM's defaults where the source states none), the KV-cache
    memory is within the stated tolerance of the logged one (the activation peak and non-torch memory
    are measured by vLLM, not derived: tests/data/vllm_serving_logs.json says why 3.5 GiB); the w8a8
    70B's weights are vLLM's "Loading model weights took 67.7229 GB" (GiB) within 0.1%."""
    log = _log(model)
    r = serving.capacity(model, **_settings(log))
    logged = (Fraction(log["available_kv_gib"]) * GiB if "available_kv_gib" in log
              else log["blocks"] * 16 * PER_TOKEN[model])
    assert abs(r["kv_cache_bytes"] - logged) <= Fraction(LOGS["tolerance"]["kv_cache_gib"]) * GiB, \
        (float(r["kv_cache_bytes"]) / GiB, float(logged) / GiB)
    assert r["fits"] and r["kv_tokens"] >= log["context"]
    if "weights_gib" in log:
        assert abs(r["weights"] / (Fraction(log["weights_gib"]) * GiB) - 1) <= Fraction(1, 1000)


def test_capacity_by_hand():
    """KV bytes = utilization x memory (what torch reports: 85,017,493,504 bytes on an H100 80GB, measured
    2026-11-28) - weights - activation peak - non-torch, in whole blocks of the
    per-rank bytes a token: tensor parallelism splits the 8 KV heads (8 ranks: one each; 16 ranks: one each,
    replicated on 2 ranks, as vLLM's QKVParallelLinear runs it; 3 ranks, a split head, refused as every door
    refuses it: docs/parallel.md); an fp8 cache is 1 byte an element."""
    r = serving.capacity("llama3.1-70b", gpu="h100-sxm", tp=4, seq=8192, kv_format="fp8", non_torch=GiB,
                         gpu_memory_utilization=Fraction(9, 10), max_num_batched_tokens=4096, block_size=32)
    assert r["kv_bytes_per_token"] == 2 * 80 * 2 * 128 * 1
    # torch's total_memory of a lent H100 80GB HBM3, x 0.9 to whole bytes as vLLM's int() of the KV memory rounds
    assert r["usable"] == floor(Fraction(9, 10) * 85_017_493_504) == 76_515_744_153  # 76,515,744,153.6
    assert r["kv_cache_bytes"] == r["usable"] - r["weights"] - r["activation_peak"] - GiB
    assert r["blocks"] == r["kv_cache_bytes"] // (32 * r["kv_bytes_per_token"]) and r["kv_tokens"] == 32 * r["blocks"]
    assert r["max_concurrency"] == Fraction(r["kv_tokens"], 8192)
    assert serving.capacity("llama3.1-70b", gpu="h100-sxm", tp=8, seq=64)["kv_bytes_per_token"] == 2 * 80 * 1 * 128 * 2
    assert serving.capacity("llama3.1-70b", gpu="h100-sxm", tp=16, seq=64)["kv_bytes_per_token"] == 2 * 80 * 1 * 128 * 2
    with pytest.raises(SymllmError, match=r"^tp: 3 ranks do not divide the 64 query and 8 KV heads"):
        serving.capacity("llama3.1-70b", gpu="h100-sxm", tp=3, seq=64)
    small = serving.capacity("llama3.1-8b", gpu="rtx4090", seq=8192, gpu_memory_utilization=0.5)
    assert small["blocks"] == 0 and not small["fits"]  # 12 GiB cannot hold 15 GiB of weights


def test_a_latent_cache_is_whole_on_every_tensor_rank():
    """vLLM's MLA layers cache one latent a token on every tensor rank (MLAAttentionSpec with num_kv_heads=1,
    vllm/model_executor/layers/attention: the latent is not split by heads): DeepSeek-V2-Lite's 27 layers of
    kv_lora_rank 512 + RoPE key 64 in bf16 are 27 x 576 x 2 = 31,104 bytes a token at tp 1, 2 and 4 alike."""
    for tp in (1, 2, 4):
        r = serving.capacity("deepseek-v2-lite", gpu="h100-sxm", tp=tp, seq=4096)
        assert r["kv_bytes_per_token"] == 27 * (512 + 64) * 2, tp


def test_vllm_v0_profiles_the_last_positions_logits():
    """vLLM's V0 engine profiles through execute_model, which computes logits for each dummy prompt's last
    position only (vllm/worker/model_runner.py, GPUModelRunnerBase.profile_run): the activation peak of a
    Llama-3.1-8B profile of 20,000 tokens is then its MLP's, by hand from vLLM's LlamaMLP and decoder layer:
    the residual and the normed input (2 x 4,096), the gate_up output (2 x 14,336) and its SiluAndMul
    product (14,336), bf16, per token. The vLLM V0 log of vllm#10517 (tests/data/published_runs.json, RTX 3090,
    --max-model-len 20000) shows peak_torch_memory 17.06 GiB over weights of 14.9888 GiB: 2.07 GiB, within 10%.
    V1 (0.8 on) runs the same forward, then its dummy sampler on 256 rows (``vllm serve``'s max_num_seqs on a
    card under 70 GiB): 256 x 128,256 x 38 bytes of logits and sort buffers and (20,000 + 2 x 256) x 4,096 x 2
    of hidden states, 1.31 GiB, under the MLP's 1.91 GiB: the forward's peak stands."""
    v0 = serving.capacity("llama3.1-8b", gpu="rtx3090", seq=20000, max_num_batched_tokens=20000, engine="vllm-v0")
    assert v0["activation_peak"] == 20000 * (2 * 4096 + 3 * 14336) * 2
    assert abs(v0["activation_peak"] / (Fraction("2.07") * GiB) - 1) < Fraction(10, 100)
    v1 = serving.capacity("llama3.1-8b", gpu="rtx3090", seq=20000, max_num_batched_tokens=20000)
    assert v1["sampler_rows"] == 256 and v1["sampler_peak"] == 256 * 128256 * 38 + (20000 + 2 * 256) * 4096 * 2
    assert v1["activation_peak"] == v0["activation_peak"] > v1["sampler_peak"]


def test_vllm_v1_sampler_and_nccl_by_hand():
    """vLLM V1's start-up profile on Qwen3-235B-A22B-FP8 at TP4 on H100s (vllm#21348), by hand from vLLM 0.10.0's
    source (efficiency.json, engines.vllm, profile_sampler_source and nccl_source): ``vllm serve`` on a card of
    70 GiB or more that is not an A100 runs 1,024 sequences (arg_utils.py), so the dummy sampler samples 1,024
    rows of the whole 151,936-token vocabulary (all-gathered to each rank) with top-k and top-p; PyTorch's sort
    then holds per entry the bf16 logits (2), their fp32 copy (4), its values (4) and int64 indices (8), the
    reverse indices (8) and cub's alternate keys and values (4 + 8); the forward's 8,192 hidden states of 4,096
    and twice 1,024 rows of them stay: 5.58 GiB, above the forward and its fused-MoE workspace. Three NCCL
    communicators (tp, ep, torch's tp group) of 688 MiB join the 0.35 GiB: 2.37 GiB outside torch."""
    r = serving.capacity("qwen3-235b-a22b", gpu="h100-sxm", tp=4, seq=40960, kv_dtype="bf16",
                         weight_format="fp8-block")
    assert r["sampler_rows"] == 1024
    assert r["sampler_peak"] == 1024 * 151936 * (2 + 4 + 4 + 8 + 8 + 4 + 8) + (8192 + 2 * 1024) * 4096 * 2
    assert r["activation_peak"] == r["sampler_peak"] > r["moe_workspace"]
    assert r["nccl"] == 3 * 688 * 2**20 and r["non_torch"] == ceil(Fraction("0.35") * GiB) + 3 * 688 * 2**20
    one = serving.capacity("qwen3-235b-a22b", gpu="h100-sxm", tp=1, seq=4096, weight_format="fp8-block",
                           gpu_memory_utilization=1)
    assert one["nccl"] == 0 and one["non_torch"] == ceil(Fraction("0.35") * GiB)  # no communicator on one GPU
    # the card's default, the option, and the rows never above the profile's dummy requests
    assert serving.capacity("llama3.1-8b", gpu="a100-80gb", seq=4096)["sampler_rows"] == 256
    assert serving.capacity("llama3.1-8b", gpu="h100-sxm", seq=4096, max_num_seqs=64)["sampler_rows"] == 64
    assert serving.capacity("llama3.1-8b", gpu="h100-sxm", seq=4096, max_num_batched_tokens=512)["sampler_rows"] == 512
    given = serving.capacity("qwen3-235b-a22b", gpu="h100-sxm", tp=4, seq=4096, weight_format="fp8-block",
                             non_torch=GiB)
    assert given["non_torch"] == GiB and given["nccl"] == 0  # a given non-torch memory replaces the engine's
    with pytest.raises(SymllmError, match=r"^max_num_seqs: "):
        serving.capacity("llama3.1-8b", gpu="h100-sxm", seq=4096, max_num_seqs=0)
    # V1 before 0.8 (vllm#12569's log): the rows' bf16 logits only, 2 bytes each, under the 70B's forward peak
    old = serving.capacity("llama3.1-70b", gpu="h100-sxm", seq=2048, weight_format="int8",
                           engine="vllm-v1-0.7")
    assert old["sampler_rows"] == 1024 and old["sampler_peak"] == 1024 * 128256 * 2 + (8192 + 2 * 1024) * 8192 * 2
    assert old["activation_peak"] > old["sampler_peak"] and old["nccl"] == 0
    # engines without the sampler run: V0 and SGLang keep the forward's peak and no NCCL term
    for other in ("vllm-v0", "sglang"):
        o = serving.capacity("qwen3-235b-a22b", gpu="h100-sxm", tp=4, seq=4096, weight_format="fp8-block",
                             engine=other)
        assert o["sampler_rows"] == 0 and o["nccl"] == 0 and o["non_torch"] == ceil(Fraction("0.35") * GiB), other


def test_count_serve(cli):
    """count --serve prints the allocation and the concurrency (--json: the same numbers); its options
    without --serve, no GPU and a utilization above 1 are one line each, exit 2."""
    r = cli(["count", "llama3.1-8b", "--serve", "--gpu", "h100-sxm", "--seq", "131072"])
    assert r.code == 0 and "GPU KV cache size" in r.out and "max concurrency at 131,072" in r.out
    j = json.loads(cli(["count", "llama3.1-8b", "--serve", "--gpu", "h100-sxm", "--seq", "131072", "--json"]).out)
    assert j["serving"]["kv_tokens"] == serving.capacity("llama3.1-8b", gpu="h100-sxm", seq=131072)["kv_tokens"]
    for argv, line in (
            (["--block-size", "32"], "block_size: applies to --serve"),
            (["--serve"], "serve: give the GPU"),
            (["--serve", "--gpu", "h100-sxm", "--gpu-memory-utilization", "1.5"], "gpu_memory_utilization: got 1.5")):
        r = cli(["count", "llama3.1-8b", *argv])
        assert r.code == 2 and r.err.startswith(f"symllm: error: {line}") and len(r.err.splitlines()) == 1, r.err


def test_formats_reach_memory_and_fit(cli):
    """--weight-format: the weights memory and the inference peak use the format's exact bytes (the Q4_K_M
    file of llama-bench's 4.58 GiB), so the fit on a 24 GB card allows a larger batch; --kv-format q8_0:
    the KV cache is 34 bytes per 32 elements (llama.cpp's block with its fp16 scale) of bf16's 64; both
    together with --kv-dtype is one line."""
    base = ["count", "llama3.1-8b", "--json", "--seq", "8192", "--gpu", "rtx4090"]
    plain = json.loads(cli(base).out)
    quant = json.loads(cli(base + ["--weight-format", "Q4_K_M", "--kv-format", "q8_0"]).out)
    assert quant["memory"]["weights"] == quant["weight_format"]["bytes"] and round(quant["memory"]["weights"] / GiB, 2) == 4.58
    assert quant["weight_format"]["dtype_weights_bytes"] == plain["memory"]["weights"] == 2 * 8030261248
    assert quant["memory"]["kv_cache"] * 64 == plain["memory"]["kv_cache"] * 34
    assert quant["memory"]["inference_peak"] - quant["memory"]["weights"] - quant["memory"]["kv_cache"] == \
        plain["memory"]["inference_peak"] - plain["memory"]["weights"] - plain["memory"]["kv_cache"]
    assert quant["time"]["max_batch"] > plain["time"]["max_batch"]
    assert Workload(kv_format="q4_0").kv_bytes == Fraction(18, 32)
    r = cli(["count", "llama3.1-8b", "--kv-format", "fp8", "--kv-dtype", "int8"])
    assert r.code == 2 and r.err.startswith("symllm: error: kv_format: give --kv-format or --kv-dtype")


def test_sweep_takes_formats_over_workload_axes(cli):
    """A sweep over the prompt with a weight and a KV-cache format gives count's weights and KV cache;
    varying the model under a weight format is one line (its bytes are per tensor of one model)."""
    r = cli(["sweep", "--base", "llama3.1-8b", "--seq", "1024,4096", "--weight-format", "Q8_0", "--kv-format", "q4_0",
             "--quantity", "weights,kv_cache"])
    rows = [line.split(",") for line in r.out.strip().splitlines()[1:]]
    for row in rows:
        counted = json.loads(cli(["count", "llama3.1-8b", "--json", "--seq", row[0], "--weight-format", "Q8_0",
                                  "--kv-format", "q4_0"]).out)["memory"]
        assert (int(row[-2]), int(row[-1])) == (counted["weights"], counted["kv_cache"])
    r = cli(["sweep", "--base", "llama3.1-8b", "--dim", "4096,5120", "--weight-format", "Q8_0"])
    assert r.code == 2 and "weight_format: its bytes are per tensor of one model" in r.err


def test_moe_workspace_by_hand():
    """vLLM's fused-MoE workspace (vllm/model_executor/layers/fused_moe/fused_moe.py, fused_experts_impl:
    cache13 of M·k·max(N, K) and intermediate_cache2 of M·k·N/2 bf16 elements, M = min(tokens, 32768)), by hand
    for Qwen3-235B-A22B (config.json: hidden_size 4096, moe_intermediate_size 1536, num_experts_per_tok 8) at TP4
    on vLLM V1's profile of 8192 tokens: N = 2·1536/4 = 768, so 8192·8·4096·2 + 8192·8·384·2 = 536,870,912 +
    50,331,648 bytes; the chunk caps M at 32768; a dense model has none; vLLM V1's profile peak holds it beside
    the forward's working set (the larger of that and the logits' peak), the V0 engine's does not add it."""
    assert serving.moe_workspace_bytes("qwen3-235b-a22b", 8192, tp=4) == 536870912 + 50331648
    assert serving.moe_workspace_bytes("qwen3-235b-a22b", 65536, tp=4) == 4 * (536870912 + 50331648)  # M = 32768
    assert serving.moe_workspace_bytes("qwen3-235b-a22b", 8192, tp=1) == 8192 * 8 * 4096 * 2 + 8192 * 8 * 1536 * 2
    assert serving.moe_workspace_bytes("llama3.1-8b", 8192) == 0
    kw = dict(gpu="h100-sxm", tp=4, weight_format="fp8-block", seq=4096)
    v1, v0 = serving.capacity("qwen3-235b-a22b", **kw), serving.capacity("qwen3-235b-a22b", engine="vllm-v0", **kw)
    assert v1["moe_workspace"] == 587202560 and v0["moe_workspace"] == 0
    assert v1["activation_peak"] >= v1["moe_workspace"] and v1["kv_tokens"] < v0["kv_tokens"] + 1


@pytest.mark.parametrize("engine,gpu,context,expected", [
    # vLLM V1, 0.9.0 (vllm/engine/arg_utils.py, _set_default_args_v1): "device_memory >= 70 * GiB_bytes and 'a100'
    # not in device_name" -> OPENAI_API_SERVER 8192, else 2048; device memory as torch reports it
    ("vllm", "h100-sxm", 4096, 8192),    # 79.18 GiB, not an A100
    ("vllm", "h200", 4096, 8192),        # 139.80 GiB
    ("vllm", "a100-80gb", 4096, 2048),   # 80 GB, but an A100 (PR #17885)
    ("vllm", "l40s", 4096, 2048),        # 48 GB < 70 GiB
    ("vllm", "rtx3090", 4096, 2048),     # 23.58 GiB
    # V1 of 0.7.3 (_override_v1_engine_args): "h100" or "h200" in the device name -> 8192, else 2048
    ("vllm-v1-0.7", "h100-sxm", 4096, 8192),
    ("vllm-v1-0.7", "mi300x", 4096, 2048),
    # V0 (0.8.5 vllm/config.py SchedulerConfig): max(max_model_len, 2048) without chunked prefill, 2048 with it,
    # which V0 turns on past a max_model_len of 32768
    ("vllm-v0", "rtx3090", 20000, 20000),
    ("vllm-v0", "rtx3090", 1000, 2048),
    ("vllm-v0", "h100-sxm", 32769, 2048),
    ("trtllm", "a100-80gb", 4096, 8192),  # TensorRT-LLM's LLM API: BaseLlmArgs max_num_tokens default 8192
    # SGLang 0.5.2's chunked_prefill_size (its wheel's server_args.py, ServerArgs.__post_init__, lines 508-518) by
    # the card's memory: 2048 under 35 * 1024 MiB, 8192 under 160 * 1024, else 16384 (0.5.4's 4096 under 60 GiB is
    # a later version's)
    ("sglang", "rtx3090", 4096, 2048),    # 23.58 GiB: under 35 GiB -> 2048
    ("sglang", "l40s", 4096, 8192),       # 48 GiB: 35 GiB or more, under 160 -> 8192 (0.5.4: 4096)
    ("sglang", "a100-40gb", 4096, 8192),  # 40 GiB: 35 GiB or more, under 160 -> 8192 (0.5.4: 4096)
    ("sglang", "h100-sxm", 4096, 8192),   # 79.18 GiB: under 160 GiB -> 8192
    ("sglang", "h200", 4096, 8192),       # 139.80 GiB: under 160 GiB -> 8192
    ("sglang", "mi300x", 4096, 16384),    # 192 GiB: 160 GiB or more -> 16384
    ("hf", "h100-sxm", 4096, 8192),       # an engine that declares none
])
def test_default_max_num_batched_tokens_by_the_engines_source(engine, gpu, context, expected):
    """`vllm serve`'s max_num_batched_tokens where none is given, by engine, card and context (read in vLLM's
    0.7.3, 0.8.5 and 0.9.0 wheels); capacity profiles that many tokens."""
    assert batching.default_max_num_batched_tokens(gpu, engine, context) == expected
    r = serving.capacity("llama3.2-1b", gpu=gpu, engine=engine, seq=context - 1, gen=1)
    assert r["max_num_batched_tokens"] == expected
    given = serving.capacity("llama3.2-1b", gpu=gpu, engine=engine, seq=context - 1, gen=1, max_num_batched_tokens=4096)
    assert given["max_num_batched_tokens"] == 4096


@pytest.mark.parametrize("engine,gpu,kv_tokens,context,expected", [
    # vllm serve's max_num_seqs (arg_utils.py, _set_default_args_v1, 0.9-0.10): 1024 on >= 70 GiB not an A100, else 256
    ("vllm", "h100-sxm", None, None, 1024),
    ("vllm", "a100-80gb", None, None, 256),
    # TensorRT-LLM's LLM API (llm_args.py, BaseLlmArgs): max_batch_size 2048 whatever the card
    ("trtllm", "rtx3090", None, None, 2048),
    # SGLang (model_runner.py, init_memory_pool): min(max(int(kv_tokens / context_len * 512), 2048), 4096)
    ("sglang", "h100-sxm", 441_312, 131072, 2048),     # 441,312 / 131,072 x 512 = 1,723.9 -> the floor 2048
    ("sglang", "h100-sxm", 1_000_000, 131072, 3906),   # 1,000,000 / 131,072 x 512 = 3,906.25 -> 3906
    ("sglang", "h100-sxm", 2_000_000, 131072, 4096),   # 7,812.5 -> the ceiling 4096
    ("sglang", "h100-sxm", None, None, None),          # no KV cache yet: no figure
    ("hf", "h100-sxm", None, None, None),              # an engine that declares none
    # lmdeploy v0.10.2 (lmdeploy/utils.py get_max_batch_size, read at tag v0.10.2): the first of a100 384, a800 384,
    # h100 1024, h800 1024, l20y 1024, h200 1024 in torch.cuda.get_device_name(0).lower(), else 128
    ("lmdeploy", "a100-80gb", None, None, 384),        # 'nvidia a100-sxm4-80gb'
    ("lmdeploy", "a100-80gb-pcie", None, None, 384),   # 'nvidia a100 80gb pcie'
    ("lmdeploy", "h100-pcie", None, None, 1024),       # 'nvidia h100 pcie'
    ("lmdeploy", "h200", None, None, 1024),            # 'nvidia h200'
    ("lmdeploy", "rtx4090", None, None, 128),          # 'nvidia geforce rtx 4090': none of them
    ("lmdeploy", "l40s", None, None, 128),
])
def test_default_max_num_seqs_by_the_engines_source(engine, gpu, kv_tokens, context, expected):
    """The most sequences an engine runs at once where none is given, from each engine's source
    (batching.SCHEDULER's)."""
    assert batching.default_max_num_seqs(gpu, engine, kv_tokens, context) == expected


def test_vllm_reads_the_device_name_torch_reports():
    """vLLM's large-card defaults (0.9.0 vllm/engine/arg_utils.py, _set_default_args_v1: "device_memory >= 70 *
    GiB_bytes and 'a100' not in device_name", device_name torch.cuda.get_device_name(0).lower()) read the name the
    driver gives, as lmdeploy's by-name table does: a card of 80 GiB under a name of its own that torch (nvidia-smi)
    names "NVIDIA A100-SXM4-80GB" is an A100 to vLLM, 256 sequences and 2048 tokens, not 1024 and 8192; the same card
    without that name gets the large defaults."""
    import dataclasses
    from symllm.costs import accelerators
    a100 = accelerators.gpu("a100-80gb")
    assert a100.nvidia_smi == ("NVIDIA A100-SXM4-80GB",) and a100.usable >= 70 * 2 ** 30
    renamed = dataclasses.replace(a100, name="lab-80")
    assert (batching.default_max_num_seqs(renamed), batching.default_max_num_batched_tokens(renamed)) == (256, 2048)
    unnamed = dataclasses.replace(renamed, nvidia_smi=())
    assert (batching.default_max_num_seqs(unnamed), batching.default_max_num_batched_tokens(unnamed)) == (1024, 8192)


@pytest.mark.parametrize("engine,ceiling", [("vllm", 1024), ("trtllm", 2048), ("lmdeploy", 1024)])
def test_under_load_runs_no_more_than_the_engines_limit(engine, ceiling):
    """Short requests on an H200 fit far more sequences in the KV cache than the engine runs: running stops at its
    max_num_seqs (vLLM: 1024 on an H200) or max_batch_size (TensorRT-LLM: 2048; TurboMind, lmdeploy v0.10.2's
    get_max_batch_size: 1024 for an 'h200' in the device name)."""
    from symllm.costs.traffic import under_load
    kw = dict(gpu="h200", seq=64, gen=64, engine=engine)
    held = serving.capacity("llama3.2-1b", **kw)["kv_tokens"] // 128
    assert held > 4 * ceiling
    r = under_load("llama3.2-1b", concurrency=10 ** 6, **kw)
    assert r["running"] == r["max_running"] == ceiling and r["running_limit"] == "max_num_seqs"
    assert r["kv_sequences"] == held


def test_trtllm_takes_its_fraction_of_the_free_memory():
    """TensorRT-LLM's PyTorch backend (_torch/pyexecutor/_util.py, KvCacheCreator._cal_max_tokens) gives the KV
    cache free_gpu_memory_fraction (0.9 by default) of what its profiling forward leaves: (total - peak) x 0.9,
    the peak its weights, activations and non-torch memory; vLLM takes 0.9 of the card, less the same."""
    kw = dict(gpu="h100-sxm", tp=2, dtype="fp8", seq=1000, gen=1000)
    t = serving.capacity("llama3.3-70b", engine="trtllm", **kw)
    v = serving.capacity("llama3.3-70b", engine="vllm", **kw)
    left = t["memory"] - t["weights"] - t["activation_peak"] - t["non_torch"]
    assert t["kv_cache_bytes"] == floor(Fraction(9, 10) * left)
    assert v["kv_cache_bytes"] == floor(Fraction(9, 10) * v["memory"]) - v["weights"] - v["activation_peak"] - v[
        "non_torch"]
    # 79.18 GiB less 32.86 GiB of fp8 weights a rank: 0.9 of ~44.6 GiB left, ~3.5 GiB more than vLLM's rule
    assert 3 * 2 ** 30 < t["kv_cache_bytes"] - (Fraction(9, 10) * t["memory"] - t["weights"] - t["activation_peak"]
                                                 - t["non_torch"]) < 4 * 2 ** 30


def _serve_rows(out: str) -> dict:
    """count --serve's memory rows, label -> GiB (MiB read as GiB / 1024)."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("serving ("))
    rows = {}
    for line in lines[at + 2:]:
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0].startswith("GPU KV"):
            break
        if len(cells) > 1 and cells[1].endswith("iB"):
            value, unit = cells[1].split()
            rows[cells[0]] = float(value) / (1024 if unit == "MiB" else 1)
    return rows


@pytest.mark.parametrize("engine,fraction,rule", [
    # vllm/v1/worker/gpu_worker.py (v0.10.0): total x gpu_memory_utilization - weights - peak activation - non-torch
    ("vllm", "x 0.9", lambda m, w, a, n: 0.9 * m - w - a - n),
    # TensorRT-LLM 1.0, _torch/pyexecutor/_util.py KvCacheCreator._cal_max_tokens: (total - peak) x 0.9
    ("trtllm", "x 0.9", lambda m, w, a, n: 0.9 * (m - w - a - n)),
    # SGLang 0.5.2 model_runner.py profile_max_num_token: available_after_weights - free_at_start x (1 - f), f 0.874
    # on one H100 (server_args.py: reserved 9.5 + 1/2 GiB of 81,079 MiB -> round(71,319 / 81,079, 3))
    ("sglang", "x 0.874", lambda m, w, a, n: 0.874 * (m - n) - w),
    # lmdeploy v0.6.0 BlockManager::GetBlockCount: free after the weights x cache_max_entry_count 0.8
    ("lmdeploy", "x 0.8", lambda m, w, a, n: 0.8 * (m - w - n)),
    # TGI v3.3.6 flash_causal_lm.py warmup: free - (1 - 1.0 x 0.90) x total, free after weights and the warm-up
    # (models/globals.py: TGI_WIGGLE_ROOM 0.90 at v3.3.6)
    ("tgi", "x 1 x 0.9", lambda m, w, a, n: 0.90 * m - w - a - n),
])
def test_count_prints_each_engines_memory_rule(cli, engine, fraction, rule):
    """count --serve --engine E prints its memory rows in the order its rule takes them (the parts inside the
    fraction, the fraction, the parts after it), and they add up to its KV cache, by hand from each engine's code
    (the rows: GPU memory, weights, activation peak, non-torch memory; efficiency.json's kv_memory)."""
    rows = _serve_rows(cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", engine]).out)
    card = 85_017_493_504 / 2 ** 30  # the H100 SXM's memory as the driver reports it (gpus.json's usable)
    assert rows["GPU memory"] == pytest.approx(card, abs=0.01)
    assert fraction in rows
    w = rows["- weights"]
    a = rows.get("- activation peak", rows.get("activation peak"))
    n = rows["- non-torch memory"]
    assert rows["= KV cache"] == pytest.approx(rule(card, w, a, n), abs=0.03)


def test_count_labels_the_rule_and_the_parts_it_leaves_out(cli):
    """vLLM's title and order stay as they were; SGLang's activation peak is shown but not subtracted (its
    activations live in the 1 - mem_fraction_static it keeps back); a context-sized cache takes no fraction."""
    base = ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve"]
    vllm = cli(base).out.splitlines()
    assert any(line.startswith("serving (vLLM paged KV cache)") for line in vllm)
    assert any(line.startswith("x 0.9 ") and "71.26 GiB" in line and "gpu_memory_utilization" in line
               for line in vllm)
    sglang = cli(base + ["--engine", "sglang"]).out
    assert "serving (sglang's KV cache)" in sglang and "mem_fraction_static" in sglang
    assert "activation peak" in sglang and "- activation peak" not in sglang
    cpp = cli(base + ["--engine", "llama.cpp", "--seq", "4096", "--batch", "2"]).out
    assert re.search(r"GPU KV cache size +8,192 tokens +2 x 4,096 tokens", cpp)


@pytest.mark.parametrize("model,params,gpu,tp,expected", [
    # tensorrt_llm/bench/build/tuning.py (calc_engine_setting, finetune_setting), fp8 weights and KV (1 byte each):
    # Llama 3.3 70B, TP2 on H100s: (2 x 85,017,493,504 - 70,553,706,496) x 0.95 / (2 x 80 x 8 x 128 x 2,000)
    # = 288.4 requests -> batch 128 x ceil(288.4 / 128) = 384; tokens 2 x 288.4 = 577 -> max(2048, 768) = 2048
    ("llama3.3-70b", 70_553_706_496, "h100-sxm", 2, (288, 384, 2048)),
    # Llama 3.1 8B on an H100: (85,017,493,504 - 8,030,261,248) x 0.95 / (2 x 32 x 8 x 128 x 2,000) = 557.99
    # -> 128 x ceil(4.36) = 640; tokens 1,116 -> 2048
    ("llama3.1-8b", 8_030_261_248, "h100-sxm", 1, (557, 640, 2048)),
    # on an H200 (150,109,880,320 bytes): 1,029.8 -> 256 x ceil(4.02) = 1280; tokens 2,059.6 -> 256 x 9 = 2304
    ("llama3.1-8b", 8_030_261_248, "h200", 1, (1029, 1280, 2304)),
])
def test_trtllm_bench_settings_by_hand(model, params, gpu, tp, expected):
    """trtllm-bench's max_batch_size and max_num_tokens for a 1000/1000 dataset, worked by hand from its source."""
    r = batching.trtllm_bench_settings(model, gpu, tp=tp, seq=1000, gen=1000)
    assert (r["requests"], r["max_batch_size"], r["max_num_tokens"]) == expected
    # the count it reads from the config is the published one the hand arithmetic uses (Meta's model cards)
    assert symllm.params(model)["total"] == params


def test_under_load_takes_a_given_max_num_seqs():
    """A given max_num_seqs (trtllm-bench's max_batch_size, say) caps the running sequences in place of the
    engine's default."""
    from symllm.costs.traffic import under_load
    r = under_load("llama3.2-1b", gpu="h200", seq=64, gen=64, engine="trtllm", concurrency=10 ** 6, max_num_seqs=300)
    assert r["running"] == 300


def test_conv_state_layout_is_the_engines_stated_field(monkeypatch):
    """The state layout a hybrid model's sequences get is the engine's ``conv_state`` in efficiency.json (each
    stated with its source), not read off the engine's name: qwen3-next-80b-a3b's 36 Gated DeltaNet layers hold
    36·(e·32·128·128 + 2·c·8192) bytes a sequence, with c = 4 - 1 = 3 columns of the convolution's input and the
    recurrent state in the model's bf16 (e = 2, vLLM's MambaStateDtypeCalculator) where the entry says 'vllm'
    (sglang made to say so here), and c = 4, e = 4 (transformers' fp32) where it says nothing (vllm made silent
    here), hand arithmetic; a layout symllm does not know is refused in one line naming it."""
    from symllm.costs import figures
    table = figures.data()["engines"]
    stated = {name: entry for name, entry in table.items() if name != "about" and "conv_state" in entry}
    assert stated and all(entry.get("conv_state_source") for entry in stated.values())

    def state(engine):
        return serving.capacity("qwen3-next-80b-a3b", gpu="h200", seq=32768, kv_cache_bytes=100 * GiB,
                                engine=engine)["state_bytes_per_sequence"]
    monkeypatch.setitem(table["sglang"], "conv_state", "vllm")
    assert state("sglang") == 36 * (2 * 32 * 128 * 128 + 2 * 3 * 8192)
    monkeypatch.delitem(table["vllm"], "conv_state")
    assert state("vllm") == 36 * (4 * 32 * 128 * 128 + 2 * 4 * 8192)
    monkeypatch.setitem(table["vllm"], "conv_state", "mamba_ssm")
    with pytest.raises(SymllmError, match="^conv_state: unknown 'mamba_ssm'"):
        state("vllm")


@pytest.mark.parametrize("seq, v033_tokens", [(131072, 1_254_064), (4100, 1_250_404)])
def test_kv_cache_size_is_the_older_vllm_log_not_033s(seq, v033_tokens):
    """What count --serve prints as "GPU KV cache size" is blocks x block_size, as vLLM logged it up to 0.20.0
    (one group: num_blocks // len(groups) · block_size); vLLM 0.33.0 logs int(concurrency · max_model_len) with
    concurrency num_blocks / ⌈max_model_len / block_size⌉ (kv_cache_utils.py, get_kv_cache_capacity and
    get_max_concurrency_for_kv_cache_config, wheel commit 4ba787ec9). docs/serving.md's example, by hand: the
    README's Llama 3.1 70B (78,379 blocks of 16: a dense model's 2 NCCL communicators at tp 4) at 131,072 tokens
    agree, at 4,100 0.33.0 would log int(78,379 / 257 · 4,100) = 1,250,404 where symllm prints 1,254,064."""
    r = serving.capacity("llama3.1-70b", gpu="h100-sxm", tp=4, seq=seq, weight_format="fp8-channel", kv_format="fp8")
    assert r["blocks"] == 78_379 and r["kv_tokens"] == 78_379 * 16 == 1_254_064
    # 1,101 blocks more than the 77,278 of vLLM 0.9.2's three communicators: one 688 MiB communicator fewer, over
    # a block's 16 tokens x 40,960 bytes (80 layers x K and V x 2 KV heads a rank x 128 x 1 byte of fp8)
    assert 78_379 - 77_278 in (688 * 2**20 // (16 * 80 * 2 * 2 * 128), 688 * 2**20 // (16 * 80 * 2 * 2 * 128) + 1)
    assert r["max_concurrency"] == Fraction(1_254_064, seq)
    assert int(Fraction(78_379, -(-seq // 16)) * seq) == v033_tokens


def test_the_fit_verdict_points_at_the_engine_s_own_answer(cli):
    """With --serve, count's one-GPU verdict ("fits up to batch N": whole prompts at once, no engine overhead) names
    the engine's own answer beside it, the serving section's figure (its JSON's max concurrency, whole sequences, or
    the sequences a context-sized cache holds), so the two are not read as one; without --serve it says nothing of
    an engine."""
    for engine, extra in (("sglang", []), ("llama.cpp", ["--seq", "1000", "--gen", "100"])):
        args = ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", engine] + extra
        text = " ".join(cli(args).out.split())
        served = json.loads(cli(args + ["--json"]).out)["serving"]
        held = served.get("most_sequences", int(served["max_concurrency"]))
        assert held > 0 and f"with no engine overhead; {engine}'s KV cache holds {held:,} (serving, below)" in text
    assert "with no engine overhead" not in " ".join(cli(["count", "llama3.1-8b", "--gpu", "h100-sxm"]).out.split())
