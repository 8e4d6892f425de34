"""Each serving engine's KV-memory rule (symllm.costs.engine_memory, efficiency.json engines.*.kv_memory), worked
by hand from the engine's own code, and the doors that print the capacity agreeing on it.

The figures every case shares: Llama 3.1 8B in bf16 holds 8,030,261,248 parameters (Meta's model card and
transformers' LlamaForCausalLM on the meta device), 16,060,522,496 bytes of weights, and caches 32 layers x 2 x 8
KV heads x 128 x 2 bytes = 131,072 bytes a token; an H100 SXM 80GB reports 85,017,493,504 bytes to torch (gpus.json's
usable, measured on a lent card), an RTX 3090 25,318,832,209 (vLLM's log in issue 40: 23.58 GiB)."""
from __future__ import annotations

import json
import re
from fractions import Fraction
from math import ceil, floor

import pytest

from symllm.costs import accelerators, engine_memory, serving
from symllm.costs.traffic import under_load
from symllm.errors import SymllmError

H100 = 85_017_493_504
WEIGHTS = 16_060_522_496
PER_TOKEN = 131_072
GIB = 2 ** 30


def _cap(engine: str, **kw) -> dict:
    return serving.capacity("llama3.1-8b", gpu=kw.pop("gpu", "h100-sxm"), seq=kw.pop("seq", 4096), engine=engine,
                            **kw)


def test_sglang_pool_is_its_static_fraction_less_the_weights():
    """SGLang 0.5.2, python/sglang/srt/model_executor/model_runner.py, ModelRunner.profile_max_num_token:
    rest_memory = available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static), total_gpu_memory the free
    memory once the CUDA context is up (before the weights), available_gpu_memory the free memory after them;
    max_num_token = rest_memory // cell_size (page_size 1). At its default for one H100 (0.874, below) and the
    engine's 0.35 GiB of non-torch memory (whole bytes, rounded up): ⌊0.874 x (85,017,493,504 - ⌈0.35 GiB⌉)⌋ -
    16,060,522,496 bytes."""
    r = _cap("sglang")
    free_at_start = H100 - ceil(Fraction(35, 100) * GIB)
    kv = floor(Fraction(874, 1000) * free_at_start) - WEIGHTS
    assert r["kv_cache_bytes"] == kv
    assert r["kv_tokens"] == floor(kv / PER_TOKEN) == 441_866
    assert (r["block_size"], r["fraction_name"], r["fraction_of"], r["fraction_less"]) == (
        1, "mem_fraction_static", ["non_torch"], ["weights"])


@pytest.mark.parametrize("gpu,tp,expected", [
    # SGLang 0.5.2 python/sglang/srt/server_args.py, ServerArgs.__post_init__: round((gpu_mem - reserved) /
    # gpu_mem, 3), gpu_mem in MiB; the H100's 85,017,493,504 bytes = 81,079.0 MiB, under 90 GiB:
    ("h100-sxm", 1, "0.874"),   # reserved (9.5 + 1/2) x 1024 = 10,240 MiB: 70,839.0 / 81,079.0 = 0.8737
    ("h100-sxm", 4, "0.855"),   # (9.5 + 4/2) x 1024 = 11,776: 69,303.0 / 81,079.0 = 0.8548
    ("h200", 1, "0.911"),       # 150,109,782,016 bytes = 143,155.0 MiB, under 160 GiB: (12 + 1/2) x 1024 = 12,800
    ("rtx3090", 1, "0.877"),    # 24,145.6 MiB, under 35 GiB: (2.8 + 1/10) x 1024 = 2,969.6: 21,176.0 / 24,145.6
    ("mi300x", 1, "0.833"),     # 196,608 MiB, 160 GiB or more: 32 x 1024 = 32,768: 163,840 / 196,608 = 0.8333
])
def test_sglang_default_fraction_by_card_and_ranks(gpu, tp, expected):
    assert engine_memory.default_fraction(engine_memory.rule("sglang"), accelerators.gpu(gpu), tp) == Fraction(expected)


