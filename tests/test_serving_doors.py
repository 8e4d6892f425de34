"""Issue 40, one answer for the sequences an engine's KV cache holds: ``count --serve``'s line ("vllm's KV cache
holds N"), ``count --serve --json``, ``plan``'s serving rows and :func:`symllm.costs.serving.capacity` from Python
give one number, for a dense model and a hybrid (per-sequence recurrent states), under vLLM and SGLang, each equal
to the engine's rule worked by hand: the cache's bytes over one sequence's.

The rule, by hand:

* vLLM cuts its pool into blocks of 16 tokens. A dense model's sequences are the tokens those whole blocks hold over
  the context (the "Maximum concurrency for C tokens per request" vLLM logged as ``num_tokens / max_model_len``, the
  figure symllm's serving docstring names). A hybrid gives every sequence one page of recurrent and convolution
  state beside ⌈context / 16⌉ blocks: vLLM's ``FullAttentionSpec.max_memory_usage_bytes`` is
  ``cdiv(max_model_len, block_size) * page_size_bytes`` and ``MambaSpec``'s ``page_size_bytes * (1 +
  num_speculative_blocks)`` (``mamba_cache_mode`` "none", no speculative decoding), summed per request by
  ``get_max_concurrency_for_kv_cache_config`` (vllm-project/vllm, vllm/v1/kv_cache_interface.py and
  vllm/v1/core/kv_cache_utils.py, the code index's copy at 001cabc, read 2026-11-29): the pool over that sequence's
  bytes. symllm reads the state at its own size (no padding to the attention's page: symllm's model, not under test).
* SGLang pages one token at a time (``page_size`` 1); its state is counted in transformers' layout, as
  efficiency.json states none for it (fp32 recurrent state, ``conv_kernel`` columns).

Sizes from the configs: Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json): 32 layers x 8 KV heads x 128, bf16.
Qwen3-Next-80B-A3B (Qwen/Qwen3-Next-80B-A3B-Instruct config.json): 48 layers, every 4th full attention (12), 2 KV
heads of 256 (on 4 tensor ranks: one a rank, replicated), and 36 Gated DeltaNet layers of 32 value heads and 16 key
heads of 128, ``linear_conv_kernel_dim`` 4: a convolution of 2 x 16 x 128 + 32 x 128 = 8,192 channels, split over
the 4 ranks with the heads.
"""
import json
import math
import re
from functools import lru_cache

import pytest

from symllm.costs import serving
from symllm.errors import SymllmError
from symllm.studies import plans

from .test_one_answer import _number
from .test_startup import _python




#: Llama-3.1-8B on one H100 at 1,000 + 100 tokens; Qwen3-Next on 4 H200s at 1,000 tokens
CASES = {
    "dense": ("llama3.1-8b", "h100-sxm", 1, {"seq": 1000, "gen": 100}),
    "hybrid": ("qwen3-next-80b-a3b", "h200", 4, {"seq": 1000}),
}


def _per_token(kind: str) -> int:
    """A token's keys and values on tensor rank 0, bf16."""
    return 2 * 32 * 8 * 128 * 2 if kind == "dense" else 12 * 2 * 1 * 256 * 2


