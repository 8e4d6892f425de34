"""What an engine can run (issue 40: never a silently wrong number): a workload its engine cannot run is refused in
one line naming the field, the value and the engine (exit 2; SymllmError from Python), never timed as if it could.

- FP8 GEMMs (``--compute-dtype fp8``): ggml, llama.cpp's tensor library, has no FP8 type at all (gguf-py's
  ``GGMLQuantizationType``, the GGUF file types, checked below against the installed gguf package), so its
  matmuls never run at a card's FP8 peak; pytorch-labs/gpt-fast has int8 and int4 weight-only modes only; MLC's
  FP8 kernels were not read. vLLM, SGLang, TensorRT-LLM, lmdeploy, TGI and transformers run FP8 weights and
  activations (efficiency.json ``engines``' ``fp8_gemm_source``).
- llama.cpp splits a model over GPUs by layers by default (``--split-mode layer``): each GPU holds a run of
  whole layers and a token goes through them in turn, which is ``--pp``, not tensor parallelism.
"""
from __future__ import annotations

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