def test_lmdeploy_takes_its_share_of_what_the_weights_leave():
    """lmdeploy v0.6.0, src/turbomind/models/llama/BlockManager.cc, GetBlockCount: (free * ratio) / block_size,
    free cudaMemGetInfo's after the weights (SequenceManager is built before LlamaBatch::AllocateBuffer), ratio
    cache_max_entry_count 0.8 (lmdeploy/messages.py, TurbomindEngineConfig), a block 64 tokens of every layer's K
    and V (block::Layout::block_size: 64 x 131,072 bytes, 8 MiB, as lmdeploy logs '[BlockManager] block_size = 8.000
    MB' for a 32-layer model with 8 KV heads of 128)."""
    r = _cap("lmdeploy")
    kv = floor(Fraction(8, 10) * (H100 - WEIGHTS - Fraction(1, 2) * GIB))  # the engine's non-torch memory: 0.5 GiB
    assert r["kv_cache_bytes"] == kv
    assert r["blocks"] == floor(kv / (64 * PER_TOKEN)) and r["kv_tokens"] == r["blocks"] * 64 == 417_600


def test_tgi_sizes_its_cache_after_the_warm_up_with_its_wiggle_room():
    """text-generation-inference v3.3.6 (tag v3.3.6), server/text_generation_server/models/flash_causal_lm.py,
    warmup: get_free_memory(device, MEMORY_FRACTION * TGI_WIGGLE_ROOM) after the warm-up prefill (its activations
    still cached), utils/import_utils.py get_cuda_free_memory: free - (1 - fraction) * total; MEMORY_FRACTION 1.0,
    TGI_WIGGLE_ROOM 0.90 (models/globals.py line 32 at v3.3.6; 0.95 at v3.0.0): 0.90 x total - weights -
    activation peak - non-torch."""
    r = _cap("tgi")
    assert r["kv_cache_bytes"] == floor(Fraction(90, 100) * H100) - WEIGHTS - r["activation_peak"] - GIB // 2
    assert r["block_size"] == 1 and r["kv_tokens"] == floor(r["kv_cache_bytes"] / PER_TOKEN)
    half = _cap("tgi", gpu_memory_utilization=0.5)  # --cuda-memory-fraction 0.5: 0.45 of the card
    assert half["kv_cache_bytes"] == floor(Fraction(45, 100) * H100) - WEIGHTS - half["activation_peak"] - GIB // 2


def test_tgi_warms_up_on_its_launcher_s_default_prefill_tokens():
    """text-generation-inference v3.3.6 launcher/src/main.rs (tag v3.3.6, efb94e0): max_batch_prefill_tokens where
    not given is compute_optimal = f16_flop x shards // Config::flop, f16_flop (lines 1750-1781, by the dashed,
    lower-cased nvidia-smi name, lines 1708-1729) 900 TFLOPS for an 'nvidia-h100-80gb-hbm3' or 'nvidia-h100-nvl',
    989 for an 'nvidia-h200', 312 for an 'nvidia-a100-sxm4-80gb' or 'nvidia-a100-sxm4-40gb' (v3.0.0's table had
    neither the H100 NVL, the H200 nor the A100 40GB), Config::flop of Llama 3.1 8B (config.json: 32 layers, 32
    heads, 8 KV heads of 128, hidden 4096, intermediate 14336) = 32 x (3 x 2·32·128·4096 + 2 x 2·8·128·4096
    + 2·3·4096·14336) = 15,032,385,536: 900e12 // that = 59,870, 312e12 // that = 20,755; below
    max_position_embeddings (131,072) and
    its vram_maximum (0.95 x 85 GB less 2 x 7.2 G parameters, over 131,072 + 129,024 bytes a token: ~256,800;
    on a 40 GB A100 ~95,000): 989e12 // that = 65,791 on an H200. An H100 PCIe ('nvidia-h100-pcie') is not in its
    table: 4096. The warm-up computes one logit a request (REQUEST_LOGPROBS off), so its activation is a forward of
    those tokens with the last position's logits only."""
    flop = 32 * (3 * 2 * 32 * 128 * 4096 + 2 * 2 * 8 * 128 * 4096 + 2 * 3 * 4096 * 14336)
    assert flop == 15_032_385_536
    for gpu, tflops in (("h100-sxm", 900), ("h100-nvl", 900), ("h200", 989), ("a100-80gb", 312),
                        ("a100-40gb", 312)):
        assert _cap("tgi", gpu=gpu)["profile_tokens"] == tflops * 10 ** 12 // flop
    assert 989 * 10 ** 12 // flop == 65_791
    assert _cap("tgi", gpu="h100-pcie")["profile_tokens"] == 4096
    given = _cap("tgi", max_num_batched_tokens=2048)  # --max-batch-prefill-tokens given: that many
    assert given["profile_tokens"] == 2048 and given["activation_peak"] < 2048 * 128_256 * 2  # one logit, not 2048