def _state(kind: str, engine: str) -> int:
    """A sequence's recurrent and convolution states on tensor rank 0 (the heads over 4 ranks): vLLM's in the
    model's bf16 and ``conv_kernel - 1`` = 3 columns (vLLM's mamba_utils.gated_delta_net_state_shape and its "auto"
    mamba_ssm_cache_dtype), SGLang's as transformers' cache holds them (fp32 state, 4 columns)."""
    if kind == "dense":
        return 0
    ssm_bytes, columns = (2, 3) if engine == "vllm" else (4, 4)
    return 36 * (32 * 128 * 128 * ssm_bytes + columns * 8192 * 2) // 4


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_every_door_holds_the_same_sequences(cli, kind, engine):
    """The pool's bytes (the engine's rule over count --serve --json's parts: vLLM ``⌊0.9 x memory⌋`` less weights,
    activation peak and non-torch memory; SGLang ``mem_fraction_static x (memory - non-torch)`` less the weights,
    in whole bytes) in whole sequences (module docstring): what count's line says, what the JSON's
    ``max_concurrency`` holds whole, what plan keeps and what serving.most_sequences reads from Python. Before, the
    line read the concurrency and plan the tokens over the context: a hybrid's states were left out of the latter
    (3,924 sequences of Qwen3-Next under vLLM against the line's 3,892)."""
    model, gpu, tp, work = CASES[kind]
    argv = ["count", model, "--gpu", gpu, "--tp", str(tp), "--engine", engine]
    for key, value in work.items():
        argv += [f"--{key}", str(value)]
    s = json.loads(cli([*argv, "--serve", "--json"]).out)["serving"]
    context = sum(work.values())
    assert s["context"] == context and _number(s["kv_bytes_per_token"]) == _per_token(kind)
    assert s.get("state_bytes_per_sequence", 0) == _state(kind, engine)
    util = _number(s["gpu_memory_utilization"])
    if engine == "vllm":
        pool = math.floor(util * s["memory"]) - s["weights"] - _number(s["activation_peak"]) - _number(s["non_torch"])
        tokens = -(-context // 16) * 16  # whole blocks of 16
    else:
        pool = math.floor(util * (s["memory"] - _number(s["non_torch"]))) - s["weights"]
        tokens = context  # pages of one token
    assert pool == s["kv_cache_bytes"] + s.get("state_cache_bytes", 0)
    if kind == "dense":  # the tokens whole blocks hold, over the context
        block = 16 if engine == "vllm" else 1
        held = pool // (block * _per_token(kind)) * block // context
    else:  # the pool over a sequence's whole blocks and its state
        held = pool // (tokens * _per_token(kind) + _state(kind, engine))
    assert held > 1
    line = " ".join(cli([*argv, "--serve"]).out.split())  # (the table wraps its last column)
    said = re.search(rf"{engine}'s KV cache holds ([\d,]+) \(serving, below\)", line)
    assert said and int(said.group(1).replace(",", "")) == held
    assert math.floor(_number(s["max_concurrency"])) == held
    assert serving.most_sequences(serving.capacity(model, gpu=gpu, tp=tp, engine=engine, **work)) == held
    assert _plan(kind, engine, held + 1).sequences[f"tp {tp}"] == held


@lru_cache(maxsize=None)
def _plan(kind: str, engine: str, concurrency: int):
    """plan of the case on its GPUs, every batch up to ``concurrency`` tried (one plan for both tests)."""
    model, gpu, tp, work = CASES[kind]
    return plans.plan(model, tp, gpu, engine=engine, concurrency=concurrency, **work)


@pytest.mark.parametrize("kind, engine", [
    ("dense", "vllm"), ("dense", "sglang"), ("hybrid", "sglang"), ("hybrid", "vllm")])
def test_plans_rows_go_up_to_what_the_engine_holds(kind, engine):
    """plan keeps every batch up to the sequences its engine's cache holds (serving.most_sequences, the test
    above's hand figure), held within the card: its largest row's batch is that number."""
    model, gpu, tp, work = CASES[kind]
    held = serving.most_sequences(serving.capacity(model, gpu=gpu, tp=tp, engine=engine, **work))
    p = _plan(kind, engine, held + 1)
    assert max(r["batch"] for r in p.rows if (r["tp"], r["pp"], r["dp"]) == (tp, 1, 1)) == held


#: workloads count --serve refuses on the card or the model, each with the engine (efficiency.json's entries and
#: their sources): TensorRT-LLM holds an nvfp4 KV cache on sm 10.x only (an H100 is sm 9.0); vLLM's nvfp4 cache on
#: no MLA model (DeepSeek-V2-Lite caches a latent); 3 tensor ranks split Llama-3.1-8B's 8 KV heads; fp8 matmuls under
#: llama.cpp (ggml has no FP8 type)
REFUSED = [
    ("llama3.1-8b", {"gpu": "h100-sxm", "engine": "trtllm", "kv_format": "nvfp4"}),
    ("deepseek-v2-lite", {"gpu": "b200", "engine": "vllm", "kv_format": "nvfp4"}),
    ("llama3.1-8b", {"gpu": "h100-sxm", "tp": 3}),
    ("llama3.1-8b", {"gpu": "h100-sxm", "engine": "llama.cpp", "dtype": "fp8"}),
]


@pytest.mark.parametrize("model, options", REFUSED, ids=["trtllm-nvfp4-h100", "vllm-nvfp4-mla", "tp3", "fp8-llama.cpp"])
def test_serving_from_python_refuses_as_count_serve_does(cli, model, options):
    """serving.capacity from Python refuses what count --serve refuses, in its one line (before, it sized the cache:
    the card's checks ran only in count's workload, and the profile capacity evaluates has no card)."""
    argv = ["count", model, "--seq", "4096", "--serve"]
    for key, value in options.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    done = cli(argv)
    assert done.code == 2 and done.err.startswith("symllm: error: ") and done.err.count("\n") == 1
    with pytest.raises(SymllmError) as refused:
        serving.capacity(model, seq=4096, **options)
    assert f"symllm: error: {refused.value}\n" == done.err


def test_serving_refuses_without_sympy(tmp_path):
    """The refusal comes from the config's numbers (checks.config_fields): a fresh process that asks serving for
    TensorRT-LLM's nvfp4 cache on an H100 is refused without importing SymPy or building a formula, so count --serve
    can check it on its warm path (tests/test_startup.py)."""
    code = ("import sys\nfrom symllm.costs import serving\nfrom symllm.errors import SymllmError\n"
            "try:\n    serving.capacity('llama3.1-8b', gpu='h100-sxm', engine='trtllm', kv_format='nvfp4')\n"
            "except SymllmError as e:\n    print(e)\n"
            "print(sorted(m for m in ('sympy', 'symllm.arch.components') if m in sys.modules))")
    assert _python(code, tmp_path).splitlines() == ["kv_format: nvfp4 under trtllm: h100-sxm is sm 9.0; it needs sm 10", "[]"]
