"""What a card can run (issue 40, bad input never gives a silently wrong number): each catalogue card's CUDA compute
capability (gpus.json ``sm``), and an NVFP4 KV cache refused, in one line naming the field and value, exit 2, on the
cards and models its engine does not run it on (efficiency.json ``kv_format_sm``, ``kv_formats_no_mla``), at every
door: count, count --serve, plan and the Python API.

Expectations are written by hand from the sources: the compute capabilities from NVIDIA's CUDA GPUs table
(https://developer.nvidia.com/cuda-gpus, read 2026-11-29); which cards and models an engine holds an nvfp4 cache on
from vLLM 0.33.0's wheel (vllm/v1/attention/backends/flashinfer.py: ``_nvfp4_kv_on_fa2`` on compute capability 8.x,
9.x and 12.x, trtllm-gen on 10.x, head size 64 refused on 8.x, 9.x and 12.x; no MLA backend lists nvfp4) and
TensorRT-LLM issue #10241 (NVFP4 KV in trtllm-gen on SM10X only)."""
from __future__ import annotations

import pytest

import symllm
from symllm.costs import accelerators
from symllm.errors import SymllmError

#: NVIDIA's CUDA GPUs table, by hand: the compute capability of each catalogue card's chip
CAPABILITY = {"h100-sxm": "9.0", "h100-pcie": "9.0", "h100-nvl": "9.0", "h100-sxm-hbm2e": "9.0", "h200": "9.0",
              "b200": "10.0", "gb200": "10.0", "a100-40gb": "8.0", "a100-80gb": "8.0", "a100-80gb-pcie": "8.0",
              "l40s": "8.9", "l4": "8.9", "a10": "8.6", "a10g": "8.6", "t4": "7.5", "rtx3090": "8.6",
              "rtx4090": "8.9", "rtx5090": "12.0"}


def test_each_card_states_its_compute_capability():
    """Every NVIDIA card its chip's compute capability; AMD's and Apple's none (not CUDA cards)."""
    for name in accelerators.names():
        expected = CAPABILITY.get(name)
        assert accelerators.gpu(name).sm == expected, name
        if expected is None:
            assert name.startswith(("mi", "apple")), name


#: (model, options, the line) refused, by hand from the engines' sources above
REFUSED = [
    ("llama3.1-8b", ["--gpu", "h100-sxm", "--engine", "trtllm"],
     "kv_format: nvfp4 under trtllm: h100-sxm is sm 9.0; it needs sm 10"),
    ("llama3.1-8b", ["--gpu", "rtx5090", "--engine", "trtllm"],
     "kv_format: nvfp4 under trtllm: rtx5090 is sm 12.0; it needs sm 10"),
    ("llama3.1-8b", ["--gpu", "t4", "--dtype", "fp16", "--engine", "vllm"],
     "kv_format: nvfp4 under vllm: t4 is sm 7.5; it needs sm 8, 9, 10 or 12"),
    ("llama3.1-8b", ["--gpu", "mi300x", "--engine", "vllm"],
     "kv_format: nvfp4 under vllm: mi300x is not a CUDA card; it needs sm 8, 9, 10 or 12"),
    ("llama3.2-1b", ["--gpu", "h100-sxm", "--engine", "vllm"],  # heads 64 wide: FA2's prefill misreads them
     "kv_format: nvfp4 under vllm: h100-sxm is sm 9.0; it needs sm 10 at head width 64"),
    ("deepseek-v2-lite", ["--gpu", "b200", "--engine", "vllm"],  # an MLA latent: no MLA backend lists nvfp4
     "kv_format: nvfp4 under vllm: its MLA backends hold none (deepseek-v2-lite is MLA)"),
    ("llama3.1-8b", ["--gpu", "t4", "--dtype", "fp16"],  # no engine: none of those holding it runs it on a T4
     "kv_format: nvfp4 (vllm, trtllm): t4 is sm 7.5; it needs sm 8, 9, 10 or 12"),
    ("llama3.1-8b", ["--gpu-memory", "24", "--gpu-bandwidth", "1000", "--gpu-flops", "100", "--engine", "vllm"],
     "kv_format: nvfp4 under vllm: custom has no known sm; it needs sm 8, 9, 10 or 12"),
]


@pytest.mark.parametrize("model, options, line", REFUSED)
def test_an_nvfp4_cache_a_card_or_model_cannot_hold_is_refused_at_every_door(cli, model, options, line):
    for argv in (["count", model, *options], ["count", model, *options, "--serve"]):
        r = cli([*argv, "--kv-format", "nvfp4"])
        assert (r.code, r.err, r.out) == (2, f"symllm: error: {line}\n", "")
    if "--gpu" in options:
        at = options.index("--gpu")
        plan = [*options[:at], "--gpus", f"2x{options[at + 1]}", *options[at + 2:]]
        r = cli(["plan", model, *plan, "--kv-format", "nvfp4"])
        assert (r.code, r.err) == (2, f"symllm: error: {line}\n")
    kwargs = {options[i].lstrip("-").replace("-", "_"): options[i + 1] for i in range(0, len(options), 2)}
    kwargs = {k: int(v) if v.isdigit() else v for k, v in kwargs.items()}  # (the custom card's figures: numbers)
    with pytest.raises(SymllmError) as e:
        symllm.workload(model, kv_format="nvfp4", **kwargs)
    assert str(e.value) == line


@pytest.mark.parametrize("model, gpu, engine", [
    ("llama3.1-8b", "h100-sxm", "vllm"),  # vLLM 0.33.0's FlashInfer FA2 path on 9.x
    ("llama3.1-8b", "a100-80gb", "vllm"), ("llama3.1-8b", "rtx5090", "vllm"),  # 8.x, 12.x
    ("llama3.2-1b", "b200", "vllm"),  # heads of 64 on 10.x (trtllm-gen)
    ("llama3.1-8b", "b200", "trtllm"), ("llama3.1-8b", "h100-sxm", None)])  # no engine: vLLM runs it
def test_an_nvfp4_cache_a_card_holds_is_counted(cli, model, gpu, engine):
    options = ["--gpu", gpu, *(["--engine", engine] if engine else []), "--kv-format", "nvfp4"]
    r = cli(["count", model, *options, "--serve"])
    assert r.code == 0, r.err
    assert symllm.workload(model, gpu=gpu, engine=engine, kv_format="nvfp4")["workload"]["kv_format"] == "nvfp4"


def test_other_caches_and_mla_models_pass_as_before(cli):
    """fp8 on a T4 under vLLM and an nvfp4 cache on an MLA model without a card or under TensorRT-LLM's B200 are not
    this check's (the formats' own check, and TensorRT-LLM's MLA caches, not read, stay as they were)."""
    assert cli(["count", "llama3.1-8b", "--gpu", "t4", "--dtype", "fp16", "--engine", "vllm", "--kv-format",
                "fp8"]).code == 0
    assert cli(["count", "deepseek-v2-lite", "--engine", "vllm", "--kv-format", "nvfp4"]).code == 2
    assert cli(["count", "deepseek-v2-lite", "--gpu", "b200", "--engine", "trtllm", "--kv-format", "nvfp4"]).code == 0