@pytest.mark.parametrize("model, wrapper, tokens", [("gemma-3-4b", "gemma3", 8000), ("gemma-3-27b", "gemma3", 8000),
                                                    ("llama4-scout-17b-16e", "llama4", 4096),
                                                    ("qwen3.5-27b", "qwen3_5", 4096)])
def test_tgi_warms_up_a_multimodal_config_on_its_model_type_s_default(model, wrapper, tokens):
    """text-generation-inference v3.3.6 launcher/src/main.rs (tag v3.3.6, efb94e0): Config::flop (lines 281-286)
    returns None where config.json has a vision_config ('VLM are much harder to predict'), so compute_optimal is
    None and max_batch_prefill_tokens is default_optimal (lines 2118-2126): 10_000 for model_type qwen2_vl or
    qwen2_5_vl, 8000 for gemma3, 4096 for any other. google/gemma-3-*-pt's config.json is model_type gemma3 (its
    text_config and vision_config inside), meta-llama/Llama-4-Scout-17B-16E's llama4, Qwen/Qwen3.5-27B's qwen3_5;
    none states max_position_embeddings or num_attention_heads at its top level (RawConfig reads only there), so
    neither the position nor the vram_maximum bound applies, on any card."""
    from symllm.arch.catalogue import resolve
    assert resolve(model).wrapper == wrapper
    for gpu in ("h100-sxm", "h200", "a100-40gb", "h100-pcie"):
        assert serving.capacity(model, gpu=gpu, seq=4096, engine="tgi")["profile_tokens"] == tokens


def test_tgi_counts_a_mixture_s_flops_by_its_config_json_keys():
    """TGI v3.3.6's Config::flop (launcher/src/main.rs lines 281-307, efb94e0) has no case for a mixture: it reads
    config.json's intermediate_size times num_experts_per_tok + n_shared_experts (1 and 0 where absent), whatever
    width the family gives its experts. Qwen/Qwen3-30B-A3B's config.json: hidden 2048, 48 layers, 32 heads and 4 KV
    heads of head_dim 128, intermediate_size 6144 (its experts' width is moe_intermediate_size, 768), 8 experts a
    token, no n_shared_experts: a layer 6·32·128·2048 + 4·4·128·2048 + 6·2048·6144·8 = 50,331,648 + 4,194,304 +
    603,979,776 = 658,505,728, 31,608,274,944 for 48. An H200 (989 TFLOPS): 989e12 // that = 31,289, under its
    40,960 positions and its vram_maximum (num_local_experts absent: 1 expert; ~150 GB x 0.95 less 5.7 GB, over
    4·4·128·48 + 6·(6144 + 3072) = 153,600 bytes a token: ~890,000). Counted with the experts' 768 instead, a
    token's FLOPs are a seventh and the default the 40,960 positions. Mixtral 8x7B's intermediate_size is its
    experts' (14336, 2 a token): 32 x (6·32·128·4096 + 4·8·128·4096 + 6·4096·14336·2) = 26,306,674,688 FLOPs; on
    two H100s 2 x 900e12 // that = 68,423, capped at its 32,768 positions."""
    layer = 6 * 32 * 128 * 2048 + 4 * 4 * 128 * 2048 + 6 * 2048 * 6144 * 8
    assert layer == 658_505_728 and 989 * 10 ** 12 // (48 * layer) == 31_289
    tgi = engine_memory.rule("tgi")
    assert engine_memory.warmup_tokens(tgi, "qwen3-30b-a3b", accelerators.gpu("h200")) == 31_289
    mixtral = 32 * (6 * 32 * 128 * 4096 + 4 * 8 * 128 * 4096 + 6 * 4096 * 14336 * 2)
    assert mixtral == 26_306_674_688 and 2 * 900 * 10 ** 12 // mixtral == 68_423
    assert engine_memory.warmup_tokens(tgi, "mixtral-8x7b", accelerators.gpu("h100-sxm"), tp=2) == 32_768


