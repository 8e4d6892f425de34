"""What an engine can run (issue 40: never a silently wrong number): a workload its engine cannot run is refused in
one line naming the field, the value and the engine (exit 2; SymllmError from Python), never timed as if it could.

- FP8 GEMMs (``--compute-dtype fp8``): ggml, llama.cpp's tensor library, has no FP8 type at all (gguf-py's
  ``GGMLQuantizationType``, the GGUF file types, checked below against the installed gguf package), so its
  matmuls never run at a card's FP8 peak; pytorch-labs/gpt-fast has int8 and int4 weight-only modes only; MLC's
  FP8 kernels were not read. vLLM, SGLang, TensorRT-LLM, lmdeploy, TGI and transformers run FP8 weights and
  activations (efficiency.json ``engines``' ``fp8_gemm_source``).
- KV caches (``--kv-format``, ``--kv-dtype``): each inference engine holds the formats its source lists
  (efficiency.json ``engines``' ``kv_formats_source``): lmdeploy's int8/int4 (a scale and zero a head and token) only
  under lmdeploy, llama.cpp's q8_0/q4_0 only under llama.cpp, TensorRT-LLM's INT8 cache (one scale a layer) as
  ``--kv-dtype int8``; an engine not read (mlc) holds the model's dtype only.
- vLLM 0.33.0's per-token-head caches (``int8_per_token_head``, ``fp8_per_token_head``, ``int4_per_token_head``: one
  fp32 scale a head and token) and NVFP4 (vLLM's and TensorRT-LLM's: an E4M3 scale a 16 values) only where their
  engine lists them.
- llama.cpp splits a model over GPUs by layers by default (``--split-mode layer``): each GPU holds a run of
  whole layers and a token goes through them in turn, which is ``--pp``, not tensor parallelism.
"""
from __future__ import annotations

from fractions import Fraction

import pytest

import symllm
from symllm.costs import figures

WORKLOAD = dict(gpu="h100-sxm")


@pytest.mark.parametrize("engine", ["llama.cpp", "gpt-fast", "vllm-v0.2"])
def test_fp8_under_an_engine_without_fp8_gemms_is_refused(cli, engine):
    line = f"compute_dtype: fp8 under {engine}: it has no FP8 matmul kernels; use bf16 or fp16"
    r = cli(["count", "llama3.2-3b", "--gpu", "h100-sxm", "--engine", engine, "--compute-dtype", "fp8"])
    assert (r.code, r.out, r.err) == (2, "", f"symllm: error: {line}\n")
    with pytest.raises(symllm.SymllmError, match=f"^{line}$".replace(".", r"\.").replace("(", r"\(")):
        symllm.workload("llama3.2-3b", engine=engine, compute_dtype="fp8", **WORKLOAD)


def test_fp8_weights_under_llamacpp_name_dtype(cli):
    r = cli(["count", "llama3.2-3b", "--gpu", "h100-sxm", "--engine", "llama.cpp", "--dtype", "fp8"])
    assert (r.code, r.err) == (2, "symllm: error: dtype: fp8 under llama.cpp: it has no FP8 matmul kernels; "
                                  "use bf16 or fp16\n")


def test_fp8_under_an_engine_not_read_is_refused_as_not_known(cli):
    r = cli(["count", "llama3.2-3b", "--gpu", "h100-sxm", "--engine", "mlc", "--compute-dtype", "fp8"])
    assert (r.code, r.err) == (2, "symllm: error: compute_dtype: fp8 under mlc: FP8 matmuls not known (not read); "
                                  "use bf16 or fp16\n")


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "lmdeploy", "tgi", "hf", "megatron", "torchtitan"])
def test_fp8_runs_where_the_engine_has_fp8_gemms(engine):
    """The FP8 prefill is faster than the bf16 one on an H100 (989 and 1,979 dense TFLOP/s: a compute-bound
    4,096-token prompt of a 3B model), so fp8 is timed, not refused."""
    fp8 = symllm.workload("llama3.2-3b", engine=engine, compute_dtype="fp8", seq=4096, **WORKLOAD)["time"]
    bf16 = symllm.workload("llama3.2-3b", engine=engine, compute_dtype="bf16", seq=4096, **WORKLOAD)["time"]
    assert fp8["prefill_s"] < bf16["prefill_s"]


