"""Serving's refusals that depend on the options alone come before anything is computed
(symllm.costs.serving.check): the command line calls it before the workload, capacity before its profile run.

Each case is an input vLLM's model or symllm's does not take (no GPU, pipeline parallelism, a DeepSeek-V4 cache
format vLLM has no kernel for, a width its DeepSeek-V4 kernels do not take, a vLLM option out of range); the test
spies on the workload's computation (symllm.studies.quick.workload, quick.evaluator, symllm.costs.phases.workload)
and asserts it never ran, and that the error is one line naming the field."""
import json

import pytest

from symllm.costs import phases, serving
from symllm.errors import SymllmError
from symllm.studies import quick

from .test_dsv4 import FLASH_BASE


@pytest.fixture
def no_workload(monkeypatch):
    """Every way ``count`` computes a workload, replaced by a spy that records the call and fails."""
    calls = []

    def spy(name):
        def computed(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name} ran before the refusal")
        return computed
    monkeypatch.setattr(quick, "workload", spy("quick.workload"))
    monkeypatch.setattr(quick, "evaluator", spy("quick.evaluator"))
    monkeypatch.setattr(phases, "workload", spy("phases.workload"))
    return calls


FLASH = ["deepseek-v4-flash-base", "--gpu", "h200", "--tp", "8", "--seq", "131072", "--serve"]


@pytest.mark.parametrize("argv, line", [
    (FLASH + ["--kv-format", "q8_0"],
     "kv_dtype: q8_0; vLLM caches DeepSeek-V4 in fp8 (FlashMLA's fp8_ds_mla) or bf16 only"),
    (FLASH + ["--kv-dtype", "bf16"], "kv_dtype: bf16; on h200 vLLM caches DeepSeek-V4 in fp8 only (bf16: b200, gb200)"),
    # a hybrid's states are read from the config's every layer, not a pipeline stage's share: refused, not halved
    (["qwen3-next-80b-a3b", "--gpu", "h100-sxm", "--pp", "2", "--serve"],
     "pp: 2; serving reads the recurrent states of every layer, not a stage's"),
    (["deepseek-v3.2", "--gpu", "h200", "--tp", "8", "--pp", "2", "--serve"],
     "pp: 2; serving reads the indexer keys of every layer, not a stage's"),
    (["llama3.1-8b", "--seq", "4096", "--serve"],
     "serve: give the GPU (--gpu NAME, or --gpu-memory, -bandwidth and -flops)"),
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--gpu-memory-utilization", "1.5"],
     "gpu_memory_utilization: got 1.5; vllm's gpu_memory_utilization is in (0, 1]"),
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", "lmdeploy", "--gpu-memory-utilization", "1"],
     "gpu_memory_utilization: got 1.0; lmdeploy's cache_max_entry_count is in (0, 1)"),
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", "llama.cpp", "--gpu-memory-utilization", "0.5"],
     "gpu_memory_utilization: got 0.5; llama.cpp sizes its KV cache by the context"),
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", "megatron"],
     "engine: megatron trains only; serving takes an inference engine (docs/serving.md)"),
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--max-num-batched-tokens", "0"], "max_num_batched_tokens"),
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--non-torch-memory", "nan"],
     "non_torch_memory: expected GiB, 0 or more, got nan"),  # was a traceback (Fraction('nan'))
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--non-torch-memory", "-1"],
     "non_torch_memory: expected GiB, 0 or more, got -1"),  # was "non_torch: ... above -1, got Fraction(...)"
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--non-torch-memory", "inf"],
     "non_torch_memory: expected GiB, 0 or more, got inf"),
    (["llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--block-size", "0"], "block_size"),
    (["llama3.1-8b", "--seq", "4096", "--block-size", "32"],
     "block_size: applies to --serve (the --engine's KV cache) only"),
    (["llama3.1-8b", "--seq", "4096", "--concurrency", "4"], "concurrency: serving under load applies to --serve"),
])
def test_count_refuses_before_the_workload(cli, no_workload, argv, line):
    """count --serve with an option serving refuses: exit 2, the one line naming the field, and no workload
    computed (the spies recorded no call)."""
    out = cli(["count", *argv])
    assert out.code == 2, out.out
    err = out.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("symllm: error: ") and line in err[0], out.err
    assert no_workload == []


FRACTIONS = [(e, v) for e in ("vllm", "vllm-v0", "sglang", "trtllm", "lmdeploy", "tgi") for v in ("1.5", "0")]


@pytest.mark.parametrize("engine,value", FRACTIONS + [(e, None) for e in
                                                      ("megatron", "torchtitan", "llm-foundry", "deepspeed", "nemo")])
def test_a_serving_refusal_is_read_whole(cli, no_workload, engine, value):
    """Each engine's refusal of a fraction, and a training engine's of serving, fits the terminal's 100 columns
    whole: the command line cuts a longer line to '...', which lost the option that bounds the fraction."""
    given = [] if value is None else ["--gpu-memory-utilization", value]
    out = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", engine, *given])
    err = out.err.strip().splitlines()
    assert out.code == 2 and len(err) == 1 and len(err[0]) <= 100 and not err[0].endswith("..."), out.err
    assert err[0].endswith(("(docs/serving.md)", "(0, 1]", "(0, 1)")), err[0]


def test_a_width_deepseek_v4_kernels_do_not_take_is_refused_before_the_workload(cli, no_workload, tmp_path):
    """A DeepSeek-V4 config whose attention is 256 wide (vLLM's kernels take 512): refused from the config alone."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**FLASH_BASE, "head_dim": 256}))
    out = cli(["count", str(path), "--gpu", "h200", "--tp", "8", "--serve", "--kv-format", "fp8"])
    assert out.code == 2 and no_workload == []
    assert out.err.strip() == "symllm: error: head_dim: 256; vLLM's DeepSeek-V4 kernels take 512 only (serve)"


def test_capacity_refuses_before_its_profile_run():
    """The library's capacity checks the same way: its ``evaluate`` (the profile run) is never called."""
    calls = []
    with pytest.raises(SymllmError, match=r"^serve: give the GPU"):
        serving.capacity("llama3.1-8b", pp=2, evaluate=calls.append)
    with pytest.raises(SymllmError, match=r"^kv_dtype: q4_0; vLLM caches DeepSeek-V4 in fp8"):
        serving.capacity(FLASH_BASE, gpu="h200", kv_format="q4_0", evaluate=calls.append)
    assert calls == []


def test_check_passes_what_capacity_serves():
    """What capacity serves passes the check, which returns the workload, the GPU and the config it read."""
    work, gpu, cfg = serving.check("llama3.1-8b", gpu="h100-sxm", tp=2, seq=4096)
    assert (work.tp, work.seq, cfg.n_layers) == (2, 4096, 32) and gpu.name == "h100-sxm"