def test_tgi_has_no_head_width_where_the_heads_do_not_divide_the_hidden_size():
    """TGI v3.3.6 launcher/src/main.rs (tag v3.3.6, efb94e0), From<RawConfig> for Config: head_dim = config.json's
    head_dim, else hidden_size / num_attention_heads only 'if hidden_size % num_attention_heads == 0', else None;
    Config::get_head_dim is then None (no text_config), so Config::flop and Config::model_vram are None: no
    compute_optimal (default_optimal, 4096) and no vram_maximum, only max_position_embeddings (131,072 here). A
    qwen3 config.json with Llama 3.1 8B's sizes but hidden_size 4100 and no head_dim (32 heads: 4100 / 32 = 128.125;
    transformers' Qwen3Config defaults head_dim to 128, 4100 // 32 is 128 too) gets 4096 on an H100; stating
    head_dim 128 gives compute_optimal: Config::flop = 32 x (3 x 2·32·128·4100 + 2 x 2·8·128·4100 +
    2·3·4100·14336) = 15,047,065,600, 900e12 // that = 59,812 (what symllm gave both before: it rounded down)."""
    h100, tgi = accelerators.gpu("h100-sxm"), engine_memory.rule("tgi")
    odd = {"model_type": "qwen3", "hidden_size": 4100, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
           "max_position_embeddings": 131072}
    assert engine_memory.warmup_tokens(tgi, odd, h100) == 4096
    flop = 32 * (3 * 2 * 32 * 128 * 4100 + 2 * 2 * 8 * 128 * 4100 + 2 * 3 * 4100 * 14336)
    assert flop == 15_047_065_600 and 900 * 10 ** 12 // flop == 59_812
    assert engine_memory.warmup_tokens(tgi, {**odd, "head_dim": 128}, h100) == 59_812


def test_a_gemma3_config_json_is_read_with_its_wrapper_and_its_text_config_without():
    """The same Gemma 3 language model, as google/gemma-3-4b-pt's config.json holds it (model_type gemma3, a
    text_config and a vision_config) and as its text_config alone (model_type gemma3_text, a text-only config):
    TGI v3.3.6's launcher gives the first 8000 (Config::flop is None beside a vision_config) and the second
    compute_optimal, f16_flop // Config::flop, above 8000 on an H100 (900e12 over the 4B's few GFLOPs a token)."""
    from symllm.arch.catalogue import preset_info, resolve
    text = {**preset_info("gemma-3-4b")["config"], "vocab_size": 262_208}
    wrapped = {"model_type": "gemma3", "text_config": text, "vision_config": {"model_type": "siglip_vision_model"}}
    h100, tgi = accelerators.gpu("h100-sxm"), engine_memory.rule("tgi")
    assert resolve(wrapped).wrapper == "gemma3" and resolve(text).wrapper is None
    assert engine_memory.warmup_tokens(tgi, wrapped, h100) == 8000
    assert engine_memory.warmup_tokens(tgi, text, h100) > 8000


def test_vllm_and_trtllm_rules_are_unchanged():
    """vLLM (v1/worker/gpu_worker.py, determine_available_memory): 0.9 x total less the rest; TensorRT-LLM 1.0
    (_torch/pyexecutor/_util.py, KvCacheCreator._cal_max_tokens): 0.9 of what the rest leaves. Whole bytes: vLLM
    returns int(0.9 x total - the rest), the rest whole bytes (0.35 GiB of non-torch memory rounded up)."""
    v, t = _cap("vllm"), _cap("trtllm")
    assert v["non_torch"] == ceil(Fraction(35, 100) * GIB) == 375_809_639  # 0.35 x 2^30 = 375,809,638.4
    assert v["kv_cache_bytes"] == floor(Fraction(9, 10) * H100) - WEIGHTS - v["activation_peak"] - v["non_torch"]
    assert t["kv_cache_bytes"] == floor(Fraction(9, 10) * (H100 - WEIGHTS - t["activation_peak"] - t["non_torch"]))
    assert all(type(r[k]) is int for r in (v, t) for k in ("usable", "kv_cache_bytes", "non_torch"))
    assert (v["block_size"], v["kv_rule"]) == (16, "vllm") and _cap("vllm-v0")["kv_rule"] == "vllm"
    # TensorRT-LLM's KvCacheConfig.tokens_per_block (llmapi/llm_args.py): 32 tokens a block
    assert t["block_size"] == 32 and t["kv_tokens"] == floor(t["kv_cache_bytes"] / (32 * PER_TOKEN)) * 32