def test_ggml_has_no_fp8_type():
    """The installed gguf package (gguf-py, llama.cpp's own Python reader) lists ggml's tensor types: none is FP8,
    as efficiency.json's llama.cpp entry says (read there in ggml/include/ggml.h)."""
    gguf = pytest.importorskip("gguf")
    names = [t.name for t in gguf.GGMLQuantizationType]
    assert "Q8_0" in names and "BF16" in names  # the list is the one meant
    assert not [n for n in names if "FP8" in n or "E4M3" in n or "E5M2" in n or n == "F8"]
    assert figures.engine("llama.cpp")["fp8_gemm"] is False


def test_every_inference_engine_states_its_fp8_gemms():
    """Each inference engine's entry says true, false or null (not known), with its source: none is left to a
    default."""
    for name, entry in figures.data()["engines"].items():
        if name != "about" and entry["kind"] == "inference":
            assert entry["fp8_gemm"] in (True, False, None) and entry["fp8_gemm_source"], name


@pytest.mark.parametrize("tp", [2, 4])
def test_llamacpp_tensor_parallel_is_refused_pointing_at_pp(cli, tp):
    line = f"tp: llama.cpp splits by layers, run in turn (--split-mode layer): give --pp {tp}"
    r = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--engine", "llama.cpp", "--tp", tp])
    assert (r.code, r.out, r.err) == (2, "", f"symllm: error: {line}\n")
    with pytest.raises(symllm.SymllmError) as info:
        symllm.workload("llama3.1-8b", engine="llama.cpp", tp=tp, **WORKLOAD)
    assert str(info.value) == line
    assert cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--engine", "llama.cpp", "--pp", tp]).code == 0


def test_llamacpp_pp_runs_its_stages_in_turn():
    """At batch 1 a layer split runs one GPU after the other: two stages of 16 layers each take as long as the
    32 layers on one GPU, plus the hand-off between them, so the decode step does not halve (it would under a
    tensor split of the layers' matrices)."""
    one = symllm.workload("llama3.1-8b", engine="llama.cpp", **WORKLOAD)["time"]
    two = symllm.workload("llama3.1-8b", engine="llama.cpp", pp=2, **WORKLOAD)["time"]
    assert two["decode_token_s"] >= 0.9 * one["decode_token_s"]


def test_tp_under_other_engines_is_not_refused():
    for engine in ("vllm", "sglang", None):
        symllm.workload("llama3.1-8b", engine=engine, tp=2, **WORKLOAD)


KV_REFUSED = [  # (engine, option, value, the line): an engine each, each line checked word for word
    ("vllm", "kv_format", "q8_0", "kv_format: q8_0 under vllm: holds all 8: see docs/formats.md"),
    ("vllm", "kv_format", "int8", "kv_format: int8 under vllm: holds all 8: see docs/formats.md"),
    ("vllm-v0", "kv_format", "nvfp4", "kv_format: nvfp4 under vllm-v0: holds fp32, fp16, bf16, fp8 only"),
    ("sglang", "kv_format", "int8_per_token_head",
     "kv_format: int8_per_token_head under sglang: holds fp32, fp16, bf16, fp8 only"),
    ("trtllm", "kv_format", "fp8_per_token_head",
     "kv_format: fp8_per_token_head under trtllm: holds fp32, fp16, bf16, fp8, nvfp4 only"),
    ("lmdeploy", "kv_format", "nvfp4", "kv_format: nvfp4 under lmdeploy: holds fp16, bf16, int8, int4 only"),
    ("vllm-v0.2", "kv_format", "fp8", "kv_format: fp8 under vllm-v0.2: holds fp32, fp16, bf16 only"),
    ("vllm-v1-0.7", "kv_format", "fp8", "kv_format: fp8 under vllm-v1-0.7: KV formats not read; the model's dtype only"),
    ("sglang", "kv_format", "int8", "kv_format: int8 under sglang: holds fp32, fp16, bf16, fp8 only"),
    ("trtllm", "kv_format", "int8", "kv_format: int8 under trtllm; int8 is --kv-dtype int8"),
    ("lmdeploy", "kv_format", "fp8", "kv_format: fp8 under lmdeploy: holds fp16, bf16, int8, int4 only"),
    ("lmdeploy", "kv_dtype", "int8", "kv_dtype: int8 under lmdeploy: holds fp16, bf16; int8 is --kv-format int8"),
    ("llama.cpp", "kv_format", "fp8", "kv_format: fp8 under llama.cpp: holds fp32, fp16, bf16, q8_0, q4_0 only"),
    ("llama.cpp", "kv_format", "int4", "kv_format: int4 under llama.cpp: holds fp32, fp16, bf16, q8_0, q4_0 only"),
    ("mlc", "kv_format", "q4_0", "kv_format: q4_0 under mlc: KV formats not read; the model's dtype only"),
    ("tgi", "kv_format", "q8_0", "kv_format: q8_0 under tgi: holds fp32, fp16, bf16, fp8 only"),
    ("hf", "kv_format", "int4", "kv_format: int4 under hf: holds fp32, fp16, bf16 only"),
    ("torch", "kv_format", "fp8", "kv_format: fp8 under torch: holds fp32, fp16, bf16 only"),
    ("gpt-fast", "kv_dtype", "fp8", "kv_dtype: fp8 under gpt-fast: holds fp32, fp16, bf16 only"),
]