@pytest.mark.parametrize("engine,seq,batch,tokens", [
    # gpt-fast c5d3454 model.py Transformer.setup_caches: max_seq_length = find_multiple(prompt + new, 8), a static
    # KVCache(max_batch_size, max_seq_length, ...) in every layer
    ("gpt-fast", 1001, 1, 1008),
    ("gpt-fast", 1001, 4, 4032),
    # llama.cpp 4227c9be llama_model::create_memory: kv_size = n_ctx cells, whatever the free memory, each
    # sequence's padded to a multiple of 32 without FlashAttention (get_padding): 1001 -> 1024, x 2
    ("llama.cpp", 1001, 2, 2048),
    ("hf", 4096, 1, 4096),
])
def test_a_cache_sized_by_the_context_holds_batch_sequences_of_it(engine, seq, batch, tokens):
    r = _cap(engine, seq=seq, batch=batch)
    assert (r["kv_sized_by"], r["kv_tokens"], r["max_concurrency"]) == ("context", tokens, batch)
    assert r["kv_cache_bytes"] == tokens * PER_TOKEN and "gpu_memory_utilization" not in r
    assert r["fits"] == (r["weights"] + r["activation_peak"] + r["non_torch"] + r["kv_cache_bytes"] <= H100)
    assert not _cap(engine, gpu="rtx3090", seq=131072, batch=4)["fits"]  # 64 GiB of cache on a 24 GB card


@pytest.mark.parametrize("fmt,per_token", [
    # Llama 3.1 8B (head_dim 128): 32 layers x 2 x 8 heads x (128 data bytes + 2 x 2 scale/zero bytes) a token
    ("int8", 32 * 2 * 8 * (128 + 4)),
    ("int4", 32 * 2 * 8 * (64 + 4)),
])
def test_lmdeploy_quantized_kv_holds_a_scale_and_a_zero_a_head_and_token(fmt, per_token):
    """lmdeploy TurboMind v0.6.0 (and v0.10.0), src/turbomind/kernels/attention/block.h, block::Layout: a token of
    a head holds token_data_size = q_bits x head_dim / 8 bytes of K (and of V) and token_param_size = t_bits x 2 / 8
    bytes of their scale and zero, t_bits the activations' 16 (LlamaBatch: elem_bits = quant_policy, 8 or 4); the
    block of 64 tokens is layer_size x layers."""
    r = _cap("lmdeploy", kv_format=fmt)
    assert r["kv_bytes_per_token"] == per_token
    assert r["blocks"] == floor(r["kv_cache_bytes"] / (64 * per_token)) and r["kv_tokens"] == 64 * r["blocks"]


def test_lmdeploy_int4_block_against_its_printed_size():
    """lmdeploy issue #3949 (InternLM/lmdeploy, 2025-09-09; gpt-oss with --quant-policy 4 on one rank) logs
    '[BlockManager] block_size = 0.844 MB' (BlockManager.cc at v0.10.0: block_size_ / (1 << 20), '%.3f'). By hand
    for gpt-oss-20b (24 layers, 8 KV heads of 64): 64 tokens x 24 x 2 x 8 x (32 + 4) bytes = 884,736 bytes = 0.84375
    MiB; without the scales it would print 0.750."""
    r = serving.capacity("gpt-oss-20b", gpu="h100-sxm", seq=4096, engine="lmdeploy", kv_format="int4")
    assert f"{r['kv_bytes_per_token'] * 64 / 2 ** 20:.3f}" == "0.844"


#: OpenLLaMA 7B v2 as llama.cpp's log prints it (n_vocab 32000, n_embd 4096, n_layer 32, n_head 32, n_head_kv 32,
#: n_ff 11008): the model of ggml-org/ci's CUDA runs
OPEN_LLAMA_7B = dict(name="open-llama-7b-v2", dim=4096, n_layers=32, n_heads=32, n_kv_heads=32, vocab_size=32000,
                     hidden_dim=11008)


def test_llama_cpp_compute_buffer_is_one_micro_batch():
    """llama.cpp (4227c9be, src/llama-context.cpp 'reserve worst-case graph') sizes its compute buffer for
    n_tokens = min(n_ctx, n_ubatch) tokens, every one an output, n_ubatch 512 by default (common/common.h), whatever
    n_batch (2048) or symllm's profile budget: a 4096-token context reserves a forward of 512 tokens, a 300-token
    one of 300. Its logits are F32 (ggml_mul_mat's result): Llama 3.1 8B's 512 x 128,256 x 4 bytes = 250.5 MiB
    at least; the scores of 512 queries against 4096 cells over 32 heads in F32, 256 MiB, plus the mask (4096 x
    512 x 4, 8 MiB) and the layer's input and queries (2 x 512 x 4096 x 4, 16 MiB): 280 MiB."""
    r = _cap("llama.cpp", gpu="rtx4090")
    assert (r["profile_tokens"], r["max_num_batched_tokens"]) == (512, 2048)  # n_ubatch; n_batch its step budget
    assert r["activation_peak"] == 4 * (4096 * 512 * 32 + 4096 * 512 + 512 * 8192) == 280 * 2 ** 20
    short = _cap("llama.cpp", gpu="rtx4090", seq=512)  # the scores of 512 cells (51 MiB): the forward binds
    assert 512 * 128_256 * 4 < short["activation_peak"] < r["activation_peak"]
    assert _cap("llama.cpp", gpu="rtx4090", seq=300)["profile_tokens"] == 300
    assert _cap("hf", gpu="rtx4090")["profile_tokens"] == 8192  # transformers: the profile's budget, as before


def test_gpt_fast_holds_its_prefill_of_the_whole_prompt():
    """gpt-fast c5d3454: generate.py's prefill runs model(prompt.view(1, -1), input_pos), one forward of the
    whole prompt, and Transformer.forward returns self.output(x) at every position: Llama 3.1 8B's 1000 x 128,256
    bf16 logits (244.6 MiB) at least, and the same working set whatever the output length or the profile budget."""
    r = _cap("gpt-fast", seq=1000, gen=500)
    assert r["profile_tokens"] == 1000 and r["activation_peak"] >= 1000 * 128_256 * 2
    assert _cap("gpt-fast", seq=1000, gen=3000, max_num_batched_tokens=2048)["activation_peak"] == r["activation_peak"]
    assert _cap("gpt-fast", seq=2000)["activation_peak"] > r["activation_peak"]


@pytest.mark.parametrize("flash_attn,cells", [
    # llama.cpp 4227c9be llama_kv_cache_unified::get_padding: 'cparams.flash_attn ? 256u : 32u'; create_memory pads
    # each stream's n_ctx to it: 1025 cells -> 33 x 32 = 1056 without, 5 x 256 = 1280 with -fa
    ("off", 1056),
    ("on", 1280),
])
def test_llama_cpp_pads_each_sequence_cache_by_flash_attn(flash_attn, cells):
    r = _cap("llama.cpp", seq=1025, batch=3, flash_attn=flash_attn)
    assert (r["kv_tokens"], r["kv_cache_bytes"]) == (3 * cells, 3 * cells * PER_TOKEN)


def test_llama_cpp_compute_buffer_by_ubatch_and_flash_attn_by_hand():
    """llama.cpp 4227c9be reserves its compute buffer for n_tokens = min(n_ctx, n_ubatch) tokens, n_ubatch =
    min(n_batch, -ub) (llama_context's constructor), every one an output. Without -fa (the default) its peak is the
    scores of the micro-batch against the whole cache (build_attn_mha's kq, F32); with -fa (ggml_flash_attn_ext) none
    are held and the forward binds. By hand for Llama 3.1 8B (32 heads, d = q = 4096, vocab 128,256) at a 4096-token
    context:

    * -ub 256, no -fa: scores 4096 x 256 x 32 x 4 = 128 MiB, mask 4096 x 256 x 4 = 4 MiB, input and queries 2 x 256 x
      4096 x 4 = 8 MiB: 140 MiB;
    * -ub 1024, no -fa: 512 + 16 + 32 = 560 MiB;
    * -fa: at least the F32 logits, 256 x 128,256 x 4 = 125.25 MiB (1024 rows: 501 MiB), below the scores'
      moment; and -ub past n_batch (--max-num-batched-tokens 768) takes n_batch."""
    mib = 2 ** 20
    small, large = _cap("llama.cpp", ubatch=256), _cap("llama.cpp", ubatch=1024)
    assert (small["profile_tokens"], small["activation_peak"]) == (256, 140 * mib)
    assert (large["profile_tokens"], large["activation_peak"]) == (1024, 560 * mib)
    fast = _cap("llama.cpp", ubatch=256, flash_attn="on")
    assert 256 * 128_256 * 4 <= fast["activation_peak"] < small["activation_peak"]
    assert 1024 * 128_256 * 4 <= _cap("llama.cpp", ubatch=1024, flash_attn="on")["activation_peak"] < 560 * mib
    assert _cap("llama.cpp", ubatch=1024, max_num_batched_tokens=768)["profile_tokens"] == 768