@pytest.mark.parametrize("engine, option, value, line", KV_REFUSED)
def test_a_kv_cache_the_engine_cannot_hold_is_refused(cli, engine, option, value, line):
    """One line naming the option and value, exit 2, from the command line and from Python alike."""
    r = cli(["count", "llama3.2-3b", "--gpu", "h100-sxm", "--engine", engine, f"--{option.replace('_', '-')}", value])
    assert (r.code, r.out, r.err) == (2, "", f"symllm: error: {line}\n")
    with pytest.raises(symllm.SymllmError) as info:
        symllm.workload("llama3.2-3b", engine=engine, **{option: value}, **WORKLOAD)
    assert str(info.value) == line


def test_every_inference_engine_states_its_kv_caches():
    """Each inference engine's entry lists the KV caches it holds by option (null: not read), with its source."""
    for name, entry in figures.data()["engines"].items():
        if name != "about" and entry["kind"] == "inference":
            held = entry["kv_formats"]
            assert entry["kv_formats_source"] and (held is None or set(held) == {"kv_format", "kv_dtype"}), name


@pytest.mark.parametrize("engine, options", [
    ("lmdeploy", {"kv_format": "int8"}), ("lmdeploy", {"kv_format": "int4"}), ("llama.cpp", {"kv_format": "q8_0"}),
    ("llama.cpp", {"kv_format": "q4_0"}), ("vllm", {"kv_format": "fp8"}), ("sglang", {"kv_dtype": "fp8"}),
    ("tgi", {"kv_format": "fp8"}), ("trtllm", {"kv_dtype": "int8"}), ("trtllm", {"kv_format": "fp8"}),
    ("mlc", {"kv_dtype": "fp16"}), ("hf", {"kv_format": "bf16"}), ("vllm", {"kv_format": "int8_per_token_head"}),
    ("vllm", {"kv_format": "fp8_per_token_head"}), ("vllm", {"kv_format": "int4_per_token_head"}),
    ("vllm", {"kv_format": "nvfp4"}), ("trtllm", {"kv_format": "nvfp4"})])
def test_a_kv_cache_the_engine_holds_is_counted(engine, options):
    """Accepted where its source lists it (efficiency.json kv_formats_source), and counted at its own bytes: the
    3B model's 28 layers x 8 KV heads x 128 wide, K and V, over 1,024 tokens, times the format's bytes an element
    by hand (fp8 and TensorRT-LLM's int8, one scale a layer: 1; q8_0: 34 bytes a block of 32; q4_0: 18 a block of
    32; lmdeploy's int8: (128 + 4) / 128, int4: (64 + 4) / 128; vLLM 0.33.0's int8 and fp8 per-token-head: a head's
    128 bytes and one fp32 scale, (128 + 4) / 128, int4: (64 + 4) / 128; NVFP4, vLLM's and TensorRT-LLM's: 64 bytes
    of E2M1 pairs and 128 / 16 = 8 E4M3 scales a head, (64 + 8) / 128; fp16, bf16: 2)."""
    per = {("kv_format", "int8"): Fraction(132, 128), ("kv_format", "int4"): Fraction(68, 128),
           ("kv_format", "int8_per_token_head"): Fraction(132, 128),
           ("kv_format", "fp8_per_token_head"): Fraction(132, 128),
           ("kv_format", "int4_per_token_head"): Fraction(68, 128), ("kv_format", "nvfp4"): Fraction(72, 128),
           ("kv_format", "q8_0"): Fraction(34, 32), ("kv_format", "q4_0"): Fraction(18, 32), ("kv_dtype", "int8"): 1,
           "fp8": 1, "fp16": 2, "bf16": 2}
    (option, value), = options.items()
    card = {"gpu": "b200"} if engine == "trtllm" and value == "nvfp4" else WORKLOAD  # (its NVFP4 cache: sm 10 only)
    kv = symllm.workload("llama3.2-3b", engine=engine, seq=1024, **options, **card)["memory"]["kv_cache"]
    assert kv == 2 * 28 * 8 * 128 * 1024 * per.get((option, value), per.get(value))