#: GLM-Z1-32B-0414 as llama.cpp's log prints it (glm4: n_embd 6144, n_layer 61, n_head 48, n_head_kv 2, head 128,
#: n_ff 23040, n_vocab 151552): LLaMA's shapes (its post-norms, fused gate-up and q/k/v biases not held)
GLM_Z1_32B = dict(name="glm-z1-32b-0414", dim=6144, n_layers=61, n_heads=48, n_kv_heads=2, vocab_size=151552,
                  hidden_dim=23040)


def test_llama_cpp_flash_attn_compute_buffer_against_its_printed_size():
    """Checked, not fitted. ikawrakow/ik_llama.cpp PR #344 (ubergarm's comment of 2025-04-26, read 2026-11-29) logs
    mainline llama.cpp build 5192 (e59a5f1e) running llama-sweep-bench -fa -ctk f16 -ctv f16 -c 32768 -ngl 99 on
    bartowski's THUDM_GLM-Z1-32B-0414-IQ4_XS.gguf, an RTX 3090 Ti: n_ctx 32768, n_batch 2048, n_ubatch 512,
    flash_attn 1, 'CUDA0 KV buffer size = 1952.00 MiB', 'CUDA0 compute buffer size = 353.00 MiB'. symllm's forward
    of 512 tokens holds the F32 logits (512 x 151,552 x 4 = 296 MiB) and two hidden states: 320 MiB (-9%; the F16
    mask, 32768 x 512 x 2 = 32 MiB, is not counted); without -fa it would hold the scores, 3 GiB."""
    from symllm.arch.config import ModelConfig
    glm = ModelConfig(**GLM_Z1_32B)
    r = serving.capacity(glm, gpu="rtx3090", seq=32768, dtype="fp16", engine="llama.cpp", flash_attn="on")
    assert r["kv_cache_bytes"] == 1952 * 2 ** 20  # 61 layers x 2 x 256 x 2 bytes x 32768 cells
    assert abs(r["activation_peak"] / (353 * 2 ** 20) - 1) < Fraction(15, 100)
    off = serving.capacity(glm, gpu="rtx3090", seq=32768, dtype="fp16", engine="llama.cpp")
    assert off["activation_peak"] > 8 * r["activation_peak"]


def test_llama_cpp_runs_a_quantized_cache_with_flash_attn():
    """llama.cpp 4227c9be, llama_init_from_model (src/llama-context.cpp): 'V cache quantization requires flash_attn'
    and no context without it: --kv-format q8_0 (K and V, 34 bytes a 32: Llama 3.1 8B's 32 x 2 x 1024 x 34 / 32 =
    69,632 bytes a token) takes -fa, its cells padded to 256 (1025 -> 1280) and no scores held; -fa off is refused."""
    r = _cap("llama.cpp", seq=1025, kv_format="q8_0")
    assert (r["kv_tokens"], r["kv_bytes_per_token"]) == (1280, 69_632)
    assert r["activation_peak"] == _cap("llama.cpp", seq=1025, kv_format="q8_0", flash_attn="on")["activation_peak"]
    with pytest.raises(SymllmError, match=re.escape("flash_attn: got 'off'; llama.cpp's quantized V cache (q8_0) "
                                                    "needs FlashAttention (-fa)")):
        _cap("llama.cpp", kv_format="q8_0", flash_attn="off")


@pytest.mark.parametrize("option,value,line", [
    ("ubatch", 256, "ubatch: got 256; vllm has no micro-batch option (llama.cpp's -ub, n_ubatch)"),
    ("flash_attn", "on", "flash_attn: got 'on'; gpt-fast has no FlashAttention option (llama.cpp's -fa, flash_attn)"),
])
def test_micro_batch_options_apply_to_llama_cpp_only(option, value, line):
    engine = "vllm" if option == "ubatch" else "gpt-fast"
    with pytest.raises(SymllmError, match=re.escape(line)):
        _cap(engine, **{option: value})


@pytest.mark.parametrize("n_ctx,printed_mib", [
    # ggml-org/ci, llama.cpp/46/fd273724f0a4eafb6004537c7c1a62670123fe/ggml-4-x86-cuda-v100/README.md (llama.cpp
    # 46fd273, 2024-02-19; Tesla V100-PCIE-16GB): OpenLLaMA 7B v2 f16, -ngl 999, n_batch 512, no FlashAttention:
    # main -n 256 at n_ctx 512 prints 'CUDA0 compute buffer size = 70.50 MiB' (by hand: the 512 x 32000 F32
    # logits, 62.5 MiB, and the final norm's 512 x 4096 F32, 8 MiB); perplexity -c 2048 -b 512 prints 164.00 MiB
    # (the scores of 512 queries against 2048 cells over 32 heads, 128 MiB, and what lives beside them)
    (512, 70.5),
    (2048, 164.0),
])
def test_llama_cpp_compute_buffer_against_its_printed_size(n_ctx, printed_mib):
    """Checked, not fitted: within 15% of the printed buffer (symllm's forward holds more than the logits' moment
    at 512: +14%; the scores' moment at 2048 counts the scores, the mask, the layer's input and queries: -10%)."""
    from symllm.arch.config import ModelConfig
    r = serving.capacity(ModelConfig(**OPEN_LLAMA_7B), gpu="a100-80gb", seq=n_ctx, dtype="fp16", engine="llama.cpp")
    assert abs(r["activation_peak"] / (printed_mib * 2 ** 20) - 1) < Fraction(15, 100)


@pytest.mark.parametrize("engine,value,line", [
    ("llama.cpp", 0.5, "gpu_memory_utilization: got 0.5; llama.cpp sizes its KV cache by the context"),
    ("lmdeploy", 1, "got 1; lmdeploy's cache_max_entry_count is in (0, 1)"),
    ("sglang", 0, "got 0; sglang's mem_fraction_static is in (0, 1]"),
    ("vllm", 1.5, "got 1.5; vllm's gpu_memory_utilization is in (0, 1]"),
])
def test_a_fraction_the_engine_does_not_take_is_refused(engine, value, line):
    with pytest.raises(SymllmError, match=re.escape(line)):
        _cap(engine, gpu_memory_utilization=value)


def test_an_engine_without_a_rule_is_refused(monkeypatch):
    """Where an engine states no rule the capacity is refused in one line naming it, never vLLM's."""
    from symllm.costs import figures
    monkeypatch.delitem(figures.data()["engines"]["tgi"], "kv_memory")
    with pytest.raises(SymllmError, match=r"engine: tgi states no KV-cache memory rule \(efficiency.json kv_memory\)"):
        _cap("tgi")
    with pytest.raises(SymllmError, match="engine: megatron trains only; serving takes an inference engine"):
        _cap("megatron")


@pytest.mark.parametrize("engine,extra", [("sglang", []), ("lmdeploy", []), ("vllm", []),
                                          ("tgi", ["--gpu-memory-utilization", "0.5"]),
                                          ("llama.cpp", ["--batch", "3"])])
def test_the_doors_agree(cli, engine, extra):
    """count --serve --json, the Python API (serving.capacity) and serving under load (traffic.under_load's
    kv_sequences: the requests the cache holds; for a cache sized by the context, the most sequences an engine started
    for them holds, most_sequences, whatever --batch says: docs/serving.md) print the same capacity for each engine."""
    argv = ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "1000", "--gen", "1000", "--serve", "--json",
            "--engine", engine, *extra]
    doc = json.loads(cli(argv).out)["serving"]
    options = {"gpu_memory_utilization": 0.5} if extra[:1] == ["--gpu-memory-utilization"] else {}
    batch = {"batch": 3} if "--batch" in extra else {}
    r = serving.capacity("llama3.1-8b", gpu="h100-sxm", seq=1000, gen=1000, engine=engine, **options, **batch)
    assert doc["kv_tokens"] == r["kv_tokens"] and doc["kv_rule"] == r["kv_rule"]
    assert doc["kv_cache_bytes"] == pytest.approx(float(r["kv_cache_bytes"]))
    assert doc.get("gpu_memory_utilization") == (None if "gpu_memory_utilization" not in r
                                                 else float(r["gpu_memory_utilization"]))
    load = under_load("llama3.1-8b", gpu="h100-sxm", seq=1000, gen=1000, engine=engine, concurrency=1, **options,
                      **batch)
    assert load["kv_sequences"] == (r["most_sequences"] if r["kv_sized_by"] == "context" else r["kv_tokens"] // 2000)