def test_llamacpp_q8_0_kv_bytes_a_token_by_hand():
    """llama.cpp's q8_0 K and V rows (n_embd_k_gqa = 8 x 128 = 1,024 elements a layer, src/llama-kv-cache-unified.cpp)
    are 32 blocks of 32 int8 and one fp16 scale: 32 x 34 = 1,088 bytes; a token of the 28 layers' K and V holds
    2 x 28 x 1,088 = 60,928 bytes."""
    one = symllm.workload("llama3.2-3b", engine="llama.cpp", seq=1, kv_format="q8_0", **WORKLOAD)["memory"]
    assert one["kv_cache"] == 60928


def test_no_engine_checks_no_kv_cache():
    """Without --engine no engine's KV caches are checked (as fp8 matmuls are not): every format is counted (one held
    on some cards only, nvfp4, is checked against the card: tests/test_card_caps.py)."""
    for fmt in ("q8_0", "int8", "fp8"):
        symllm.workload("llama3.2-3b", kv_format=fmt, **WORKLOAD)


def test_sweep_and_plan_refuse_a_kv_cache_as_count_does(cli):
    """The check lives in checks.CHECKS: a sweep (command line and Python) and plan give count's line."""
    from symllm.studies.sweeps import Sweep
    line = "kv_format: int8 under trtllm; int8 is --kv-dtype int8"
    r = cli(["sweep", "--base", "llama3.2-3b", "--seq", "512,1024", "--engine", "trtllm", "--kv-format", "int8"])
    assert (r.code, r.err) == (2, f"symllm: error: {line}\n")
    with pytest.raises(symllm.SymllmError) as info:
        Sweep("llama3.2-3b", {"seq": [512, 1024]}, workload={"engine": "trtllm", "kv_format": "int8"})
    assert str(info.value) == line
    r = cli(["plan", "llama3.2-3b", "--gpus", "1xh100-sxm", "--engine", "trtllm", "--kv-format", "int8"])
    assert (r.code, r.err) == (2, f"symllm: error: {line}\n")
    assert cli(["plan", "llama3.2-3b", "--gpus", "1xh100-sxm", "--engine", "lmdeploy", "--kv-format", "int8"]).code == 0


@pytest.mark.parametrize("engine, fmt, per_token", [
    ("vllm", "nvfp4", 32 * 8 * 2 * (64 + 8)), ("trtllm", "nvfp4", 32 * 8 * 2 * (64 + 8)),
    ("vllm", "int8_per_token_head", 32 * 8 * 2 * (128 + 4)), ("vllm", "fp8_per_token_head", 32 * 8 * 2 * (128 + 4)),
    ("vllm", "int4_per_token_head", 32 * 8 * 2 * (64 + 4))])
def test_serving_capacity_holds_a_new_format_at_its_bytes(cli, engine, fmt, per_token):
    """count --serve sizes the cache in the format's bytes a token, by hand for Llama-3.1-8B (32 layers x 8 KV heads,
    K and V, a head of 128: NVFP4 64 bytes of values + 8 scales; int8/fp8 per-token-head 128 + one fp32 scale; int4
    64 + 4): 36,864, 67,584 and 34,816 bytes a token; the same KV memory holds its blocks of them."""
    from symllm.costs import serving
    r = serving.capacity("llama3.1-8b", gpu="b200", seq=8192, kv_format=fmt, engine=engine)
    assert r["kv_bytes_per_token"] == per_token
    assert r["blocks"] == r["kv_cache_bytes"] // (r["block_size"] * per_token)
    out = cli(["count", "llama3.1-8b", "--gpu", "b200", "--serve", "--engine", engine, "--kv-format", fmt])
    assert out.code == 0 and f"{per_token:,} bytes a token" in out.out


def test_a_per_token_head_format_on_a_latent_cache():
    """vLLM's MLA backends store a latent row (kv_lora_rank 512 + RoPE 64) and both fp32 scales after it
    (MLACommonBackend.customize_spec: head_size, half for int4, + 2 x 4 bytes): DeepSeek-V2-Lite's 27 layers hold
    27 x (576 + 8) = 15,768 bytes a token in int8_per_token_head, 27 x (288 + 8) = 7,992 in int4_per_token_head."""
    from symllm.costs import serving
    for fmt, per_token in (("int8_per_token_head", 27 * (576 + 8)), ("int4_per_token_head", 27 * (288 + 8))):
        assert serving.capacity("deepseek-v2-lite", gpu="h100-sxm", seq=4096, kv_format=fmt)["kv_bytes_per_token"] \
            == per_token
